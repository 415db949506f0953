"""Local vs cluster: the same manifests run with `trainctl run` on this machine and on the real
node (the operator deployed from manifests/), and what a user sees is compared field by field
through the same CLI (`trainctl describe -o json`, `trainctl logs`): the final condition and
its reason, the sequence of the job's "why" and lifecycle events, the restart counts, the first
failure (replica and exit code), and the framework env each replica got, addresses aside.

A difference is a bug or a documented substrate difference (docs/compatibility.md,
"`trainctl run`: what differs on one machine"); the ones this table skips are named below.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

from node_harness import NodeTestCase, new_namespace, NODE, deploy_operator, get_json, kubectl, wait_for
from harness import KUBECONFIG, TRAINCTL  # noqa: E402  (on the path node_harness set)

ENV_DUMP = "env | grep -E '^(MASTER_|WORLD_SIZE=|RANK=|LOCAL_RANK=|NODE_RANK=|PET_|PYTHONUNBUFFERED=)' | sort | sed 's/^/ENV /'"

# Env that differs by design: where a peer is (a Service name and a fixed port on the cluster,
# a loopback address and a free port here), and `nprocPerNode: auto`, which `trainctl run`
# resolves per replica because every replica shares this machine (docs/local-runner.md).
SUBSTRATE_ENV = {"MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NPROC_PER_NODE"}

# The job's events that say what happened to it (not how a substrate made its children).
LIFECYCLE = re.compile(r"^(CrashLoopBackOff|AllReplicasRunning|ImagePullBackOff|ProgressTimeout|"
                       r"ReplicaFailed|\w+Job(Restarting|Failed|Succeeded|Suspended|Resumed))$")


def replica(command, restart_policy="Never"):
    return {"replicas": 1, "restartPolicy": restart_policy,
            "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [
                {"name": "pytorch", "image": NODE["busybox"], "command": ["sh", "-c", command]}]}}}


def pytorch_job(name, master, worker, run_policy=None):
    spec = {"pytorchReplicaSpecs": {"Master": master, "Worker": worker}}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name}, "spec": spec}


CASES = {
    # Both replicas print their env and succeed, the Worker first: the job succeeds with its
    # Master. On the cluster the Worker starts only once its init container has resolved the
    # Master's name (locally that container is skipped), so the Master runs long enough for
    # the Worker to start and end on a busy node (45 s was not always enough while `make test`
    # built in the background).
    "conf-succeeds": pytorch_job("conf-succeeds", replica(f"{ENV_DUMP}; sleep 90"), replica(f"{ENV_DUMP}; sleep 1")),
    # The Worker fails first with exit 3; the Master would succeed much later.
    "conf-first-failure": pytorch_job(
        "conf-first-failure", replica(f"{ENV_DUMP}; sleep 90"),
        replica(f"{ENV_DUMP}; sleep 2; echo 'RuntimeError: lost rank 0'; exit 3")),
    # The Worker crashes in place (OnFailure) until the backoff limit fails the job.
    "conf-crash-loop": pytorch_job(
        "conf-crash-loop", replica("sleep 120", "OnFailure"),
        replica("sleep 1; echo boom; exit 2", "OnFailure"), run_policy={"backoffLimit": 2}),
    # ExitCode: 130 is retryable, so the Worker is replaced until the backoff limit.
    "conf-exit-code": pytorch_job(
        "conf-exit-code", replica("sleep 120", "ExitCode"),
        replica("sleep 1; exit 130", "ExitCode"), run_policy={"backoffLimit": 1}),
}


def seen(describe, logs):
    """What a user sees of a finished job, in substrate-neutral terms."""
    job = describe["job"]
    status = job.get("status", {})
    true = [c for c in status.get("conditions", []) if c["status"] == "True"]
    final = (true[-1]["type"], true[-1]["reason"]) if true else None
    events = [e["reason"] for e in describe["events"] if e.get("object", "").startswith(job["kind"] + "/")
              and LIFECYCLE.match(e["reason"].split(" (x")[0])]
    restarts = {t: s.get("restarts", 0) for t, s in status.get("replicaStatuses", {}).items()}
    counts = {t: (s.get("succeeded", 0), s.get("failed", 0)) for t, s in status.get("replicaStatuses", {}).items()}
    rows = sorted((r["type"], r["index"], r["name"]) for r in describe.get("replicas", []))
    first = re.match(r"First failure: (\S+) \(.*?\) (?:exited with code|was killed by \w+ \(exit code) (\d+)",
                     (describe.get("why") or {}).get("firstFailure") or "")
    env = {}
    for line in logs.splitlines():
        m = re.match(r"^\[(\w+-\d+)\] ENV (\w+)=(.*)$", line)
        if m and m.group(2) not in SUBSTRATE_ENV:
            env.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return {"final": final, "events": dedupe(events), "restarts": restarts, "counts": counts, "replicas": rows,
            "first_failure": (first.group(1), int(first.group(2))) if first else None, "env": env}


def dedupe(reasons):
    """Event reasons in order, a repeat of the previous one dropped (a substrate may repeat
    a condition's event while the other aggregates it)."""
    out = []
    for r in reasons:
        r = r.split(" (x")[0]
        if not out or out[-1] != r:
            out.append(r)
    return out


class LocalVsClusterTest(NodeTestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        deploy_operator()
        cls.ns = new_namespace("conf")
        cls.tmp = tempfile.mkdtemp(prefix="trainctl-conformance-")
        cls.local_env = dict(os.environ, TRAINCTL_STATE_DIR=os.path.join(cls.tmp, "state"))
        for key in ("KUBECONFIG", "TRAINCTL_BACKEND"):
            cls.local_env.pop(key, None)
        cls.cluster_env = {k: v for k, v in cls.local_env.items() if k != "TRAINCTL_STATE_DIR"}
        # Every case on both substrates at once: locally one `trainctl run` each, in threads.
        cls.local_runs = {}
        threads = []
        for name, manifest in CASES.items():
            path = os.path.join(cls.tmp, name + ".yaml")
            with open(path, "w") as f:
                json.dump(manifest, f)
            kubectl("create", "-n", cls.ns, "-f", path)
            t = threading.Thread(target=cls.run_locally, args=(name, path))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()

    @classmethod
    def run_locally(cls, name, path):
        cls.local_runs[name] = subprocess.run([TRAINCTL, "run", path], env=cls.local_env, cwd=cls.tmp,
                                              capture_output=True, text=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def local(self, *args):
        return subprocess.run([TRAINCTL, *args], env=self.local_env, capture_output=True, text=True, timeout=60)

    def cluster(self, *args):
        return subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, *args], env=self.cluster_env,
                              capture_output=True, text=True, timeout=60)

    def cluster_finished(self, name):
        job = get_json("pytorchjob", name, "-n", self.ns) or {}
        return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
                   for c in job.get("status", {}).get("conditions", []))

    def compare(self, name):
        wait_for(f"{name} finished on the cluster", lambda: self.cluster_finished(name), timeout=300, interval=1)
        # Its last event (sent after the status is written) is there too.
        wait_for(f"{name}'s final event", lambda: any(
            e["reason"].startswith(("PyTorchJobSucceeded", "PyTorchJobFailed")) for e in json.loads(
                self.cluster("describe", "pytorchjob", name, "-o", "json").stdout)["events"]),
            timeout=30, interval=1)
        sides = {}
        for side, cli in (("local", self.local), ("cluster", self.cluster)):
            described = cli("describe", "pytorchjob", name, "-o", "json")
            self.assertEqual(described.returncode, 0, f"{side}: {described.stderr}")
            logs = cli("logs", "pytorchjob", name)
            sides[side] = seen(json.loads(described.stdout), logs.stdout)
            sides[side]["raw logs"] = logs.stdout + logs.stderr
        raw = {side: sides[side].pop("raw logs") for side in sides}
        self.assertEqual(sides["local"], sides["cluster"],
                         f"{name}: local run:\n{self.local_runs[name].stdout[-3000:]}\n"
                         f"local logs:\n{raw['local']}\ncluster logs:\n{raw['cluster']}")
        print(f"\n{name}: both substrates show {json.dumps(sides['local'], sort_keys=True)}", file=sys.stderr)
        return sides["local"]

    def test_a_job_that_succeeds(self):
        seen_ = self.compare("conf-succeeds")
        self.assertEqual(seen_["final"], ("Succeeded", "PyTorchJobSucceeded"))
        self.assertEqual(seen_["env"]["master-0"]["WORLD_SIZE"], "2")
        self.assertEqual(seen_["env"]["worker-0"]["RANK"], "1")

    def test_the_first_failure(self):
        seen_ = self.compare("conf-first-failure")
        self.assertEqual(seen_["final"], ("Failed", "PyTorchJobFailed"))
        self.assertEqual(seen_["first_failure"], ("conf-first-failure-worker-0", 3))

    def test_a_crash_loop_until_the_backoff_limit(self):
        seen_ = self.compare("conf-crash-loop")
        self.assertEqual(seen_["final"][0], "Failed")
        self.assertIn("CrashLoopBackOff", seen_["events"])

    def test_exit_code_restarts_until_the_backoff_limit(self):
        seen_ = self.compare("conf-exit-code")
        self.assertEqual(seen_["final"][0], "Failed")


if __name__ == "__main__":
    unittest.main()
