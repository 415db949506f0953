"""MultiKueue across two clusters, with real Kueue on both (CTest label `kueue`): the test cluster
is the manager, and this module brings up a second kwok cluster as the worker
(hack/cluster/up.sh with a cluster folder and port base of its own, JobSet, Kueue and `trainctl
operator` on it). A PyTorchJob created in the manager's queue gets Kueue's
`managedBy: kueue.x-k8s.io/multikueue`, so the manager's operator leaves it alone (no pods, no
status of its own); Kueue copies it to the worker, where the worker's operator runs it, and
copies the worker's status back: the manager's job ends Succeeded with the worker's conditions.

Environment: as harness.py and kueue_harness.py; TRAINCTL_REPO. The worker's port base is
TRAINCTL_MULTIKUEUE_PORT_BASE (default 29750: none of its ports is one of the test cluster's).
"""
import json
import os
import subprocess
import unittest
import uuid

from harness import (CLUSTER_DIR, KUBECTL, REPO, Operator, get_json, install_crds, kubectl,
                     make_job, run_for, wait_for)
from kueue_harness import QUEUE_LABEL, Queues, apply, require_kueue

WORKER_DIR = os.path.join(os.path.dirname(CLUSTER_DIR), "multikueue-worker")
WORKER_BASE = os.environ.get("TRAINCTL_MULTIKUEUE_PORT_BASE", "29750")
WORKER_ENV = {**os.environ, "TRAINCTL_CLUSTER_DIR": WORKER_DIR, "TRAINCTL_PORT_BASE": WORKER_BASE,
              "TRAINCTL_KWOK_NODES": "2"}
WORKER_KUBECONFIG = os.path.join(WORKER_DIR, "kubeconfig")
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def script(name, *args, timeout=600):
    out = subprocess.run([os.path.join(REPO, "hack/cluster", name), *args], env=WORKER_ENV,
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise AssertionError(f"{name} {' '.join(args)} failed:\n{out.stdout[-2000:]}{out.stderr[-3000:]}")


def worker_kubectl(*args, input=None, check=True):
    out = subprocess.run([KUBECTL, "--kubeconfig", WORKER_KUBECONFIG, *args], input=input,
                         capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        raise AssertionError(f"kubectl (worker) {' '.join(args)} failed: {out.stderr.strip()}")
    return out


def worker_get(*args):
    out = worker_kubectl("get", "-o", "json", *args, check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


class MultiKueueAcrossTwoClusters(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        # unittest skips tearDownClass when this raises: the worker would be left running.
        try:
            cls.set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def set_up(cls):
        require_kueue()
        install_crds()
        cls.ns = "mk-" + uuid.uuid4().hex[:8]
        # The worker: a cluster of its own with Kueue (which applies the CRDs) and an operator.
        # MultiKueue wants every API Kueue integrates on the worker too (JobSet's included).
        script("up.sh", "-q")
        script("jobset.sh", "up")
        script("kueue.sh", "up")
        worker_kubectl("create", "namespace", cls.ns)
        cls.worker_queues = Queues(cls.ns, cpu=2, run_kubectl=worker_kubectl, get=worker_get).make()
        cls.worker_op = Operator(cls.ns, kubeconfig=WORKER_KUBECONFIG)
        cls.worker_op.log_path = os.path.join(WORKER_DIR, f"operator-{cls.ns}.log")
        cls.worker_op.start()
        # The manager: the test cluster, its ClusterQueue behind MultiKueue's admission check.
        kubectl("create", "namespace", cls.ns)
        with open(WORKER_KUBECONFIG) as f:
            kubeconfig = f.read()
        cls.secret = f"worker-{cls.ns}"
        apply({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": cls.secret, "namespace": "kueue-system"},
               "stringData": {"kubeconfig": kubeconfig}})
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
               "metadata": {"name": cls.secret},
               "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret",
                                                         "location": cls.secret}}}})
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": cls.secret}, "spec": {"clusters": [cls.secret]}})
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": cls.secret},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                       "name": cls.secret}}})
        wait_for("the worker cluster Active in the manager", lambda: any(
            c["type"] == "Active" and c["status"] == "True"
            for c in (get_json("multikueuecluster", cls.secret) or {}).get("status", {})
            .get("conditions", [])), timeout=60)
        cls.queues = Queues(cls.ns, cpu=2, admission_check=cls.secret).make()
        cls.op = Operator(cls.ns)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        for op in ("op", "worker_op"):
            if hasattr(cls, op):
                getattr(cls, op).stop()
        if hasattr(cls, "ns"):
            kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        if hasattr(cls, "queues"):
            cls.queues.delete()
        for kind in ("admissioncheck", "multikueueconfig", "multikueuecluster"):
            kubectl("delete", kind, getattr(cls, "secret", "none"), "--ignore-not-found",
                    "--wait=false", check=False)
        kubectl("delete", "secret", getattr(cls, "secret", "none"), "-n", "kueue-system",
                "--ignore-not-found", check=False)
        subprocess.run([os.path.join(REPO, "hack/cluster/down.sh")], env=WORKER_ENV,
                       capture_output=True, timeout=300)

    def test_a_job_runs_on_the_worker_and_its_status_comes_back(self):
        job = make_job("PyTorchJob", "remote", self.ns,
                       {"Master": (1, run_for(3)), "Worker": (1, run_for(3))})
        job["metadata"]["labels"] = {QUEUE_LABEL: "team"}
        kubectl("create", "-f", "-", input=json.dumps(job))
        manager_job = get_json("pytorchjob", "remote", "-n", self.ns)
        self.assertEqual(manager_job["spec"]["runPolicy"].get("managedBy"), MULTIKUEUE,
                         "Kueue's webhook hands the job to MultiKueue")

        remote = wait_for("the job in the worker cluster",
                          lambda: worker_get("pytorchjob", "remote", "-n", self.ns), timeout=90)
        self.assertEqual(remote["metadata"]["labels"].get(QUEUE_LABEL), "team")

        def succeeded(get):
            j = get() or {}
            return any(c["type"] == "Succeeded" and c["status"] == "True"
                       for c in j.get("status", {}).get("conditions", []))
        wait_for("the worker's job Succeeded",
                 lambda: succeeded(lambda: worker_get("pytorchjob", "remote", "-n", self.ns)),
                 timeout=120)
        self.assertEqual(len((worker_get("pods", "-n", self.ns, "-l",
                                         "training.kubeflow.org/job-name=remote") or {})
                             .get("items", [])), 2, "the worker's operator made the pods")
        wait_for("the manager's job Succeeded (the worker's status copied back)",
                 lambda: succeeded(lambda: get_json("pytorchjob", "remote", "-n", self.ns)),
                 timeout=120)
        self.assertEqual((get_json("pods", "-n", self.ns) or {}).get("items"), [],
                         "the manager's operator left the job to MultiKueue")


if __name__ == "__main__":
    unittest.main()
