"""The checkpoint notice on the real control plane (issue #38, docs/status-machine.md
"Checkpoint notice"): a suspended job with `trainctl.dev/checkpoint-notice-seconds` keeps its
pods until every one reported done (the pod annotation trainctl.dev/checkpoint-done) or the
notice's seconds ran out; each pod is told by its trainctl.dev/checkpoint-notice annotation,
which its downward-API volume shows to its containers; the job records the notice and gets a
CheckpointNotice event. A gang restart with a notice stops the survivors only after it."""
import json
import subprocess
import time
import unittest

from harness import FOREVER, KUBECONFIG, TRAINCTL, OperatorTestCase, kubectl, make_job, run_for, wait_for

NOTICE = "trainctl.dev/checkpoint-notice"
SECONDS = "trainctl.dev/checkpoint-notice-seconds"


def notice_job(name, ns, seconds, replicas=None, **kw):
    job = make_job("PyTorchJob", name, ns, replicas or {"Master": (1, FOREVER), "Worker": (1, FOREVER)}, **kw)
    job["metadata"]["annotations"] = {SECONDS: str(seconds)}
    return job


class CheckpointNoticeOnTheOperator(OperatorTestCase):

    @classmethod
    def tearDownClass(cls):
        # Jobs that hold the notice finalizer go while the operator still runs to release it.
        kubectl("delete", "pytorchjobs", "--all", "-n", cls.ns, "--timeout=60s", check=False)
        super().tearDownClass()

    def running(self, name, count):
        return wait_for(f"{name}: {count} pods Running", lambda: (
            len(pods := self.live_pods(name)) == count
            and all(p.get("status", {}).get("phase") == "Running" for p in pods) and pods), timeout=60)

    def suspend(self, name):
        kubectl("patch", "pytorchjob", name, "-n", self.ns, "--type=merge", "-p",
                json.dumps({"spec": {"runPolicy": {"suspend": True}}}))

    def told(self, name):
        pods = self.live_pods(name)
        return pods if pods and all(NOTICE in p["metadata"].get("annotations", {}) for p in pods) else None

    def test_a_suspend_tells_every_pod_and_deletes_them_once_all_are_done(self):
        self.create(notice_job("sus-done", self.ns, 120))
        pods = self.running("sus-done", 2)
        volume = [v for v in pods[0]["spec"]["volumes"] if v["name"] == "trainctl-checkpoint-notice"]
        self.assertEqual(volume[0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
                         f"metadata.annotations['{NOTICE}']")
        self.suspend("sus-done")
        pods = wait_for("every pod told", lambda: self.told("sus-done"), timeout=30)
        job = self.job("PyTorchJob", "sus-done")
        recorded = json.loads(job["metadata"]["annotations"][NOTICE])
        self.assertEqual(recorded["reason"], "Suspended")
        self.assertEqual(recorded["seconds"], 120)
        for p in pods:
            self.assertEqual(p["metadata"]["annotations"][NOTICE], job["metadata"]["annotations"][NOTICE])
        self.assertTrue(any(e[1] == "CheckpointNotice" for e in self.events("sus-done")), self.events("sus-done"))
        time.sleep(2)
        self.assertEqual(len(self.live_pods("sus-done")), 2, "held for the notice")
        for p in pods:
            kubectl("annotate", "pod", p["metadata"]["name"], "-n", self.ns, "trainctl.dev/checkpoint-done=true")
        reported = time.monotonic()
        wait_for("the pods deleted once all were done", lambda: not self.live_pods("sus-done"), timeout=30)
        self.assertLess(time.monotonic() - reported, 30, "well before the notice's 120 s")
        self.wait_condition("PyTorchJob", "sus-done", "Suspended")

    def test_a_suspend_without_done_reports_waits_the_notice_seconds(self):
        self.create(notice_job("sus-wait", self.ns, 6))
        self.running("sus-wait", 2)
        self.suspend("sus-wait")
        wait_for("every pod told", lambda: self.told("sus-wait"), timeout=30)
        told = time.monotonic()
        wait_for("the pods deleted", lambda: not self.live_pods("sus-wait"), timeout=60)
        self.assertGreaterEqual(time.monotonic() - told, 4.5, "not before the notice ran out")
        # Resumed: the notice is taken back and the new pods start without one.
        kubectl("patch", "pytorchjob", "sus-wait", "-n", self.ns, "--type=merge", "-p",
                json.dumps({"spec": {"runPolicy": {"suspend": False}}}))
        pods = self.running("sus-wait", 2)
        self.assertFalse(any(NOTICE in p["metadata"].get("annotations", {}) for p in pods))
        wait_for("the notice taken back", lambda: NOTICE not in self.job("PyTorchJob", "sus-wait")["metadata"].get(
            "annotations", {}), timeout=30)

    def test_a_deleted_job_tells_its_pods_and_goes_once_they_are_done(self):
        self.create(notice_job("del-done", self.ns, 120))
        self.running("del-done", 2)
        wait_for("the finalizer", lambda: "trainctl.dev/checkpoint-notice" in (
            self.job("PyTorchJob", "del-done")["metadata"].get("finalizers", [])), timeout=30)
        kubectl("delete", "pytorchjob", "del-done", "-n", self.ns, "--wait=false")
        pods = wait_for("every pod told", lambda: self.told("del-done"), timeout=30)
        self.assertEqual(json.loads(pods[0]["metadata"]["annotations"][NOTICE])["reason"], "Deleted")
        time.sleep(2)
        self.assertIsNotNone(self.job("PyTorchJob", "del-done"), "held for the notice")
        self.assertEqual(len(self.live_pods("del-done")), 2)
        for p in pods:
            kubectl("annotate", "pod", p["metadata"]["name"], "-n", self.ns, "trainctl.dev/checkpoint-done=true")
        reported = time.monotonic()
        wait_for("the job gone", lambda: self.job("PyTorchJob", "del-done") is None, timeout=60)
        self.assertLess(time.monotonic() - reported, 60, "well before the notice's 120 s")

    def test_a_deleted_job_without_done_reports_goes_after_the_notice(self):
        self.create(notice_job("del-wait", self.ns, 5))
        self.running("del-wait", 2)
        wait_for("the finalizer", lambda: self.job("PyTorchJob", "del-wait")["metadata"].get("finalizers"),
                 timeout=30)
        deleted = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "delete", "pytorchjob",
                                  "del-wait"], capture_output=True, text=True, timeout=60)
        self.assertEqual(deleted.returncode, 0, deleted.stderr)
        self.assertIn("its replicas are told to checkpoint: it goes within 5 s", deleted.stdout)
        wait_for("every pod told", lambda: self.told("del-wait"), timeout=30)
        told = time.monotonic()
        wait_for("the job gone", lambda: self.job("PyTorchJob", "del-wait") is None, timeout=60)
        self.assertGreaterEqual(time.monotonic() - told, 3.5, "not before the notice ran out")

    def test_a_gang_restart_waits_for_its_notice(self):
        job = notice_job("gang-notice", self.ns, 5,
                         {"Master": (1, FOREVER), "Worker": (1, run_for(3, exit_code=1))},
                         run_policy={"backoffLimit": 1}, restart_policy="OnFailure")
        job["metadata"]["annotations"]["trainctl.dev/restart-scope"] = "Gang"
        self.create(job)
        master = wait_for("the master told", lambda: [
            p for p in self.live_pods("gang-notice")
            if p["metadata"]["name"].endswith("master-0") and NOTICE in p["metadata"].get("annotations", {})],
            timeout=60)[0]
        told = time.monotonic()
        self.assertEqual(json.loads(master["metadata"]["annotations"][NOTICE])["reason"], "GangRestart")
        self.assertEqual(master["metadata"]["labels"]["trainctl.dev/restart-attempt"], "0")
        wait_for("attempt 1", lambda: any(p["metadata"]["labels"].get("trainctl.dev/restart-attempt") == "1"
                                          for p in self.pods("gang-notice")), timeout=60)
        self.assertGreaterEqual(time.monotonic() - told, 3.5, "the survivor kept its notice's seconds")
        job = self.job("PyTorchJob", "gang-notice")
        self.assertEqual(job["metadata"]["annotations"]["trainctl.dev/restart-attempt"], "1")
        self.assertNotIn(NOTICE, job["metadata"]["annotations"], "attempt 1 starts without a notice")


if __name__ == "__main__":
    unittest.main()
