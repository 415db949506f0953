#!/usr/bin/env python3
"""Pod start latency on the test cluster's real node (issue #37): for a job of 4 replicas,
the time from the job's creation, and from each pod's scheduling, until each pod runs.

Needs a cluster started with a real node and the operator deployed from manifests/:

  export TRAINCTL_CLUSTER_DIR=/tmp/nodec TRAINCTL_PORT_BASE=29600 TRAINCTL_REAL_NODE=1 TRAINCTL_KWOK_NODES=0
  hack/cluster/up.sh
  hack/cluster/images.sh operator && hack/cluster/node.sh forget-stale
  kubectl apply --server-side -k manifests/     # (the cluster's kubectl and kubeconfig)
  bench/node_pod_start.py --rounds 3

Two shapes, alternating: a PyTorchJob (Master + 3 Workers, whose init-pytorch containers wait
until the Master's name resolves) and a TFJob of 4 Workers (no init container). Every replica
runs busybox `sleep`. Times are taken by this client from a watch (milliseconds), so they
include the watch's delivery: scheduled = the pod's nodeName first seen, running = phase Running
first seen (for a PyTorch Worker that is after its init container). Prints a Markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cluster_kubectl():
    out = subprocess.run(["bash", "-c", f"source {REPO}/hack/cluster/lib.sh; cluster_bin_dir"],
                         check=True, capture_output=True, text=True).stdout.strip()
    state = os.environ.get("TRAINCTL_CLUSTER_DIR", os.path.join(REPO, ".cluster"))
    return [os.path.join(out, "kubectl"), "--kubeconfig", os.path.join(state, "kubeconfig")]


KUBECTL = cluster_kubectl()
IMAGE = "docker.io/library/busybox:" + subprocess.run(
    ["bash", "-c", f"source {REPO}/hack/cluster/lib.sh; echo $BUSYBOX_TAG"],
    check=True, capture_output=True, text=True).stdout.strip()


def kubectl(*args, input=None):
    return subprocess.run([*KUBECTL, *args], input=input, check=True, capture_output=True, text=True)


def replica(count, name):
    return {"replicas": count, "restartPolicy": "Never",
            "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [
                {"name": name, "image": IMAGE, "command": ["sleep", "300"]}]}}}


def job(shape, name):
    if shape == "pytorch":
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
                "spec": {"pytorchReplicaSpecs": {"Master": replica(1, "pytorch"), "Worker": replica(3, "pytorch")}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"tfReplicaSpecs": {"Worker": replica(4, "tensorflow")}}}


def watch_pods(namespace, seen, stop):
    """Records, per pod, when its nodeName and when phase Running were first seen."""
    proc = subprocess.Popen([*KUBECTL, "get", "pods", "-n", namespace, "-w", "-o", "json"],
                            stdout=subprocess.PIPE, text=True)
    decoder, buf = json.JSONDecoder(), ""
    for line in proc.stdout:
        now = time.monotonic()
        buf += line
        try:
            pod, _ = decoder.raw_decode(buf.strip())
        except ValueError:
            continue
        buf = ""
        name = pod["metadata"]["name"]
        entry = seen.setdefault(name, {})
        if pod["spec"].get("nodeName") and "scheduled" not in entry:
            entry["scheduled"] = now
        if pod.get("status", {}).get("phase") == "Running" and "running" not in entry:
            entry["running"] = now
        if stop.is_set():
            break
    proc.kill()


def one_round(shape, namespace, timeout):
    seen, stop = {}, threading.Event()
    watcher = threading.Thread(target=watch_pods, args=(namespace, seen, stop), daemon=True)
    watcher.start()
    time.sleep(1.0)  # the watch is established
    name = f"start-{shape}-{uuid.uuid4().hex[:6]}"
    created = time.monotonic()
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(job(shape, name)))
    deadline = created + timeout
    while time.monotonic() < deadline:
        done = [e for n, e in seen.items() if n.startswith(name) and "running" in e]
        if len(done) == 4:
            break
        time.sleep(0.1)
    stop.set()
    pods = {n: e for n, e in seen.items() if n.startswith(name)}
    kubectl("delete", "-n", namespace, job(shape, name)["kind"].lower(), name, "--wait=false")
    if len(pods) != 4 or any("running" not in e or "scheduled" not in e for e in pods.values()):
        raise SystemExit(f"{name}: not every pod ran within {timeout}s: {pods}")
    return {"all_running": max(e["running"] for e in pods.values()) - created,
            "per_pod": [e["running"] - e["scheduled"] for e in pods.values()]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=180)
    args = ap.parse_args()
    namespace = "podstart-" + uuid.uuid4().hex[:6]
    kubectl("create", "namespace", namespace)
    results = {"pytorch": [], "tensorflow": []}
    try:
        for r in range(args.rounds):
            for shape in results:
                results[shape].append(one_round(shape, namespace, args.timeout))
                print(f"round {r + 1} {shape}: all 4 Running {results[shape][-1]['all_running']:.2f} s",
                      file=sys.stderr)
                time.sleep(3)  # the previous job's pods go away
    finally:
        kubectl("delete", "namespace", namespace, "--wait=false")
    print("| job (4 replicas) | creation → all 4 Running, median (min–max) | scheduled → Running per pod, median (max) |")
    print("|---|---|---|")
    labels = {"pytorch": "PyTorchJob, Master + 3 Workers (init-pytorch)", "tensorflow": "TFJob, 4 Workers"}
    for shape, rounds in results.items():
        total = [x["all_running"] for x in rounds]
        per_pod = [p for x in rounds for p in x["per_pod"]]
        print(f"| {labels[shape]} | {statistics.median(total):.2f} s ({min(total):.2f}–{max(total):.2f}) | "
              f"{statistics.median(per_pod):.2f} s ({max(per_pod):.2f}) |")


if __name__ == "__main__":
    main()
