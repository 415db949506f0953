#!/usr/bin/env python3
"""Gang restart on the test control plane (issue #38; docs/benchmarks.md, "Gang restart"): the
real `trainctl operator` and a Gang PyTorchJob of N replicas (1 Master running forever, N-1
Workers that kwok fails with exit 1 at a set time). A pod watch, read as the events arrive,
times:

  start    the job's creation → every pod of attempt 0 Running (the floor for N pods here)
  restart  the first pod Failed → every pod of attempt 1 Running (delete N, wait until all are
           gone, create N), with kwok's deletion and start stages as the kubelet

and the operator's API requests for the restart (trainctl_api_requests_total by verb and
resource, scraped when attempt 0 and when attempt 1 are all Running; events not included). Needs a started test cluster (hack/cluster/up.sh;
TRAINCTL_CLUSTER_DIR) and the release build.

Usage: bench/gang_restart_cluster.py [--replicas 8 64]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration", "operator"))
from harness import FOREVER, KUBECONFIG, KUBECTL, Operator, install_crds, json_stream, kubectl, make_job  # noqa: E402

ATTEMPT = "trainctl.dev/restart-attempt"


def requests(op):
    out = {}
    for line in op.metrics().splitlines():
        if line.startswith("trainctl_api_requests_total{"):
            labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.index("}")].split(","))
            key = f"{labels['verb'].strip(chr(34))} {labels['resource'].strip(chr(34))}"
            out[key] = out.get(key, 0) + float(line.split()[-1])
    return out


def one(ns, op, n):
    name = f"gang-{n}"
    fail_at = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=8 + n / 10))
    worker = {"trainctl.dev/kwok-run-seconds": fail_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
              "trainctl.dev/kwok-exit-code": "1"}
    job = make_job("PyTorchJob", name, ns, {"Master": (1, FOREVER), "Worker": (n - 1, worker)},
                   run_policy={"backoffLimit": 1}, restart_policy="OnFailure")
    job["metadata"]["annotations"] = {"trainctl.dev/restart-scope": "Gang"}
    seen = {"running": {0: set(), 1: set()}, "first_failed": None, "all": {}}
    done = threading.Event()
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", KUBECONFIG, "get", "pods", "-n", ns, "-l",
                              f"training.kubeflow.org/job-name={name}", "--watch", "-o", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    before = {}

    def read():
        for pod in json_stream(iter(watch.stdout.readline, "")):
            now = time.monotonic()
            attempt = int(pod["metadata"].get("labels", {}).get(ATTEMPT, "0"))
            phase = pod.get("status", {}).get("phase")
            if phase == "Running" and attempt in seen["running"]:
                seen["running"][attempt].add(pod["metadata"]["name"])
                if len(seen["running"][attempt]) == n and attempt not in seen["all"]:
                    seen["all"][attempt] = now
                    if attempt == 0:
                        seen["requests0"] = requests(op)
                    if attempt == 1:
                        seen["requests"] = requests(op)
                        done.set()
            if phase == "Failed" and attempt == 0 and seen["first_failed"] is None:
                seen["first_failed"] = now
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1)
    before = requests(op)
    t0 = time.monotonic()
    kubectl("create", "-f", "-", input=json.dumps(job))
    if not done.wait(120 + n):
        watch.kill()
        sys.exit(f"{name}: attempt 1 not all Running ({seen})\n{op.log()}")
    watch.kill()
    # The restart's requests: from attempt 0 all Running to attempt 1 all Running.
    base = seen.get("requests0", before)
    delta = {k: v - base.get(k, 0) for k, v in seen["requests"].items() if v - base.get(k, 0) > 0}
    kubectl("delete", "pytorchjob", name, "-n", ns, "--wait=false")
    return {"replicas": n, "start_seconds": round(seen["all"][0] - t0, 2),
            "restart_seconds": round(seen["all"][1] - seen["first_failed"], 2),
            "restart_requests": delta, "restart_requests_total": sum(delta.values())}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicas", type=int, nargs="+", default=[8, 64])
    a = p.parse_args()
    install_crds()
    ns = "gang-bench-" + uuid.uuid4().hex[:6]
    kubectl("create", "namespace", ns)
    op = Operator(ns)
    op.start()
    try:
        for n in a.replicas:
            print(json.dumps(one(ns, op, n), sort_keys=True), flush=True)
    finally:
        op.stop()
        kubectl("delete", "namespace", ns, "--wait=false", check=False)


if __name__ == "__main__":
    main()
