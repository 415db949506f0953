"""Real Kueue preempting a running PyTorchJob on the real node (hack/cluster/kueue.sh on the node
cluster; the operator deployed from manifests/): the low-priority job's replicas are told
through their checkpoint-notice file (a real kubelet writes it), the master saves its step to a
hostPath folder and its done report lets the stop go ahead; Kueue's higher-priority job runs
and finishes; the low job is admitted again and its new master resumes from the saved step.

An MPIJob of v2beta1 (through Kueue's MPIJob integration, which reads that version: the
operator's conversion webhook serves it) waits for quota with Kueue's why, then runs.

Prints the times a user cares about: notice → the program saw it, and notice → its pods stopped
(docs/benchmarks.md).

Environment: see node_harness.py and ../operator/kueue_harness.py.
"""
import json
import shutil
import time
import unittest
import uuid

from node_harness import (NODE, OPERATOR_DEPLOYMENT, OPERATOR_NS, NodeTestCase, deploy_operator,
                          get_json, kubectl, new_namespace, wait_for)
from kueue_harness import Queues, require_kueue

NOTICE = "trainctl.dev/checkpoint-notice"

# The master counts steps; told (its notice file is not empty), it saves the step and waits to
# be stopped. Started again, it resumes from the saved step and ends 5 steps later.
MASTER = r"""
step=0
if [ -s /ckpt/step ]; then step=$(cat /ckpt/step); echo "RESUMED $step"; resumed=$step; fi
while true; do
  step=$((step+1)); echo "step $step"
  if [ -n "$resumed" ] && [ "$step" -ge $((resumed+5)) ]; then echo done; exit 0; fi
  if [ -z "$resumed" ] && [ -s "$TRAINCTL_NOTICE_FILE" ]; then
    echo "$step" >/ckpt/step.tmp && mv /ckpt/step.tmp /ckpt/step
    echo "SAVED $step $(date +%s)"; sleep 3600
  fi
  sleep 0.5
done
"""
WORKER = r"""
while true; do
  if [ -s /ckpt/step ] && [ ! -s "$TRAINCTL_NOTICE_FILE" ]; then sleep 3; exit 0; fi
  sleep 0.5
done
"""
SHORT = "sleep 5; echo done"


def replica(script, ckpt=None):
    spec = {"terminationGracePeriodSeconds": 5, "containers": [
        {"name": "pytorch", "image": NODE["busybox"], "command": ["sh", "-c", script],
         "resources": {"requests": {"cpu": "500m"}}}]}
    if ckpt:
        spec["volumes"] = [{"name": "ckpt", "hostPath": {"path": ckpt, "type": "DirectoryOrCreate"}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "ckpt", "mountPath": "/ckpt"}]
    return {"replicas": 1, "restartPolicy": "Never", "template": {"spec": spec}}


class KueuePreemptionOnTheNode(NodeTestCase):

    @classmethod
    def setUpClass(cls):
        require_kueue()
        deploy_operator()
        # The operator watches Kueue's objects when their CRDs are there at its start.
        kubectl("rollout", "restart", "-n", OPERATOR_NS, f"deployment/{OPERATOR_DEPLOYMENT}")
        kubectl("rollout", "status", "-n", OPERATOR_NS, f"deployment/{OPERATOR_DEPLOYMENT}",
                "--timeout=180s", timeout=200)
        cls.ns = new_namespace("kueue")
        cls.queues = Queues(cls.ns, cpu=1).make()
        cls.low, cls.high = cls.queues.low, cls.queues.high
        cls.ckpt = f"/tmp/trainctl-kueue-node-{uuid.uuid4().hex[:8]}"

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        cls.queues.delete()
        shutil.rmtree(cls.ckpt, ignore_errors=True)

    def job(self, name, priority, master, worker, annotations=None):
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                "metadata": {"name": name, "namespace": self.ns, "annotations": annotations or {},
                             "labels": {"kueue.x-k8s.io/queue-name": "team",
                                        "kueue.x-k8s.io/priority-class": priority}},
                "spec": {"pytorchReplicaSpecs": {"Master": master, "Worker": worker}}}

    def pytorchjob(self, name):
        return get_json("pytorchjob", name, "-n", self.ns) or {}

    def logs(self, pod):
        return kubectl("logs", "-n", self.ns, pod, check=False).stdout

    def test_a_preempted_job_saves_on_its_notice_and_resumes_from_it(self):
        kubectl("apply", "-f", "-", input=json.dumps(self.job(
            "low", self.low, replica(MASTER, self.ckpt), replica(WORKER, self.ckpt),
            {"trainctl.dev/checkpoint-notice-seconds": "120"})))
        master = "low-master-0"
        wait_for("the low job stepping", lambda: "step 3" in self.logs(master), timeout=240, interval=1)

        kubectl("apply", "-f", "-", input=json.dumps(self.job(
            "high", self.high, replica(SHORT), replica(SHORT))))

        def told():
            pod = get_json("pod", master, "-n", self.ns) or {}
            return NOTICE in pod.get("metadata", {}).get("annotations", {}) and pod
        pod = wait_for("the low master told", told, timeout=120, interval=0.2)
        told_at = time.time()
        notice = json.loads(pod["metadata"]["annotations"][NOTICE])
        self.assertEqual(notice["reason"], "Suspended")
        self.assertTrue(self.pytorchjob("low")["spec"]["runPolicy"]["suspend"], "Kueue suspended it")

        def saved():
            for line in self.logs(master).splitlines():
                if line.startswith("SAVED "):
                    return line.split()
            return None
        _, step, saved_at = wait_for("the master saving", saved, timeout=90, interval=0.5)
        self.assertGreaterEqual(int(step), 3)
        # The program reports done (its service account may not patch pods: the test does it
        # for it, as docs/status-machine.md describes); the stop goes ahead at once.
        for pod_name in (master, "low-worker-0"):
            kubectl("annotate", "pod", pod_name, "-n", self.ns, "trainctl.dev/checkpoint-done=true",
                    "--overwrite", check=False)
        wait_for("the low job's pods gone", lambda: not (get_json(
            "pods", "-n", self.ns, "-l", "training.kubeflow.org/job-name=low") or {}).get("items"),
            timeout=120, interval=0.5)
        stopped_at = time.time()
        def preempted():
            for c in self.pytorchjob("low").get("status", {}).get("conditions", []):
                if c["type"] == "ReplicasReady" and c["reason"] == "Preempted":
                    return c
            return None
        why = wait_for("the low job's why: Preempted", preempted, timeout=60, interval=0.5)
        self.assertIn("was preempted by Kueue", why["message"])
        print(f"\nnotice → the program saw it: {int(saved_at) - told_at:+.1f} s (±1 s); "
              f"notice → pods gone (done reported): {stopped_at - told_at:.1f} s; "
              f"why: {why['message']}")
        self.assertLess(stopped_at - told_at, 110, "stopped once done, not at the notice's end")

        def finished(name):
            for c in self.pytorchjob(name).get("status", {}).get("conditions", []):
                if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                    return c
            return None
        self.assertEqual(wait_for("the high job to finish", lambda: finished("high"),
                                  timeout=240, interval=1)["type"], "Succeeded")
        # Admitted again, the low job's new master resumes from the saved step and succeeds.
        self.assertEqual(wait_for("the low job to finish", lambda: finished("low"),
                                  timeout=300, interval=1)["type"], "Succeeded")
        self.assertIn(f"RESUMED {step}", self.logs(master))

    def mpijob(self, name, seconds):
        """An MPIJob of kubeflow.org/v2beta1 (mpi-operator's API, converted to v1 by the operator's
        webhook for storage) whose launcher and one worker each take 500m for `seconds`."""
        def spec(role):
            return {"replicas": 1, "template": {"spec": {
                "terminationGracePeriodSeconds": 1, "containers": [
                    {"name": "mpi", "image": NODE["busybox"],
                     "command": ["sh", "-c", f"echo {role}; sleep {seconds}"],
                     "resources": {"requests": {"cpu": "500m"}}}]}}}
        return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                "metadata": {"name": name, "namespace": self.ns,
                             "labels": {"kueue.x-k8s.io/queue-name": "team"}},
                "spec": {"mpiReplicaSpecs": {"Launcher": spec("launcher"), "Worker": spec("worker")}}}

    def test_an_mpijob_v2beta1_waits_for_quota_with_kueues_why_then_runs(self):
        kubectl("apply", "-f", "-", input=json.dumps(self.mpijob("mpi-first", 15)))

        def mpi(name):
            return get_json("mpijobs.v2beta1.kubeflow.org", name, "-n", self.ns) or {}

        def condition(name, ctype):
            for c in mpi(name).get("status", {}).get("conditions", []):
                if c["type"] == ctype:
                    return c
            return None
        wait_for("the first MPIJob running", lambda: (condition("mpi-first", "Running") or {})
                 .get("status") == "True", timeout=180, interval=1)
        kubectl("apply", "-f", "-", input=json.dumps(self.mpijob("mpi-second", 1)))
        why = wait_for("the second MPIJob's why", lambda: (lambda c: c if c and c["reason"] ==
                       "KueuePending" else None)(condition("mpi-second", "ReplicasReady")),
                       timeout=90, interval=0.5)
        self.assertIn(f'ClusterQueue "{self.queues.cq}"', why["message"])
        self.assertIn("insufficient unused quota for cpu", why["message"])
        self.assertTrue(mpi("mpi-second")["spec"]["runPolicy"]["suspend"], "Kueue's webhook")
        self.assertEqual((get_json("pods", "-n", self.ns, "-l",
                                   "training.kubeflow.org/job-name=mpi-second") or {})
                         .get("items"), [])
        for name in ("mpi-first", "mpi-second"):
            done = wait_for(f"{name} to finish", lambda: next(
                (c for c in mpi(name).get("status", {}).get("conditions", [])
                 if c["type"] in ("Succeeded", "Failed") and c["status"] == "True"), None),
                timeout=240, interval=1)
            self.assertEqual(done["type"], "Succeeded", json.dumps(mpi(name).get("status")))


if __name__ == "__main__":
    unittest.main()
