"""Tell the user why (docs/status-machine.md, "Why"), with states a real kubelet produces: the
operator deployed from manifests/ (node_harness.deploy_operator) watches jobs whose containers
really fail to pull, lack a ConfigMap, crash and are restarted with the kubelet's back-off, run
out of memory under a cgroup limit, fail with a termination message or with only their log
(FallbackToLogsOnError), or run silently. These replace the kwok-simulated versions that
test/integration/operator/test_why.py had (it keeps the states the kwok cluster makes for real:
the scheduler's verdict, a ResourceQuota, a suspended job).
"""
import json
import os
import re
import subprocess
import time
import unittest
import urllib.request

from node_harness import NodeTestCase, new_namespace, NODE, deploy_operator, get_json, kubectl, wait_for
from harness import KUBECONFIG, TRAINCTL  # noqa: E402  (on the path node_harness set)

PYTHON_IMAGE = "docker.io/pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime"  # the examples' image


def replica(count, command, image=None, **container):
    return count, {"name": "pytorch", "image": image or NODE["busybox"], "command": command, **container}


def job(name, replicas, restart_policy="Never", annotations=None, run_policy=None):
    """A PyTorchJob whose replicas run real commands: {type: replica(...)}."""
    specs = {rtype: {"replicas": count, "restartPolicy": restart_policy,
                     "template": {"spec": {"terminationGracePeriodSeconds": 1, "containers": [c]}}}
             for rtype, (count, c) in replicas.items()}
    spec = {"pytorchReplicaSpecs": specs}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


FOREVER = ["sleep", "3600"]


def ready_condition(obj):
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c["type"] == "ReplicasReady":
            return c
    return None


PROGRESS_3S = {"trainctl.dev/progress-timeout-seconds": "3"}
CRASH = ["sh", "-c", "echo \"python3: can't open file '/opt/pytorch-mnist/mnist.py': [Errno 2]\"; exit 2"]
# The Worker fails first (exit 3) with only output (FallbackToLogsOnError); the Master later
# (exit 2) with a termination message it wrote. The Worker starts only once its init container
# has resolved the Master's name, so the Master lasts long enough for that on a busy node: 2 s
# here alone, but more than 45 s once in CI (2026-11-27, the whole node suite on 2 cores).
FIRST = ["sh", "-c", "echo step 7; echo 'RuntimeError: NCCL error: unhandled cuda error'; exit 3"]
LATE = ["sh", "-c", "sleep 100; echo 'worker 0: lost rank 1' >/dev/termination-log; exit 2"]
HOG = ["python3", "-c", "import time; b = bytearray(512 << 20); time.sleep(60)"]
TALK = ["sh", "-c", "while true; do echo step; sleep 1; done"]
MISSING_CFG = [{"name": "LR", "valueFrom": {"configMapKeyRef": {"name": "missing-cfg", "key": "lr"}}}]

RANKS_PY = ("import os, sys, time\n"
            "if os.environ['RANK'] == '1':\n"
            "    print('rank 1: loss is nan, giving up', flush=True)\n"
            "    sys.exit(7)\n"
            "time.sleep(150)\n")
TORCHRUN = ["sh", "-c", 'printf "%s" "$RANKS_PY" >/tmp/ranks.py && exec torchrun /tmp/ranks.py']
# torch 1.13 on Python 3.11 (Debian's): see examples/pytorch/pytorchjob-torchrun.yaml
TORCHRUN_ENV = [{"name": "RANKS_PY", "value": RANKS_PY}, {"name": "PET_REDIRECTS", "value": "9:1"},
                {"name": "PET_TEE", "value": "9:1"}]

# Every job of the suite, created together so that their states develop side by side.
JOBS = [
    job("pull", {"Master": replica(1, FOREVER, image="docker.io/trainctl/no-such-image:1")}),
    job("cfg", {"Master": replica(1, FOREVER, env=MISSING_CFG)}),
    job("loop", {"Master": replica(1, FOREVER), "Worker": replica(1, CRASH)}, restart_policy="OnFailure"),
    job("ff", {"Master": replica(1, LATE), "Worker": replica(1, FIRST)}, run_policy={"cleanPodPolicy": "None"}),
    job("oom", {"Master": replica(1, HOG, image=PYTHON_IMAGE, resources={"limits": {"memory": "64Mi"}})}),
    # A real process that writes nothing: the operator's log probes (sinceSeconds,
    # limitBytes=1) go through the API server to the kubelet and find nothing new.
    job("hang", {"Master": replica(1, FOREVER), "Worker": replica(1, FOREVER)}, annotations=PROGRESS_3S),
    job("talk", {"Master": replica(1, TALK)}, annotations=PROGRESS_3S),
    # torchrun on both replicas: rank 1 exits with 7 and its agent waits at the exit barrier
    # while rank 0 trains on; the operator reads the agent's report from the Worker's log.
    # One process per node: upstream's default nprocPerNode (auto) lets torchrun count the
    # node's CPUs, and then only the local rank is known.
    dict(job("ranks", {"Master": replica(1, TORCHRUN, image=PYTHON_IMAGE, env=TORCHRUN_ENV),
                       "Worker": replica(1, TORCHRUN, image=PYTHON_IMAGE, env=TORCHRUN_ENV)})),
]
JOBS[-1]["spec"]["nprocPerNode"] = "1"


class WhyOnTheNode(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.operator = deploy_operator()
        cls.ns = new_namespace("why")
        for obj in JOBS:
            kubectl("create", "-n", cls.ns, "-f", "-", input=json.dumps(obj))

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def job(self, name):
        return get_json("pytorchjob", name, "-n", self.ns)

    def events(self, name):
        out = get_json("events", "-n", self.ns, "--field-selector", f"involvedObject.name={name}")
        return [(e["type"], e["reason"], e["message"]) for e in (out or {}).get("items", [])]

    def cli(self, *args):
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINCTL_BACKEND")}
        return subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, *args],
                              capture_output=True, text=True, timeout=60, env=env)

    def operator_log(self):
        return kubectl("logs", "-n", "trainctl-system", "deployment/trainctl-operator", "--tail=40",
                       check=False).stdout

    def wait_reason(self, name, reason, timeout=120, predicate=lambda c: True):
        def ok():
            c = ready_condition(self.job(name))
            return c if c and c["status"] == "False" and c["reason"] == reason and predicate(c) else None
        try:
            return wait_for(f"ReplicasReady reason {reason}", ok, timeout, interval=1)
        except AssertionError as e:
            raise AssertionError(f"{e}\ncondition: {ready_condition(self.job(name))}\n{self.operator_log()}")

    def wait_failed(self, name, timeout=120):
        def failed():
            for c in (self.job(name) or {}).get("status", {}).get("conditions", []):
                if c["type"] == "Failed" and c["status"] == "True":
                    return c
            return None
        return wait_for(f"{name} Failed", failed, timeout, interval=1)

    def test_an_image_the_registry_lacks(self):
        c = self.wait_reason("pull", "ImagePullBackOff")
        self.assertTrue(c["message"].startswith("1/1 replicas cannot pull their image (Master 0): "), c)
        self.assertIn('"docker.io/trainctl/no-such-image:1"', c["message"], "the kubelet's own message")

    def test_a_missing_configmap(self):
        c = self.wait_reason("cfg", "CreateContainerConfigError")
        self.assertIn('configmap "missing-cfg" not found', c["message"])

    def test_a_crash_loop_with_the_kubelets_back_off(self):
        def restarts(c):
            m = re.search(r", (\d+) restarts? so far", c["message"])
            return m and int(m.group(1)) >= 2
        c = self.wait_reason("loop", "CrashLoopBackOff", timeout=180, predicate=restarts)
        self.assertRegex(
            c["message"],
            r"\A1/2 replicas keep crashing and restarting \(Worker 0\)\. Last exit: "
            r"loop-worker-0 exited with code 2 at \S+Z, \d+ restarts so far(; [^\n]*)?\.\n"
            r"Last output:\npython3: can't open file '/opt/pytorch-mnist/mnist\.py': \[Errno 2\]\Z")
        pod = get_json("pod", "loop-worker-0", "-n", self.ns)
        status = pod["status"]["containerStatuses"][0]
        self.assertEqual(pod["spec"]["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError")
        self.assertEqual(status["lastState"]["terminated"]["message"].strip(),
                         "python3: can't open file '/opt/pytorch-mnist/mnist.py': [Errno 2]",
                         "the kubelet took the message from the log")
        # Reported once, although the kubelet shows the container `terminated` for most of each
        # back-off and `waiting: CrashLoopBackOff` only around the restart.
        reasons = [e[1] for e in self.events("loop")]
        self.assertEqual(reasons.count("CrashLoopBackOff"), 1, self.events("loop"))
        self.assertNotIn("AllReplicasRunning", reasons)
        waited = self.cli("wait", "pytorchjob", "loop", "--timeout", "2s")
        self.assertEqual(waited.returncode, 1, waited.stderr)
        self.assertIn("is Running\nCrashLoopBackOff (since ", waited.stderr)
        self.assertIn("loop-worker-0 exited with code 2", waited.stderr)

    def test_the_first_failure_with_its_termination_message_or_its_log(self):
        try:
            failed = self.wait_failed("ff", timeout=150)
            self.assertIn("First failure: ff-worker-0 (Worker 0) exited with code 3, at ", failed["message"])
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.why_the_worker_was_late()}") from None
        self.assertIn("Last output:\nstep 7\nRuntimeError: NCCL error: unhandled cuda error", failed["message"])
        self.assertNotIn("lost rank 1", failed["message"])
        # The event is sent after the status is written.
        wait_for("the Failed event", lambda: failed["message"] in {
            e[2] for e in self.events("ff") if e[1] == "PyTorchJobFailed"}, timeout=30, interval=1)
        pod = get_json("pod", "ff-worker-0", "-n", self.ns)
        self.assertEqual(pod["spec"]["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError")
        self.assertIsNone(ready_condition(self.job("ff")), "a finished job carries no ReplicasReady")
        ended = wait_for("the Master's end", lambda: get_json("pod", "ff-master-0", "-n", self.ns)[
            "status"]["containerStatuses"][0]["state"].get("terminated"), timeout=150, interval=1)
        self.assertEqual(ended["message"], "worker 0: lost rank 1\n",
                         "what the container wrote to /dev/termination-log is the kubelet's message")
        self.assertNotIn("lost rank 1", self.job("ff")["status"]["conditions"][-1]["message"],
                         "the first failure stays the Worker's")

    def why_the_worker_was_late(self):
        """What stood between the Worker and its start: its init container's state and log, the
        job's services and endpoint slices, and the operator's last lines."""
        pod = get_json("pod", "ff-worker-0", "-n", self.ns) or {}
        init = pod.get("status", {}).get("initContainerStatuses", [])
        log = kubectl("logs", "-n", self.ns, "ff-worker-0", "-c", "init-pytorch", "--tail=20", check=False)
        slices = kubectl("get", "endpointslices,services", "-n", self.ns, "-o", "wide", check=False)
        return (f"the Worker's init containers: {json.dumps(init)}\ntheir log:\n{log.stdout}{log.stderr}"
                f"\n{slices.stdout}{slices.stderr}\noperator:\n{self.operator_log()}")

    def test_out_of_memory_under_a_limit(self):
        failed = self.wait_failed("oom", timeout=180)
        terminated = get_json("pod", "oom-master-0", "-n", self.ns)["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((terminated["reason"], terminated["exitCode"]), ("OOMKilled", 137), terminated)
        self.assertIn("First failure: oom-master-0 (Master 0) was killed by SIGKILL (exit code 137), "
                      "reason OOMKilled", failed["message"])

    def test_a_failed_rank_under_torchrun_is_named_while_its_pod_runs(self):
        c = self.wait_reason("ranks", "RankFailed", timeout=150)
        self.assertIn("ranks-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7 at ",
                      c["message"])
        self.assertIn("Last output:\nrank 1: loss is nan, giving up", c["message"])
        pod = get_json("pod", "ranks-worker-0", "-n", self.ns)
        self.assertEqual(pod["status"]["phase"], "Running", "torchrun holds it at its exit barrier")
        waited = self.cli("wait", "pytorchjob", "ranks", "--timeout", "1s")
        self.assertIn("is Running\nRankFailed (since ", waited.stderr)

    def test_a_silent_process_gets_a_progress_timeout(self):
        c = self.wait_reason("hang", "ProgressTimeout", timeout=120)
        self.assertIn("No replica has written output for 3 s", c["message"])
        wait_for("the ProgressTimeout event", lambda: ("Warning", "ProgressTimeout") in {
            (e[0], e[1]) for e in self.events("hang")}, timeout=30, interval=1)
        last = (self.job("hang")["status"]["conditions"] or [{}])[-1]
        self.assertEqual((last["type"], last["status"]), ("Running", "True"), "a warning only")

    def test_a_process_that_writes_is_not_called_silent(self):
        wait_for("all replicas running", lambda: (ready_condition(self.job("talk")) or {}).get("status") == "True",
                 timeout=60, interval=1)
        metrics = operator_metrics()
        wait_for("a few log probes", lambda: probes(operator_metrics()) >= probes(metrics) + 2, timeout=60, interval=1)
        time.sleep(10)  # three times its progress timeout, while it writes a line a second
        c = ready_condition(self.job("talk"))
        self.assertEqual((c["status"], c["reason"]), ("True", "AllReplicasRunning"), c)
        self.assertNotIn("ProgressTimeout", [e[1] for e in self.events("talk")])


def operator_metrics():
    """The deployed operator's /metrics, read at its pod address (routed to the node's bridge)."""
    pod = deploy_operator()
    ip = get_json("pod", pod["metadata"]["name"], "-n", "trainctl-system")["status"]["podIP"]
    with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=5) as r:
        return r.read().decode()


def probes(metrics):
    total = 0
    for line in metrics.splitlines():
        if line.startswith("trainctl_api_requests_total{") and 'resource="pods/log"' in line and 'verb="get"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


if __name__ == "__main__":
    unittest.main()
