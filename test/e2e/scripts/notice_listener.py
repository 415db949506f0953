"""A replica that waits for trainctl's checkpoint notice (issue #38): it prints a line every
0.2 s, and with its wall time the notice it reads from TRAINCTL_NOTICE_FILE, any SIGUSR1 and
the SIGTERM that stops it. With --report-done it "checkpoints" (writes a file) on the notice and
reports done through TRAINCTL_NOTICE_DONE_FILE. Plain Python: no trainctl import."""
import argparse
import json
import os
import signal
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--report-done", action="store_true")
    parser.add_argument("--seconds", type=float, default=120)
    args = parser.parse_args()

    def on_signal(signum, frame):
        print(f"signal {signal.Signals(signum).name} at {time.time():.3f}", flush=True)
        if signum == signal.SIGTERM:
            sys.exit(143)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGUSR1, on_signal)
    path = os.environ.get("TRAINCTL_NOTICE_FILE", "")
    print(f"notice file {path or '(none)'}", flush=True)
    seen = None
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            text = ""
        if text and text != seen:
            seen = text
            notice = json.loads(text)
            print(f"notice {notice['reason']} stopAt {notice['stopAt']} at {time.time():.3f}",
                  flush=True)
            if args.report_done:
                done = os.environ["TRAINCTL_NOTICE_DONE_FILE"]
                with open(done + ".tmp", "w") as f:
                    f.write("done\n")
                os.replace(done + ".tmp", done)
                print(f"reported done at {time.time():.3f}", flush=True)
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
