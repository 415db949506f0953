#!/usr/bin/env python3
"""The runtime status endpoint's cost at a given report rate (docs/benchmarks.md).

  cluster  `trainctl operator --status-server-port` on a test cluster (bench/status_endpoint.sh
           starts a private one): one TrainJob, a token the API server issues for its audience,
           reports POSTed at --rate for --seconds over one keep-alive HTTPS connection (as a
           trainer's client does). Measured: the operator's CPU over the window against an
           idle window of the same length, and its status writes (the writes_total gauge),
           against the reports it accepted.
  local    `trainctl run` of a PyTorchJob whose replica reports at --rate for --seconds through
           the variables the runner gives it. Measured: the runner's CPU against the same job
           sleeping instead, and how many times trainer_status.json was replaced.

Prints Markdown rows. Usage: bench/status_endpoint.py cluster|local [--rate R] [--seconds S]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAINCTL = os.environ.get("TRAINCTL_BIN", os.path.join(REPO, "build/release/trainctl"))
TICK = os.sysconf("SC_CLK_TCK")

# The reporter: paced POSTs over one connection; prints how many went and were accepted.
REPORTER = r"""
import http.client, json, os, ssl, sys, time, urllib.parse
from datetime import datetime, timezone
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
url = urllib.parse.urlsplit(os.environ["KUBEFLOW_TRAINER_SERVER_URL"])
ctx = ssl.create_default_context(cafile=os.environ["KUBEFLOW_TRAINER_SERVER_CA_CERT"])
token = open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read().strip()
conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=10)
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
n = int(rate * seconds); ok = 0; began = time.monotonic()
for i in range(n):
    wait = began + i / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    body = json.dumps({"trainerStatus": {"progressPercentage": i * 100 // n,
        "estimatedRemainingSeconds": int(seconds), "metrics": [{"name": "loss", "value":
        "%.6f" % (1.0 / (i + 1))}], "lastUpdatedTime": datetime.now(timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")}})
    conn.request("POST", url.path, body=body, headers=headers)
    r = conn.getresponse(); r.read(); ok += r.status == 200
took = time.monotonic() - began
print("REPORTED", json.dumps({"sent": n, "ok": ok, "seconds": took}), flush=True)
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def reported(text):
    for line in text.splitlines():
        if "REPORTED " in line:
            return json.loads(line.split("REPORTED ", 1)[1])
    raise SystemExit("the reporter printed nothing:\n" + text[-2000:])


def bench_cluster(rate, seconds):
    sys.path.insert(0, os.path.join(REPO, "test", "integration", "operator"))
    from harness import Operator, free_port, get_json, kubectl, wait_for
    kubectl("apply", "--server-side", "--force-conflicts", "-f", os.path.join(REPO, "manifests",
                                                                               "crds"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    ns = "bench-status-" + str(os.getpid())
    kubectl("create", "namespace", ns, check=False)
    port, status_port = free_port(), free_port()
    op = Operator(ns, "--webhook-server-port", str(port), "--status-server-port", str(status_port),
                  "--status-server-url", f"https://127.0.0.1:{status_port}",
                  "--webhook-bind-host", "127.0.0.1", "--webhook-host", "127.0.0.1",
                  "--webhook-config-name", "none", "--mutating-webhook-config-name", "none-m",
                  "--webhook-secret-name", "bench-status-cert", "--leader-election-namespace", ns)
    op.start()
    try:
        kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "bench", "namespace": ns},
            "spec": {"runtimeRef": {"name": "none"}, "suspend": True}}), check=False)
        wait_for("the default service account",
                 lambda: get_json("serviceaccount", "default", "-n", ns) is not None)
        token = kubectl("create", "token", "default", "-n", ns, "--duration=1h",
                        f"--audience=trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/"
                        "bench/status").stdout.strip()
        work = tempfile.mkdtemp()
        secret = wait_for("the webhook certificate", lambda: get_json(
            "secret", "bench-status-cert", "-n", ns))
        import base64
        with open(os.path.join(work, "ca.crt"), "wb") as f:
            f.write(base64.b64decode(secret["data"]["ca.crt"]))
        with open(os.path.join(work, "token"), "w") as f:
            f.write(token)
        env = {**os.environ,
               "KUBEFLOW_TRAINER_SERVER_URL": f"https://127.0.0.1:{status_port}/apis/"
               f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/bench/status",
               "KUBEFLOW_TRAINER_SERVER_CA_CERT": os.path.join(work, "ca.crt"),
               "KUBEFLOW_TRAINER_SERVER_TOKEN": os.path.join(work, "token")}
        time.sleep(2)
        idle0 = cpu_seconds(op.proc.pid)
        time.sleep(seconds)
        idle = cpu_seconds(op.proc.pid) - idle0
        reports0 = op.gauge("trainctl_trainer_status_reports_total")
        writes0 = op.gauge("trainctl_trainer_status_writes_total")
        busy0 = cpu_seconds(op.proc.pid)
        out = subprocess.run([sys.executable, "-c", REPORTER, str(rate), str(seconds)], env=env,
                             capture_output=True, text=True, timeout=seconds * 10 + 60)
        busy = cpu_seconds(op.proc.pid) - busy0
        r = reported(out.stdout + out.stderr)
        time.sleep(1.5)  # the last report's write
        reports = op.gauge("trainctl_trainer_status_reports_total") - reports0
        writes = op.gauge("trainctl_trainer_status_writes_total") - writes0
        last = get_json("trainjobs.trainer.kubeflow.org", "bench", "-n", ns)["status"][
            "trainerStatus"]
        print("| side | reports sent / accepted | achieved rate | CPU over the window "
              "(idle window) | status writes |")
        print("|---|---|---|---|---|")
        print(f"| operator | {r['sent']} / {r['ok']:.0f} ({reports:.0f} counted) | "
              f"{r['sent'] / r['seconds']:.0f}/s over {r['seconds']:.1f} s | "
              f"{100 * busy / r['seconds']:.1f} % of a core ({100 * idle / seconds:.1f} %) | "
              f"{writes:.0f} ({writes / r['seconds']:.2f}/s; last progress "
              f"{last.get('progressPercentage')}) |")
    finally:
        op.stop()
        kubectl("delete", "namespace", ns, "--wait=false", check=False)


JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: {command}
"""


def run_local(state, name, command, watch=None):
    path = os.path.join(state, name + ".yaml")
    with open(path, "w") as f:
        f.write(JOB.format(name=name, command=json.dumps(command)))
    env = {**os.environ, "TRAINCTL_STATE_DIR": state}
    proc = subprocess.Popen([TRAINCTL, "run", "-q", path], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    inodes = set()
    status_file = os.path.join(state, "default", "pytorchjobs", name, "trainer_status.json")
    cpu = 0.0
    while proc.poll() is None:
        try:
            cpu = cpu_seconds(proc.pid)
            inodes.add(os.stat(status_file).st_ino)
        except OSError:
            pass
        time.sleep(0.02)
    out = proc.stdout.read()
    logs = os.path.join(state, "default", "pytorchjobs", name, "logs", f"{name}-master-0.log")
    text = out + (open(logs).read() if os.path.exists(logs) else "")
    return cpu, inodes, text


def bench_local(rate, seconds):
    state = tempfile.mkdtemp()
    base_cpu, _, _ = run_local(state, "idle", ["python3", "-c",
                                               f"import time; time.sleep({seconds})"])
    cpu, inodes, text = run_local(state, "busy",
                                  ["python3", "-c", REPORTER, str(rate), str(seconds)])
    r = reported(text)
    print("| side | reports sent / accepted | achieved rate | runner CPU (sleeping job) | "
          "trainer_status.json replaced |")
    print("|---|---|---|---|---|")
    print(f"| trainctl run | {r['sent']} / {r['ok']} | {r['sent'] / r['seconds']:.0f}/s over "
          f"{r['seconds']:.1f} s | {cpu:.2f} s ({base_cpu:.2f} s) | {len(inodes)} times "
          "(sampled every 20 ms) |")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["cluster", "local"])
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--seconds", type=float, default=10)
    a = p.parse_args()
    (bench_cluster if a.mode == "cluster" else bench_local)(a.rate, a.seconds)


if __name__ == "__main__":
    main()
