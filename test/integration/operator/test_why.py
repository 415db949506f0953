"""Tell the user why (docs/status-machine.md, "Why"), on the real control plane with the real
operator: the ReplicasReady reasons the kwok cluster produces for real (the real scheduler's
verdict, a ResourceQuota the API server enforces, a job suspended for Kueue). The container
states (a pull error, a missing ConfigMap, a crash loop, OOMKilled, the first failure with its
termination message or log, a silent process) come from a real kubelet in
test/integration/node/test_why_node.py; kwok only simulated them."""
import json

from harness import (FOREVER, OperatorTestCase, cluster_cli, kubectl, make_job, ready_condition,
                     wait_for)


class WhyNotRunning(OperatorTestCase):

    def cli(self, *args):
        return cluster_cli(self.ns, *args)

    def test_unschedulable_names_the_schedulers_verdict(self):
        job = make_job("PyTorchJob", "gpu", self.ns, {"Master": (1, FOREVER), "Worker": (2, FOREVER)})
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 16}}  # nodes have 8
        self.create(job)
        c = self.wait_reason("PyTorchJob", "gpu", "Unschedulable")
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

    def test_kueue_suspended_job_waits_for_admission(self):
        job = make_job("PyTorchJob", "queued", self.ns, {"Master": (1, FOREVER)},
                       run_policy={"suspend": True})
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
        self.create(job)
        c = self.wait_reason("PyTorchJob", "queued", "WaitingForAdmission")
        self.assertIn('LocalQueue "team-a"', c["message"])
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
        # Events are written on their own budget, after the status: waited for, not assumed.
        wait_for("the QuotaExceeded event", lambda: ("Warning", "QuotaExceeded") in {
            (e[0], e[1]) for e in self.events("quota")}, timeout=30)
