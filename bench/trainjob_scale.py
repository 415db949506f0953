#!/usr/bin/python3
"""TrainJobs at scale on the real JobSet controller, side by side (bench/operator_scale.sh
--kind trainjob): `trainctl operator`, upstream Trainer v2.3.0's controller manager built
unmodified (hack/upstream/build.sh --trainer, run by hack/upstream/trainer.sh) and the floor (the
same JobSets created directly, no TrainJob), one after the other on one private cluster with kwok
nodes (TRAINCTL_JOBSET=1 hack/cluster/up.sh; state in build/release/trainjob-bench-cluster, port
base 30100).

    trainjob_scale.py [--impl trainctl,trainer,floor] [--jobs 50] [--nodes 4] [--run-seconds 60]
                      [--qps 50] [--burst 100] [--threads 5]

Each side gets a namespace of its own with a TrainingRuntime like upstream's torch-distributed
(one replicated job "node", kwok runs its pods --run-seconds) and --jobs TrainJobs of --nodes
nodes each, submitted at once by 8 threads as the cluster's administrator. The floor creates the
JobSets the first operator side made (their metadata and status left out), as its identity. The
same client budget for both operators: upstream's Configuration is qps 50, burst 100 and 5
concurrent TrainJob reconciles; trainctl gets --kube-api-qps, --kube-api-burst and
--controller-threads of the same values. Trainer's webhooks are on (as installed upstream, the
API server calls them for every TrainJob and runtime; their work is in its CPU); trainctl serves
no TrainJob webhook here.

Reported per side: seconds from the first submission until every pod exists, is Running, and has
Succeeded, and (operators) until every TrainJob is Complete (pods polled every 0.5 s, TrainJobs
every 2 s); the operator's peak RSS (VmHWM) and CPU seconds from /proc/<pid> (from its start,
its initial lists included); its writes (create, update, patch, delete) from the API server's
audit log, per job and by resource. Each operator writes as an identity of its own: Trainer as
upstream's service account (hack/upstream/trainer.sh), trainctl and the floor as
trainctl-bench-operator (a client certificate in group system:masters).
"""

import argparse
import base64
import collections
import concurrent.futures
import copy
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.path.join(ROOT, "build/release/trainjob-bench-cluster")
PORT_BASE = "30100"
ENV = {**os.environ, "TRAINCTL_CLUSTER_DIR": STATE, "TRAINCTL_PORT_BASE": PORT_BASE}
TRAINER_USER = "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager"
BENCH_USER = "trainctl-bench-operator"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
JOBSET = "/apis/jobset.x-k8s.io/v1alpha2"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(script, check=True):
    """bash with hack/cluster/lib.sh sourced for this cluster; its stdout."""
    out = subprocess.run(["bash", "-c", f"set -euo pipefail; source {ROOT}/hack/cluster/lib.sh; "
                          f"STATE={STATE}; PKI=$STATE/pki; {script}"],
                         env=ENV, stdout=subprocess.PIPE, text=True, check=check)
    return out.stdout.strip()


class Api:
    """Plain HTTPS to the API server with a kubeconfig's client certificate (one per thread)."""

    def __init__(self, kubeconfig):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        self.host = cluster["server"].removeprefix("https://")
        self.ctx = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        self.ctx.load_cert_chain(self._file(user, "client-certificate"), self._file(user, "client-key"))
        self.local = threading.local()

    @staticmethod
    def _file(entry, key):
        if key in entry:
            return entry[key]
        fd, path = tempfile.mkstemp(prefix="trainjob-bench-")
        os.write(fd, base64.b64decode(entry[key + "-data"]))
        os.close(fd)
        return path

    def request(self, method, path, body=None):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=60)
        data = None if body is None else json.dumps(body)
        try:
            conn.request(method, path, data, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            payload = resp.read()
        except (OSError, http.client.HTTPException):
            self.local.conn = None
            raise
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {payload[:300]!r}")
        return json.loads(payload) if payload else {}


def runtime(ns, run_seconds):
    pod_meta = {"labels": {"training.kubeflow.org/job-name": "trainjob"},
                "annotations": {"trainctl.dev/kwok-run-seconds": str(run_seconds)}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
            "metadata": {"name": "torch", "namespace": ns,
                         "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
                "replicatedJobs": [{"name": "node", "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"metadata": pod_meta, "spec": {"containers": [
                        {"name": "node", "image": "example.invalid/torch:1",
                         "command": ["torchrun", "train.py"]}]}}}}}]}}}}


def trainjob(name, ns, nodes):
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runtimeRef": {"name": "torch", "kind": "TrainingRuntime"},
                     "trainer": {"numNodes": nodes}}}


def proc_figures(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return cpu, hwm / 1024


def audit_writes(path, offset, user, ns):
    by_resource = collections.Counter()
    with open(path) as f:
        f.seek(offset)
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ref = e.get("objectRef", {})
            if (e.get("user", {}).get("username") != user or e.get("verb") not in WRITES
                    or ref.get("resource") == "leases" or ref.get("namespace") not in (ns, None)):
                continue
            sub = "/" + ref["subresource"] if ref.get("subresource") else ""
            by_resource[f"{e['verb']} {ref.get('resource')}{sub}"] += 1
    return by_resource


def wait_for(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise SystemExit(f"timed out after {timeout}s waiting for {what}")


class Bench:

    def __init__(self, a):
        self.a = a
        self.kubectl = sh("echo $(cluster_bin_dir)/kubectl") + f" --kubeconfig {STATE}/kubeconfig"
        self.admin = Api(f"{STATE}/kubeconfig")
        self.bench = Api(f"{STATE}/config/trainctl-bench.kubeconfig")
        self.audit = f"{STATE}/audit.log"
        self.jobsets = None  # the first operator side's, for the floor

    def k(self, *args, check=True):
        return subprocess.run(self.kubectl.split() + list(args), env=ENV, check=check,
                              stdout=subprocess.PIPE, text=True).stdout

    def pods(self, ns):
        items = self.admin.request("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        phases = collections.Counter(p.get("status", {}).get("phase") for p in items)
        return len(items), phases["Running"] + phases["Succeeded"], phases["Succeeded"]

    def complete(self, ns):
        items = self.admin.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs")["items"]
        return sum(any(c["type"] == "Complete" and c["status"] == "True"
                       for c in j.get("status", {}).get("conditions", [])) for j in items)

    def submit(self, client, path, docs):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for f in [pool.submit(client.request, "POST", path, d) for d in docs]:
                f.result()

    def measure(self, ns, start, operator):
        a, want = self.a, self.a.jobs * self.a.nodes
        t = {}
        last_jobs = 0
        while time.monotonic() - start < 3600:
            created, running, succeeded = self.pods(ns)
            now = time.monotonic() - start
            if created >= want:
                t.setdefault("created", now)
            if running >= want:
                t.setdefault("running", now)
            if succeeded >= want:
                t.setdefault("succeeded", now)
            if operator and "running" in t and now - last_jobs >= 2:
                last_jobs = now
                if self.complete(ns) >= a.jobs:
                    t.setdefault("complete", now)
            if "succeeded" in t and (not operator or "complete" in t):
                return t
            time.sleep(0.5)
        return t

    def run(self, impl):
        a, ns = self.a, f"tj-{impl}"
        self.k("create", "namespace", ns)
        proc = None
        if impl == "trainer":
            subprocess.run([f"{ROOT}/hack/upstream/trainer.sh", "up"], env=ENV, check=True)
            with open(f"{STATE}/run/trainer-controller-manager.pid") as f:
                pid, user = int(f.read()), TRAINER_USER
        elif impl == "trainctl":
            # trainctl's CRDs (its v1 kinds too: it serves TrainJobs beside them).
            self.k("apply", "--server-side", "--force-conflicts", "-f", f"{ROOT}/manifests/crds")
            self.k("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
            logf = open(f"{STATE}/logs/trainctl-operator.log", "a")
            health = int(PORT_BASE) + 97
            proc = subprocess.Popen(
                [f"{ROOT}/build/release/trainctl", "operator", "--kubeconfig",
                 f"{STATE}/config/trainctl-bench.kubeconfig", "--namespace", ns,
                 "--metrics-bind-address", f"127.0.0.1:{int(PORT_BASE) + 96}",
                 "--health-probe-bind-address", f"127.0.0.1:{health}",
                 "--kube-api-qps", str(a.qps), "--kube-api-burst", str(a.burst),
                 "--controller-threads", str(a.threads)], stdout=logf, stderr=subprocess.STDOUT)
            logf.close()
            wait_for("trainctl operator's readyz", lambda: subprocess.run(
                ["curl", "-fsS", f"http://127.0.0.1:{health}/readyz"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0 or proc.poll() is not None, 60)
            if proc.poll() is not None:
                raise SystemExit(f"trainctl operator exited with {proc.returncode}")
            pid, user = proc.pid, BENCH_USER
        else:
            if self.jobsets is None:
                raise SystemExit("--impl floor needs an operator side before it (its JobSets)")
            pid, user = None, BENCH_USER
        if impl != "floor":
            self.admin.request("POST", f"{TRAINER}/namespaces/{ns}/trainingruntimes",
                               runtime(ns, a.run_seconds))
        offset = os.path.getsize(self.audit)
        start = time.monotonic()
        if impl == "floor":
            docs = []
            for js in self.jobsets:
                js = copy.deepcopy(js)
                js["metadata"] = {"name": js["metadata"]["name"], "namespace": ns,
                                  "labels": js["metadata"].get("labels", {}),
                                  "annotations": js["metadata"].get("annotations", {})}
                js.pop("status", None)
                docs.append(js)
            self.submit(self.bench, f"{JOBSET}/namespaces/{ns}/jobsets", docs)
        else:
            self.submit(self.admin, f"{TRAINER}/namespaces/{ns}/trainjobs",
                        [trainjob(f"job-{i}", ns, a.nodes) for i in range(a.jobs)])
        t = self.measure(ns, start, impl != "floor")
        cpu = rss = None
        if pid:
            cpu, rss = proc_figures(pid)
        if impl != "floor" and self.jobsets is None:
            self.jobsets = self.admin.request("GET", f"{JOBSET}/namespaces/{ns}/jobsets")["items"]
        if impl == "trainer":
            subprocess.run([f"{ROOT}/hack/upstream/trainer.sh", "down"], env=ENV, check=True)
        elif proc:
            proc.terminate()
            proc.wait(timeout=30)
        time.sleep(1)  # the audit log's last lines
        writes = audit_writes(self.audit, offset, user, ns)
        self.k("delete", "namespace", ns, "--wait=true", "--timeout=300s", check=False)
        return {"impl": impl, "t": t, "cpu": cpu, "rss": rss, "writes": writes}


def setup():
    subprocess.run([f"{ROOT}/hack/cluster/down.sh", "--purge"], env=ENV,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.makedirs(STATE, exist_ok=True)
    policy = f"{STATE}/audit-policy.yaml"
    with open(policy, "w") as f:
        yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": [{"level": "Metadata", "users": [TRAINER_USER, BENCH_USER],
                                   "verbs": sorted(WRITES)}, {"level": "None"}]}, f)
    env = {**ENV, "TRAINCTL_JOBSET": "1", "TRAINCTL_APISERVER_ARGS":
           ENV.get("TRAINCTL_APISERVER_ARGS", "") + f" --audit-policy-file={policy} "
           f"--audit-log-path={STATE}/audit.log --audit-log-format=json --audit-log-maxsize=0"}
    subprocess.run([f"{ROOT}/hack/cluster/up.sh", "-q"], env=env, check=True)
    sh('ca_sign trainctl-bench "/O=system:masters/CN=' + BENCH_USER + '" '
       '"keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"; '
       'cert_kubeconfig "$STATE/config/trainctl-bench.kubeconfig" trainctl-bench')


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", default="trainjob", choices=["trainjob"])
    p.add_argument("--impl", default="trainctl,trainer,floor")
    p.add_argument("--jobs", type=int, default=50)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--run-seconds", type=int, default=60)
    p.add_argument("--qps", type=float, default=50)
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--threads", type=int, default=5)
    a = p.parse_args()
    impls = a.impl.split(",")
    for impl in impls:
        if impl not in ("trainctl", "trainer", "floor"):
            p.error(f"--impl {impl}: expected trainctl, trainer or floor")
    if "trainer" in impls:
        subprocess.run([f"{ROOT}/hack/upstream/build.sh", "--trainer"], env=ENV, check=True,
                       stdout=subprocess.DEVNULL)
    try:
        setup()
        bench = Bench(a)
        runs = []
        for impl in impls:
            log(f"{impl}: {a.jobs} TrainJobs × {a.nodes} nodes")
            runs.append(bench.run(impl))
    finally:
        subprocess.run([f"{ROOT}/hack/upstream/trainer.sh", "down"], env=ENV,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([f"{ROOT}/hack/cluster/down.sh"], env=ENV,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    floor = next((r["t"].get("running") for r in runs if r["impl"] == "floor"), None)
    sec = lambda v: "—" if v is None else f"{v:.1f} s"
    print(f"\n{a.jobs} TrainJobs × {a.nodes} nodes, QPS {a.qps:g}, burst {a.burst}, "
          f"{a.threads} threads, pods run {a.run_seconds} s\n")
    print("| run | all pods created | all Running | vs floor | all Succeeded | all TrainJobs "
          "Complete | peak RSS | CPU s | API writes (per job) |\n|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        t, total = r["t"], sum(r["writes"].values())
        ratio = f"{t['running'] / floor:.2f}" if floor and "running" in t else "—"
        rss = "—" if r["rss"] is None else f"{r['rss']:.1f} MiB"
        cpu = "—" if r["cpu"] is None else f"{r['cpu']:.1f}"
        print(f"| {r['impl']} | {sec(t.get('created'))} | {sec(t.get('running'))} | {ratio} | "
              f"{sec(t.get('succeeded'))} | {sec(t.get('complete'))} | {rss} | {cpu} | "
              f"{total} ({total / a.jobs:.2f}) |")
    print("\nWrites by verb and resource")
    for r in runs:
        print(f"  {r['impl']}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["writes"].items())))


if __name__ == "__main__":
    main()
