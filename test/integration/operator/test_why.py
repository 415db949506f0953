"""Tell the user why (docs/status-machine.md, "Why"), on the real control plane with the real
operator: the ReplicasReady condition for each not-running reason the test cluster can produce
(the real scheduler's verdict, a ResourceQuota the API server enforces, a job suspended for
Kueue, and container states kwok simulates through its stage annotations), and the first failure
named in the Failed condition, its event and the CLI."""
import json
import os
import re
import subprocess

from harness import (FOREVER, KUBECONFIG, TRAINCTL, OperatorTestCase, kubectl, make_job, run_for,
                     wait_for)


def ready_condition(job):
    for c in (job or {}).get("status", {}).get("conditions", []):
        if c["type"] == "ReplicasReady":
            return c
    return None


def cluster_cli(namespace, *args):
    """The trainctl CLI against the test cluster through --kubeconfig only."""
    env = dict(os.environ)
    env.pop("KUBECONFIG", None)
    env.pop("TRAINCTL_BACKEND", None)
    return subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", namespace, *args],
                          capture_output=True, text=True, timeout=60, env=env)


class WhyNotRunning(OperatorTestCase):

    def cli(self, *args):
        return cluster_cli(self.ns, *args)

    def wait_reason(self, name, reason, timeout=60):
        def ok():
            c = ready_condition(self.job("PyTorchJob", name))
            return c if c and c["status"] == "False" and c["reason"] == reason else None
        try:
            return wait_for(f"ReplicasReady reason {reason}", ok, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\ncondition: {ready_condition(self.job('PyTorchJob', name))}\n"
                                 f"operator log:\n{self.op.log()}")

    def test_unschedulable_names_the_schedulers_verdict(self):
        job = make_job("PyTorchJob", "gpu", self.ns, {"Master": (1, FOREVER), "Worker": (2, FOREVER)})
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 16}}  # nodes have 8
        self.create(job)
        c = self.wait_reason("gpu", "Unschedulable")
        self.assertIn("/3 replicas are unschedulable", c["message"])
        self.assertIn("Insufficient nvidia.com/gpu", c["message"])
        conditions = self.job("PyTorchJob", "gpu")["status"]["conditions"]
        self.assertEqual(conditions[0]["type"], "ReplicasReady", "first, so never the STATE column")
        self.assertNotEqual(conditions[-1]["type"], "ReplicasReady")
        self.assertIn(("Warning", "Unschedulable"), {(e[0], e[1]) for e in self.events("gpu")})
        # kubectl's STATE column (the last condition) is unchanged; trainctl shows the reason.
        self.assertIn("Created", kubectl("get", "pytorchjob", "gpu", "-n", self.ns).stdout)
        wide = self.cli("get", "pytorchjobs", "-o", "wide")
        self.assertEqual(wide.returncode, 0, wide.stderr)
        self.assertEqual(wide.stdout.splitlines()[0].split(), ["NAME", "STATE", "AGE", "REASON"])
        self.assertIn("Unschedulable: ", wide.stdout)
        described = json.loads(self.cli("describe", "pytorchjob", "gpu", "-o", "json").stdout)
        self.assertEqual(described["why"]["reason"], "Unschedulable")
        self.assertIn("Why:", self.cli("describe", "pytorchjob", "gpu").stdout)

    def test_image_pull_and_missing_configmap(self):
        pull = {**FOREVER, "trainctl.dev/kwok-waiting-reason": "ImagePullBackOff",
                "trainctl.dev/kwok-waiting-message": 'Back-off pulling image "example.invalid/nope:1"'}
        cfg = {**FOREVER, "trainctl.dev/kwok-waiting-reason": "CreateContainerConfigError",
               "trainctl.dev/kwok-waiting-message": 'configmap "missing-cfg" not found'}
        self.create(make_job("PyTorchJob", "pull", self.ns, {"Master": (1, pull)}))
        self.create(make_job("PyTorchJob", "cfg", self.ns, {"Master": (1, cfg)}))
        c = self.wait_reason("pull", "ImagePullBackOff")
        self.assertEqual(c["message"], "1/1 replicas cannot pull their image (Master 0): "
                                       'Back-off pulling image "example.invalid/nope:1"')
        c = self.wait_reason("cfg", "CreateContainerConfigError")
        self.assertIn('configmap "missing-cfg" not found', c["message"])

    def test_kueue_suspended_job_waits_for_admission(self):
        job = make_job("PyTorchJob", "queued", self.ns, {"Master": (1, FOREVER)},
                       run_policy={"suspend": True})
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
        self.create(job)
        c = self.wait_reason("queued", "WaitingForAdmission")
        self.assertIn('queue "team-a"', c["message"])
        # Resumed (as Kueue does on admission): running, and the condition says so.
        kubectl("patch", "pytorchjob", "queued", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
        wait_for("all replicas running", lambda: (ready_condition(self.job("PyTorchJob", "queued"))
                                                  or {}).get("status") == "True")


class WhyQuota(OperatorTestCase):
    """A ResourceQuota the API server enforces (its own namespace: it would refuse other tests)."""

    def test_pods_refused_by_a_quota(self):
        kubectl("create", "quota", "two-pods", "--hard=pods=1", "-n", self.ns)
        wait_for("quota status", lambda: (kubectl("get", "quota", "two-pods", "-n", self.ns, "-o",
                                                  "jsonpath={.status.hard.pods}").stdout == "1"))
        self.create(make_job("PyTorchJob", "quota", self.ns, {"Master": (1, FOREVER), "Worker": (2, FOREVER)}))

        def reason():
            c = ready_condition(self.job("PyTorchJob", "quota"))
            return c if c and c["reason"] == "QuotaExceeded" else None
        c = wait_for("QuotaExceeded", reason, timeout=60)
        self.assertIn("exceeded quota: two-pods", c["message"])
        self.assertIn(("Warning", "QuotaExceeded"), {(e[0], e[1]) for e in self.events("quota")})


class FirstFailure(OperatorTestCase):

    def test_the_first_replica_to_fail_is_named_with_its_message(self):
        late = {**run_for(4, exit_code=2), "trainctl.dev/kwok-termination-message": "worker 0: lost rank 1"}
        first = {**run_for(1, exit_code=3),
                 "trainctl.dev/kwok-termination-message": "step 7\nRuntimeError: NCCL error: unhandled cuda error"}
        job = make_job("PyTorchJob", "ff", self.ns, {"Master": (1, FOREVER), "Worker": (1, FOREVER)},
                       run_policy={"cleanPodPolicy": "None"})
        workers = job["spec"]["pytorchReplicaSpecs"]["Worker"]
        # The Master fails late (exit 2), the Worker first (exit 3), each with its own message.
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"]["annotations"] = late
        workers["template"]["metadata"]["annotations"] = first
        self.create(job)
        done = self.wait_condition("PyTorchJob", "ff", "Failed", timeout=60)
        failed = done["status"]["conditions"][-1]
        self.assertIn("Worker replica(s) failed", failed["message"])  # upstream's sentence first
        self.assertIn("First failure: ff-worker-0 (Worker 0) exited with code 3, at ", failed["message"])
        self.assertIn("Last output:\nstep 7\nRuntimeError: NCCL error: unhandled cuda error",
                      failed["message"])
        self.assertNotIn("lost rank 1", failed["message"])
        self.assertIn(failed["message"], {e[2] for e in self.events("ff") if e[1] == "PyTorchJobFailed"})
        pod = [p for p in self.pods("ff") if p["metadata"]["name"] == "ff-worker-0"][0]
        self.assertEqual(pod["spec"]["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError")
        self.assertIsNone(ready_condition(done), "a finished job carries no ReplicasReady")


class CrashLoop(OperatorTestCase):
    """A container the kubelet restarts in place after each failure (kwok's restart stage: every
    2 s, exit code 2, with a termination message), seen by the operator between two crashes."""

    def test_a_crash_loop_names_the_replica_its_exit_and_output_once(self):
        loop = {**run_for(2, exit_code=2),
                "trainctl.dev/kwok-termination-message":
                    "python3: can't open file '/opt/pytorch-mnist/mnist.py': [Errno 2]"}
        job = make_job("PyTorchJob", "loop", self.ns, {"Master": (1, FOREVER), "Worker": (1, loop)},
                       restart_policy="OnFailure")
        self.create(job)

        def looping():
            c = ready_condition(self.job("PyTorchJob", "loop"))
            m = re.search(r", (\d+) restarts? so far", c["message"]) if c else None
            return c if c and c["reason"] == "CrashLoopBackOff" and m and int(m.group(1)) >= 2 \
                else None
        c = wait_for("ReplicasReady CrashLoopBackOff after 2 restarts", looping, timeout=60)
        self.assertRegex(
            c["message"],
            r"\A1/2 replicas keep crashing and restarting \(Worker 0\)\. Last exit: "
            r"loop-worker-0 exited with code 2 at \S+Z, \d+ restarts so far\.\n"
            r"Last output:\npython3: can't open file '/opt/pytorch-mnist/mnist\.py': \[Errno 2\]\Z")
        # One restart count: the job's and the pod's.
        def counts_agree():
            job = self.job("PyTorchJob", "loop")
            pod = [p for p in self.pods("loop") if p["metadata"]["name"] == "loop-worker-0"][0]
            status = job["status"]["replicaStatuses"]["Worker"].get("restarts", 0)
            return status if status == pod["status"]["containerStatuses"][0]["restartCount"] \
                and status >= 3 else None
        wait_for("replicaStatuses restarts = the pod's restartCount", counts_agree, timeout=30)
        # Reported once, not on every cycle.
        reasons = [e[1] for e in self.events("loop")]
        self.assertEqual(reasons.count("CrashLoopBackOff"), 1, reasons)
        self.assertNotIn("AllReplicasRunning", reasons)
        # wait --timeout says why.
        waited = self.cli("wait", "pytorchjob", "loop", "--timeout", "2s")
        self.assertEqual(waited.returncode, 1, waited.stderr)
        self.assertIn(f"timed out after 2s waiting for condition Succeeded: PyTorchJob {self.ns}/loop "
                      "is Running\nCrashLoopBackOff (since ", waited.stderr)
        self.assertIn("loop-worker-0 exited with code 2", waited.stderr)

    def cli(self, *args):
        return cluster_cli(self.ns, *args)


class Hang(OperatorTestCase):
    """The progress timeout on the cluster: kwok serves every container the same log, stamped
    when the cluster started, so a running kwok pod writes nothing new: a hang, found by probing
    the pods' logs through the API server (sinceSeconds, limitBytes=1)."""

    def test_a_silent_job_gets_a_progress_timeout_warning(self):
        job = make_job("PyTorchJob", "hang", self.ns, {"Master": (1, FOREVER), "Worker": (1, FOREVER)})
        job["metadata"]["annotations"] = {"trainctl.dev/progress-timeout-seconds": "3"}
        self.create(job)

        def timed_out():
            c = ready_condition(self.job("PyTorchJob", "hang"))
            return c if c and c["reason"] == "ProgressTimeout" else None
        c = wait_for("ProgressTimeout", timed_out, timeout=60)
        self.assertIn("No replica has written output for 3 s", c["message"])
        self.assertIn(("Warning", "ProgressTimeout"), {(e[0], e[1]) for e in self.events("hang")})
        self.assertEqual(self.conditions("PyTorchJob", "hang")[-1], ("Running", "True"), "Warn only")
        probes = self.op.counter("trainctl_api_requests_total", verb="get", resource="pods/log",
                                 result="ok")
        self.assertGreaterEqual(probes, 1)
        self.assertLessEqual(probes, 12, "a few probes of at most 4 pods each")
