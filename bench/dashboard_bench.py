#!/usr/bin/python3
"""The dashboard and the job history, measured (docs/benchmarks.md, "Dashboard and history").

1. Writes N finished jobs into a history (bench/history_seed: the write cost per job).
2. Starts `trainctl ui` on it and times the list endpoint and a search, median of 20.
3. Times first paint in Debian's Chromium: from the navigation to the first row on screen.
4. Opens the most event streams `trainctl ui` allows and reads its RSS before and after: memory
   per open stream.

  bench/dashboard_bench.py --trainctl build/release/trainctl --seed build/release/bench/history_seed
"""
import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def timed_get(port, path, cookie):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - start) * 1000
    conn.close()
    if response.status != 200:
        raise SystemExit(f"GET {path}: {response.status} {body[:200]!r}")
    return elapsed, body


def first_paint(url, rounds):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)  # the token becomes a cookie
        times = []
        for _ in range(rounds):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(url.split("?")[0])
            while not driver.find_elements(By.CSS_SELECTOR, "#jobs tbody tr"):
                time.sleep(0.005)
            times.append((time.perf_counter() - start) * 1000)
        rows = len(driver.find_elements(By.CSS_SELECTOR, "#jobs tbody tr"))
        return times, rows
    finally:
        driver.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainctl", default="build/release/trainctl")
    ap.add_argument("--seed", default="build/release/bench/history_seed")
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--tail-bytes", type=int, default=16384)
    ap.add_argument("--streams", type=int, default=16)
    args = ap.parse_args()

    state = tempfile.mkdtemp(prefix="trainctl-dashboard-bench-")
    os.makedirs(state, exist_ok=True)
    seeded = subprocess.run([args.seed, os.path.join(state, "history.db"), str(args.jobs),
                             str(args.tail_bytes)], capture_output=True, text=True, check=True)
    write = json.loads(seeded.stdout)

    env = dict(os.environ, TRAINCTL_STATE_DIR=state)
    ui = subprocess.Popen([args.trainctl, "ui"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    try:
        url = ui.stdout.readline().strip()
        port = int(re.search(r":(\d+)/", url).group(1))
        cookie = "trainctl_ui=" + url.rsplit("=", 1)[1]
        list_ms = [timed_get(port, "/api/v1/jobs", cookie)[0] for _ in range(20)]
        _, body = timed_get(port, "/api/v1/jobs", cookie)
        rows = len(json.loads(body)["items"])
        search_ms = [timed_get(port, "/api/v1/jobs?q=NCCL%20error%209995", cookie)[0]
                     for _ in range(20)]
        paint_ms, painted_rows = first_paint(url, 5)

        before = rss_kib(ui.pid)
        socks = []
        for _ in range(args.streams):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(f"GET /api/v1/stream HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Cookie: {cookie}\r\n\r\n".encode())
            s.recv(65536)  # the headers and the first list
            socks.append(s)
        time.sleep(3)  # every stream polls and builds its list a few times
        after = rss_kib(ui.pid)
        for s in socks:
            s.close()
    finally:
        ui.terminate()
        ui.wait(timeout=20)

    result = {
        "jobs_in_history": args.jobs,
        "record_bytes": write["record_bytes"],
        "history_file_mib": round(write["file_bytes"] / 2**20, 1),
        "write_ms_mean": write["put_ms_mean"],
        "write_ms_p99": write["put_ms_p99"],
        "write_ms_mean_last_1000": write["last_1000_put_ms_mean"],
        "list_rows": rows,
        "list_ms_median": round(statistics.median(list_ms), 1),
        "list_ms_max": round(max(list_ms), 1),
        "search_ms_median": round(statistics.median(search_ms), 1),
        "first_paint_ms_median": round(statistics.median(paint_ms), 0),
        "first_paint_ms_max": round(max(paint_ms), 0),
        "painted_rows": painted_rows,
        "rss_kib_idle": before,
        "rss_kib_per_stream": round((after - before) / args.streams, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
