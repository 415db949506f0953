"""Gang restart on the real control plane (issue #38, docs/status-machine.md "Gang restart"): a
PyTorchJob with `trainctl.dev/restart-scope: Gang` whose Worker fails every attempt. Every
replica is stopped and recreated as the next attempt; a watch on the job's pods checks that no
pod of attempt N+1 was created while one of attempt N existed; each gang restart is counted
once against backoffLimit, also across an operator kill; a pod deleted from outside restarts the
gang; validation (here without the webhook:
the job's FailedValidation condition) refuses Gang on an elastic job."""
import subprocess
import threading
import unittest

from harness import (FOREVER, KUBECONFIG, KUBECTL, OperatorTestCase, elastic_pytorch_job, json_stream, kubectl,
                     make_job, run_for, wait_for)

ATTEMPT = "trainctl.dev/restart-attempt"


class PodWatch:
    """Every ADDED/DELETED of the job's pods, in the order the API server sent them."""

    def __init__(self, ns, job):
        self.events = []
        self.proc = subprocess.Popen(
            [KUBECTL, "--kubeconfig", KUBECONFIG, "get", "pods", "-n", ns, "-l",
             f"training.kubeflow.org/job-name={job}", "--watch", "--output-watch-events", "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for obj in json_stream(iter(self.proc.stdout.readline, "")):
            pod = obj["object"]
            self.events.append((obj["type"], pod["metadata"]["name"], pod["metadata"]["uid"],
                                pod["metadata"].get("labels", {}).get(ATTEMPT)))

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.thread.join(timeout=5)
        self.proc.stdout.close()

    def overlaps(self):
        """Pods created while a pod of an earlier attempt still existed."""
        alive, bad = {}, []
        for kind, name, uid, attempt in self.events:
            if kind == "ADDED" and uid not in alive:
                earlier = [n for n, a in alive.values() if int(a) < int(attempt)]
                if earlier:
                    bad.append((name, attempt, earlier))
                alive[uid] = (name, attempt)
            elif kind == "DELETED":
                alive.pop(uid, None)
        return bad

    def created(self):
        seen, out = set(), []
        for kind, name, uid, attempt in self.events:
            if kind == "ADDED" and uid not in seen:
                seen.add(uid)
                out.append((name, attempt))
        return out


def gang_job(name, ns, backoff_limit):
    job = make_job("PyTorchJob", name, ns, {"Master": (1, FOREVER), "Worker": (2, run_for(2, exit_code=1))},
                   run_policy={"backoffLimit": backoff_limit}, restart_policy="OnFailure")
    job["metadata"].setdefault("annotations", {})["trainctl.dev/restart-scope"] = "Gang"
    return job


class GangRestartOnTheOperator(OperatorTestCase):

    def gang_events(self, name):
        return [e for e in self.events(name) if e[1] == "GangRestart"]

    def check_run(self, name, watch, attempts):
        job = self.wait_condition("PyTorchJob", name, "Failed", timeout=120)
        watch.stop()
        self.assertEqual(job["metadata"]["annotations"].get(ATTEMPT), str(attempts))
        self.assertIn("backoff limit", job["status"]["conditions"][-1]["message"])
        self.assertEqual(watch.overlaps(), [], "no pod of attempt N+1 while one of attempt N existed")
        created = watch.created()
        for attempt in range(attempts + 1):
            names = sorted(n for n, a in created if a == str(attempt))
            self.assertEqual(names, [f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"],
                             f"attempt {attempt}: every replica once ({created})")
        messages = [e[2] for e in self.gang_events(name)]
        self.assertEqual(len(messages), attempts, messages)
        for attempt in range(1, attempts + 1):
            self.assertTrue(any(f"as attempt {attempt} because Worker replica" in m for m in messages), messages)
        return job

    def restarted(self):
        return self.op.counter("training_operator_jobs_restarted_total", job_namespace=self.ns, framework="pytorch")

    def test_every_replica_restarts_together_and_each_restart_counts_once(self):
        restarted_before = self.restarted()
        watch = PodWatch(self.ns, "gang")
        self.create(gang_job("gang", self.ns, backoff_limit=2))
        pods = wait_for("the first attempt's pods", lambda: len(self.live_pods("gang")) == 3 and self.live_pods("gang"))
        for pod in pods:
            self.assertEqual(pod["spec"]["restartPolicy"], "Never", "the engine restarts a gang, not the kubelet")
            self.assertEqual(pod["metadata"]["labels"][ATTEMPT], "0")
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            self.assertEqual(env["TRAINCTL_RESTART_ATTEMPT"], "0")
        job = self.check_run("gang", watch, attempts=2)
        restarting = [c for c in job["status"]["conditions"] if c["type"] == "Restarting"]
        self.assertTrue(all(c["reason"] == "GangRestart" for c in restarting), restarting)
        self.assertEqual(self.restarted() - restarted_before, 2)

    def test_the_attempt_survives_an_operator_kill(self):
        watch = PodWatch(self.ns, "gang-kill")
        self.create(gang_job("gang-kill", self.ns, backoff_limit=3))
        wait_for("the first gang restart", lambda: self.gang_events("gang-kill"), timeout=60)
        self.op.kill()
        try:
            self.op.start()
            self.check_run("gang-kill", watch, attempts=3)
        finally:
            watch.stop()

    def test_a_pod_deleted_from_outside_restarts_the_gang(self):
        job = make_job("PyTorchJob", "gang-del", self.ns, {"Master": (1, FOREVER), "Worker": (2, FOREVER)},
                       restart_policy="OnFailure")
        job["metadata"]["annotations"] = {"trainctl.dev/restart-scope": "Gang"}
        watch = PodWatch(self.ns, "gang-del")
        try:
            self.create(job)
            wait_for("attempt 0 running", lambda: len([p for p in self.live_pods("gang-del")
                                                       if p.get("status", {}).get("phase") == "Running"]) == 3)
            # kwok removes a deleted pod within milliseconds, before the operator may see it
            # terminating (a kubelet takes the grace period): a finalizer holds it there.
            kubectl("patch", "pod", "gang-del-worker-1", "-n", self.ns, "--type=merge",
                    "-p", '{"metadata":{"finalizers":["trainctl.dev/test-hold"]}}')
            kubectl("delete", "pod", "gang-del-worker-1", "-n", self.ns, "--wait=false")
            wait_for("the gang restart", lambda: self.gang_events("gang-del"), timeout=30)
            kubectl("patch", "pod", "gang-del-worker-1", "-n", self.ns, "--type=merge",
                    "-p", '{"metadata":{"finalizers":null}}')
            wait_for("attempt 1 running", lambda: sorted(
                p["metadata"]["name"] for p in self.live_pods("gang-del")
                if p["metadata"]["labels"].get(ATTEMPT) == "1" and p.get("status", {}).get("phase") == "Running")
                == ["gang-del-master-0", "gang-del-worker-0", "gang-del-worker-1"], timeout=60)
        finally:
            watch.stop()
        self.assertEqual(self.job("PyTorchJob", "gang-del")["metadata"]["annotations"][ATTEMPT], "1")
        self.assertEqual(watch.overlaps(), [])
        messages = [e[2] for e in self.gang_events("gang-del")]
        self.assertTrue(any("because Worker replica 1 was deleted" in m for m in messages), messages)

    def test_gang_is_refused_on_an_elastic_job(self):
        job = elastic_pytorch_job("elastic-gang", self.ns)
        job["metadata"].setdefault("annotations", {})["trainctl.dev/restart-scope"] = "Gang"
        self.create(job)
        cond = wait_for("FailedValidation", lambda: next(
            (c for c in (self.job("PyTorchJob", "elastic-gang") or {}).get("status", {}).get("conditions", [])
             if c["reason"] == "PyTorchJobFailedValidation"), None))
        self.assertIn("metadata.annotations[trainctl.dev/restart-scope]", cond["message"])
        self.assertIn("elasticPolicy", cond["message"])


if __name__ == "__main__":
    unittest.main()
