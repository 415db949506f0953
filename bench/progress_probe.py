"""The measurement behind bench/progress_probe.sh (run that, not this): N one-replica PyTorchJobs
that run forever on kwok (whose fake logs never grow, so every probe finds silence and the
operator keeps probing), each with a progress timeout and policy Warn. For each probe budget the
operator is started, allowed to settle (every job Running), and its pod log requests are counted
from its own metrics over a window."""
import argparse
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "integration", "operator"))
from harness import FOREVER, Operator, get_json, install_crds, kubectl, make_job, wait_for  # noqa: E402


def requests_by(op):
    """{(verb, resource): count} from trainctl_api_requests_total."""
    out = {}
    for line in op.metrics().splitlines():
        if not line.startswith("trainctl_api_requests_total{"):
            continue
        labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.index("}")].split(","))
        key = (labels["verb"].strip('"'), labels["resource"].strip('"'))
        out[key] = out.get(key, 0) + float(line.split()[-1])
    return out


def cpu_seconds(pid):
    """utime + stime of a process, from /proc (the same way for any process)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--window", type=int, default=180)
    p.add_argument("--budgets", default="0,120")
    a = p.parse_args()
    install_crds()
    ns = "probe-bench-" + uuid.uuid4().hex[:6]  # the bench cluster keeps its state between runs
    kubectl("create", "namespace", ns)
    items = []
    for i in range(a.jobs):
        job = make_job("PyTorchJob", f"p{i}", ns, {"Master": (1, FOREVER)})
        job["metadata"]["annotations"] = {"trainctl.dev/progress-timeout-seconds": str(a.timeout)}
        items.append(job)
    for start in range(0, len(items), 200):
        kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": items[start:start + 200]}))
    rows = []
    for budget in [int(b) for b in a.budgets.split(",")]:
        op = Operator(ns, "--progress-probes-per-minute", str(budget), "--kube-api-qps", "500",
                      "--kube-api-burst", "1000", "--controller-threads", "4")
        op.start()
        try:
            def running():
                jobs = (get_json("pytorchjobs", "-n", ns) or {}).get("items", [])
                up = sum(1 for j in jobs if any(c["type"] == "Running" and c["status"] == "True"
                                                for c in j.get("status", {}).get("conditions", [])))
                return up == a.jobs
            wait_for("every job Running", running, timeout=900, interval=2)
            before, cpu0 = requests_by(op), cpu_seconds(op.proc.pid)
            t0 = time.monotonic()
            time.sleep(a.window)
            elapsed = time.monotonic() - t0
            after, cpu1 = requests_by(op), cpu_seconds(op.proc.pid)
        finally:
            op.stop()
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        logs = delta.get(("get", "pods/log"), 0)
        other = sum(v for k, v in delta.items() if k != ("get", "pods/log"))
        rows.append((budget, logs, logs * 60 / elapsed, other * 60 / elapsed,
                     (cpu1 - cpu0) * 60 / elapsed))
    kubectl("delete", "namespace", ns, "--wait=false", check=False)
    period = max(a.timeout / 4, 10)
    print(f"jobs {a.jobs}, timeout {a.timeout} s (probe period {period:.0f} s), window {a.window} s")
    print(f"{'budget/min':>10} {'log GETs':>9} {'per min':>8} {'other requests/min':>19} "
          f"{'operator CPU s/min':>19}")
    for budget, logs, per_min, other, cpu in rows:
        print(f"{budget or 'none':>10} {logs:>9.0f} {per_min:>8.1f} {other:>19.1f} {cpu:>19.2f}")


if __name__ == "__main__":
    main()
