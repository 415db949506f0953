"""Real Kueue (sigs.k8s.io/kueue, built from the Go module proxy; hack/cluster/kueue.sh, CTest
fixture `kueue`) admitting the operator's jobs on the kwok cluster, through Kueue's own
kubeflow.org integrations: its webhook suspends a queued job at creation, its Workload holds the
quota, it resumes the job on admission and suspends it again to preempt it.

Each class has its own namespace, ResourceFlavor, ClusterQueue (2 CPUs, preemption of lower
priorities within the queue) and LocalQueue "team", and its own `trainctl operator`. What is
checked is what a user reads: the job's ReplicasReady reason and message (Kueue's own words,
with the LocalQueue and ClusterQueue), `trainctl get -o wide` and `describe`, the pods that exist
or not, the checkpoint notice of a preempted job, and the bad inputs (no such LocalQueue, a
Workload deleted by hand, Kueue's webhook down).

Environment: as harness.py and kueue_harness.py; TRAINCTL_REPO (hack/cluster/kueue.sh, to start Kueue again after the webhook-down test).
"""
import json
import os
import signal
import subprocess
import time
import unittest
import uuid

from harness import (CLUSTER_DIR, FOREVER, KUBECONFIG, REPO, Operator, OperatorTestCase,
                     cluster_cli, get_json, install_crds, kubectl, make_job, ready_condition,
                     run_for, wait_for)
from kueue_harness import PRIORITY_LABEL, QUEUE_LABEL, Queues, apply, kueue_ready, require_kueue

def queued_job(kind, name, namespace, replicas, queue="team", cpu="1", priority=None,
               annotations=None):
    """A job in `queue` whose every replica requests `cpu` (what Kueue counts against quota)."""
    job = make_job(kind, name, namespace, replicas)
    job["metadata"]["labels"] = {QUEUE_LABEL: queue}
    if priority:
        job["metadata"]["labels"][PRIORITY_LABEL] = priority
    if annotations:
        job["metadata"]["annotations"] = annotations
    field = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    for spec in job["spec"][field].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return job


class KueueTestCase(OperatorTestCase):
    """A namespace with its own queues (2 CPUs) and operator; Kueue must be running."""

    @classmethod
    def setUpClass(cls):
        require_kueue()
        install_crds()
        cls.ns = "kq-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.queues = Queues(cls.ns, cpu=2).make()
        cls.flavor, cls.cq = cls.queues.flavor, cls.queues.cq
        cls.low, cls.high = cls.queues.low, cls.queues.high
        cls.op = Operator(cls.ns)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        cls.queues.delete()

    def cli(self, *args):
        return cluster_cli(self.ns, *args)

    def wait_reason(self, kind, name, reason, timeout=60):
        return super().wait_reason(kind, name, reason, timeout,
                                   explain=lambda: f"workloads: {self.workloads()}\n")

    def workloads(self):
        items = (get_json("workloads.kueue.x-k8s.io", "-n", self.ns) or {}).get("items", [])
        return {w["metadata"]["ownerReferences"][0]["name"]: w for w in items
                if w["metadata"].get("ownerReferences")}

    def suspended(self, kind, name):
        return (self.job(kind, name) or {}).get("spec", {}).get("runPolicy", {}).get("suspend")


class Admission(KueueTestCase):

    def check_second_waits_then_runs(self, kind, first_types, second_types):
        """Two jobs of 2 CPUs each in a 2-CPU queue: the second waits, saying why in Kueue's words,
        and runs once the first has finished."""
        self.create(queued_job(kind, f"{kind.lower()}-a", self.ns,
                               {t: (1, run_for(8)) for t in first_types}))
        self.wait_condition(kind, f"{kind.lower()}-a", "Running", timeout=60)
        second = f"{kind.lower()}-b"
        self.create(queued_job(kind, second, self.ns, {t: (1, run_for(1)) for t in second_types}))
        c = self.wait_reason(kind, second, "KueuePending")
        # Kueue's webhook suspended it at creation (it was created unsuspended).
        self.assertTrue(self.suspended(kind, second))
        self.assertIn(f'in LocalQueue "team" (ClusterQueue "{self.cq}")', c["message"])
        self.assertIn(f"insufficient unused quota for cpu in flavor {self.flavor}", c["message"])
        workload = self.workloads()[second]["metadata"]["name"]
        self.assertIn(f"(Workload {workload})", c["message"])
        self.assertEqual(self.pods(second), [], "no pods while Kueue holds it")
        return second, c

    def test_a_pytorchjob_waits_for_quota_with_kueues_why_and_runs_after_the_first(self):
        second, c = self.check_second_waits_then_runs("PyTorchJob", ("Master", "Worker"),
                                                      ("Master", "Worker"))
        # The same why in every reader: get -o wide, describe (text and JSON).
        wide = self.cli("get", "pytorchjobs", "-o", "wide")
        self.assertEqual(wide.returncode, 0, wide.stderr)
        self.assertIn("KueuePending: ", wide.stdout)
        described = self.cli("describe", "pytorchjob", second)
        self.assertEqual(described.returncode, 0, described.stderr)
        self.assertIn(f'ClusterQueue "{self.cq}"', described.stdout)
        doc = json.loads(self.cli("describe", "pytorchjob", second, "-o", "json").stdout)
        self.assertEqual(doc["why"]["reason"], "KueuePending")
        self.assertIn("insufficient unused quota", doc["why"]["message"])
        from trainctl import TrainingClient
        why = TrainingClient(config_file=KUBECONFIG, namespace=self.ns, backend="kubernetes",
                             job_kind="PyTorchJob").get_job_why(second)
        self.assertEqual(why["reason"], "KueuePending")
        self.assertIn(f'ClusterQueue "{self.cq}"', why["message"])
        # The first finishes and hands its quota on: the second is admitted, runs and succeeds.
        self.wait_condition("PyTorchJob", "pytorchjob-a", "Succeeded", timeout=60)
        self.wait_condition("PyTorchJob", second, "Succeeded", timeout=90)
        self.assertFalse(self.suspended("PyTorchJob", second))
        admitted = self.workloads()[second]["status"]
        self.assertEqual(admitted["admission"]["clusterQueue"], self.cq)

    def test_a_tfjob_waits_for_quota_too(self):
        self.check_second_waits_then_runs("TFJob", ("Chief", "Worker"), ("Worker",) * 1)
        self.wait_condition("TFJob", "tfjob-b", "Succeeded", timeout=90)

    def test_a_job_naming_no_such_localqueue_says_so(self):
        self.create(queued_job("PyTorchJob", "lost", self.ns, {"Master": (1, FOREVER)},
                               queue="no-such-queue"))
        c = self.wait_reason("PyTorchJob", "lost", "Inadmissible")
        self.assertIn('Kueue cannot admit it in LocalQueue "no-such-queue"', c["message"])
        self.assertIn("LocalQueue no-such-queue doesn't exist", c["message"])
        self.assertIn(("Warning", "Inadmissible"), {(e[0], e[1]) for e in self.events("lost")})
        self.assertEqual(self.pods("lost"), [])

    def test_a_workload_deleted_by_hand_is_made_again_and_the_why_follows(self):
        self.create(queued_job("PyTorchJob", "hog", self.ns, {"Master": (1, run_for(20)), "Worker": (1, run_for(20))}))
        self.wait_condition("PyTorchJob", "hog", "Running", timeout=60)
        self.create(queued_job("PyTorchJob", "waiter", self.ns, {"Master": (1, run_for(1))}))
        self.wait_reason("PyTorchJob", "waiter", "KueuePending")
        old = self.workloads()["waiter"]["metadata"]
        kubectl("delete", "workloads.kueue.x-k8s.io", old["name"], "-n", self.ns)

        def remade():
            w = self.workloads().get("waiter")
            return w if w and w["metadata"]["uid"] != old["uid"] else None
        wait_for("a Workload again", remade, timeout=60)
        c = self.wait_reason("PyTorchJob", "waiter", "KueuePending")
        self.assertIn("insufficient unused quota", c["message"])
        self.assertTrue(self.suspended("PyTorchJob", "waiter"))
        self.assertEqual(self.pods("waiter"), [])
        kubectl("delete", "pytorchjob", "hog", "-n", self.ns)
        self.wait_condition("PyTorchJob", "waiter", "Succeeded", timeout=90)


class Preemption(KueueTestCase):

    def test_a_higher_priority_job_preempts_with_the_checkpoint_notice(self):
        notice_seconds = 6
        self.create(queued_job("PyTorchJob", "low", self.ns,
                               {"Master": (1, FOREVER), "Worker": (1, FOREVER)}, priority=self.low,
                               annotations={"trainctl.dev/checkpoint-notice-seconds":
                                            str(notice_seconds)}))
        self.wait_condition("PyTorchJob", "low", "Running", timeout=60)
        running = {p["metadata"]["name"] for p in self.live_pods("low")}
        self.assertEqual(len(running), 2)
        self.create(queued_job("PyTorchJob", "high", self.ns, {"Master": (1, run_for(3)), "Worker": (1, run_for(3))},
                               priority=self.high))

        # Kueue suspends the low job; its running pods are told before they stop.
        def told():
            pods = self.live_pods("low")
            notes = [p["metadata"].get("annotations", {}).get("trainctl.dev/checkpoint-notice")
                     for p in pods]
            return notes if pods and all(notes) else None
        notes = wait_for("the checkpoint notice on the low job's pods", told, timeout=60)
        told_at = time.monotonic()
        notice = json.loads(notes[0])
        self.assertEqual(notice["reason"], "Suspended")
        self.assertEqual(notice["seconds"], notice_seconds)
        self.assertTrue(self.suspended("PyTorchJob", "low"))
        self.assertEqual({p["metadata"]["name"] for p in self.live_pods("low")}, running,
                         "the pods run on while the notice runs")
        wait_for("the low job's pods stopped", lambda: not self.live_pods("low"), timeout=60)
        stopped_after = time.monotonic() - told_at
        self.assertGreater(stopped_after, notice_seconds - 2.5)
        c = self.wait_reason("PyTorchJob", "low", "Preempted")
        self.assertIn("was preempted by Kueue: Preempted to accommodate a workload", c["message"])
        self.assertIn(f'it waits to be admitted again in LocalQueue "team" (ClusterQueue "{self.cq}")',
                      c["message"])
        self.assertIn("Preempted", {e[1] for e in self.events("low")})
        # The high job runs and finishes; the low one is admitted again and runs.
        self.wait_condition("PyTorchJob", "high", "Succeeded", timeout=90)
        wait_for("the low job running again", lambda: len(self.live_pods("low")) == 2 and
                 not self.suspended("PyTorchJob", "low"), timeout=90)
        wait_for("the low job's ReplicasReady True", lambda: (ready_condition(
            self.job("PyTorchJob", "low")) or {}).get("status") == "True", timeout=60)
        print(f"notice to stop on kwok: {stopped_after:.1f} s (notice {notice_seconds} s)")


class TrainJobAdmission(KueueTestCase):
    """A TrainJob through Kueue's own TrainJob integration (its runtime read by Kueue to size the
    Workload), on the real JobSet controller (fixture jobset)."""

    def trainjob(self, name, seconds):
        from test_trainjob_cluster import torch_runtime, trainjob
        self.runtime = f"torch-{seconds}"
        apply(torch_runtime(self.runtime, self.ns, seconds=seconds))
        tj = trainjob(name, self.ns, self.runtime, numNodes=2,
                      resourcesPerNode={"requests": {"cpu": "1"}})
        tj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
        apply(tj)

    def trainjob_status(self, name):
        tj = get_json("trainjobs.trainer.kubeflow.org", name, "-n", self.ns) or {}
        return tj, {c["type"]: c for c in tj.get("status", {}).get("conditions", [])}

    def test_a_trainjob_waits_for_quota_with_kueues_why_and_runs_after_the_first(self):
        from test_trainjob_cluster import jobset_controller_ready
        self.assertTrue(jobset_controller_ready(), "the JobSet controller (fixture jobset)")
        self.trainjob("first", 8)
        wait_for("the first TrainJob's pods", lambda: len(self.pods_of("first")) == 2, timeout=90)
        self.trainjob("second", 1)

        def held():
            tj, conditions = self.trainjob_status("second")
            c = conditions.get("ReplicasReady")
            return c if c and c["reason"] == "KueuePending" else None
        c = wait_for("the second TrainJob's why", held, timeout=90)
        self.assertIn(f'in LocalQueue "team" (ClusterQueue "{self.cq}")', c["message"])
        self.assertIn("insufficient unused quota for cpu", c["message"])
        tj, _ = self.trainjob_status("second")
        self.assertTrue(tj["spec"]["suspend"], "Kueue's webhook suspended it")
        self.assertEqual(self.pods_of("second"), [])
        self.assertIn("second", self.workloads(), "Kueue's Workload for it")

        def complete(name):
            return (self.trainjob_status(name)[1].get("Complete") or {}).get("status") == "True"
        wait_for("the first TrainJob Complete", lambda: complete("first"), timeout=120)
        wait_for("the second TrainJob Complete", lambda: complete("second"), timeout=120)
        tj, conditions = self.trainjob_status("second")
        self.assertNotIn("ReplicasReady", conditions)

    def pods_of(self, name):
        return (get_json("pods", "-n", self.ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
                or {}).get("items", [])


class WebhookDown(KueueTestCase):
    """Last: it stops Kueue and starts it again."""

    def test_a_create_fails_with_kueues_error_and_nothing_is_made(self):
        pid_file = os.path.join(CLUSTER_DIR, "run", "kueue-controller.pid")
        with open(pid_file) as f:
            pid = int(f.read().strip())
        os.kill(pid, signal.SIGKILL)
        try:
            wait_for("Kueue gone", lambda: not kueue_ready(), timeout=30)
            job = queued_job("PyTorchJob", "refused", self.ns, {"Master": (1, FOREVER)})
            out = kubectl("create", "-f", "-", input=json.dumps(job), check=False)
            self.assertNotEqual(out.returncode, 0, out.stdout)
            kueue_hooks = {h["name"] for c in get_json(
                "mutatingwebhookconfigurations", "-l", "app.kubernetes.io/name=kueue")["items"]
                for h in c["webhooks"]}
            self.assertIn("mpytorchjob.kb.io", kueue_hooks)
            self.assertIn('failed calling webhook "mpytorchjob.kb.io"', out.stderr)
            self.assertIsNone(self.job("PyTorchJob", "refused"), "nothing half-made")
            self.assertEqual(self.pods("refused"), [])
        finally:
            subprocess.run([os.path.join(REPO, "hack/cluster/kueue.sh"), "up"], check=True,
                           timeout=180)
        self.create(queued_job("PyTorchJob", "after", self.ns, {"Master": (1, run_for(1))}))
        self.wait_condition("PyTorchJob", "after", "Succeeded", timeout=90)


if __name__ == "__main__":
    unittest.main()
