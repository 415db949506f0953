"""The real JobSet controller (sigs.k8s.io/jobset, the version Kubeflow Trainer v2.3.0 pins) in the
test cluster, as hack/cluster/jobset.sh starts it (CTest fixture `jobset`, or
`TRAINCTL_JOBSET=1 hack/cluster/up.sh`): upstream's CRD, RBAC and webhooks, the webhooks reached
on 127.0.0.1 through the cluster's CA. A JobSet of two replicated Jobs, the second waiting for the
first to be Ready, runs to Completed on the kwok nodes: the controller makes the Jobs in order,
the headless Service and (through the controller manager) the pods with JobSet's labels and
hostnames; the mutating webhooks default the JobSet and label the pods, the validating webhook
refuses a bad JobSet with upstream's message.

Environment: as harness.py; TRAINCTL_PORT_BASE (the controller's health port is base+92).
"""
import json
import os
import unittest
import urllib.request
import uuid
from datetime import datetime

from harness import get_json, kubectl, run_for, wait_for

HEALTH_PORT = int(os.environ.get("TRAINCTL_PORT_BASE", "29400")) + 92
# kwok's stage that ends a running pod (hack/cluster/kwok/pod-stages.yaml) takes pods with this
# label, whatever its value.
KWOK_FINISHES = {"training.kubeflow.org/job-name": "jobset"}


def controller_ready():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HEALTH_PORT}/readyz", timeout=2) as r:
            return r.read().decode() == "ok"
    except OSError:
        return False


def replicated_job(name, replicas, pods, annotations, depends_on=None):
    """A replicated Job of `replicas` Indexed Jobs of `pods` pods each; restartPolicy,
    completionMode and the network are left to JobSet's defaulting webhook."""
    rjob = {"name": name, "replicas": replicas, "template": {"spec": {
        "parallelism": pods, "completions": pods, "backoffLimit": 0,
        "template": {"metadata": {"labels": dict(KWOK_FINISHES), "annotations": annotations},
                     "spec": {"containers": [{"name": "main", "image": "example.invalid/train:1",
                                              "command": ["python3", "train.py"]}]}}}}}
    if depends_on:
        rjob["dependsOn"] = [{"name": depends_on, "status": "Ready"}]
    return rjob


def jobset(name, namespace, *rjobs):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicatedJobs": list(rjobs)}}


def timestamp(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").timestamp()


class JobSetController(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not controller_ready():
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}/readyz: "
                                 "start it with `TRAINCTL_JOBSET=1 hack/cluster/up.sh` (or "
                                 "hack/cluster/jobset.sh up on a running cluster)")
        cls.ns = "js-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def get(self, kind, name):
        return get_json(kind, name, "-n", self.ns)

    def items(self, kind, name):
        return (get_json(kind, "-n", self.ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
                or {}).get("items", [])

    def controller_log(self):
        path = os.path.join(os.environ.get("TRAINCTL_CLUSTER_DIR", ""), "logs", "jobset-controller.log")
        try:
            with open(path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def test_two_replicated_jobs_run_in_order_to_completed(self):
        # The launcher's pod is Ready 2 s after it is made, so the workers' Jobs, which wait for
        # it, are at least 2 s younger than the launcher's.
        spec = jobset("train", self.ns,
                      replicated_job("launcher", 1, 1, {"trainctl.dev/kwok-start-seconds": "2",
                                                        **run_for(4)}),
                      replicated_job("workers", 2, 2, run_for(2), depends_on="launcher"))
        kubectl("create", "-f", "-", input=json.dumps(spec))

        # The mutating webhook's defaults, as stored.
        stored = self.get("jobset", "train")["spec"]
        self.assertEqual(stored.get("successPolicy"), {"operator": "All"})
        self.assertEqual(stored.get("startupPolicy"), {"startupPolicyOrder": "AnyOrder"})
        self.assertEqual(stored.get("network"), {"enableDNSHostnames": True, "publishNotReadyAddresses": True})
        for rjob in stored["replicatedJobs"]:
            self.assertEqual(rjob["template"]["spec"].get("completionMode"), "Indexed")
            self.assertEqual(rjob["template"]["spec"]["template"]["spec"].get("restartPolicy"), "OnFailure")

        try:
            done = wait_for("JobSet train Completed", lambda: (lambda js: js if any(
                c["type"] == "Completed" and c["status"] == "True"
                for c in js.get("status", {}).get("conditions", [])) else None)(
                    self.get("jobset", "train") or {}), timeout=120)
        except AssertionError as e:
            raise AssertionError(f"{e}\njobs: {[j['metadata']['name'] for j in self.items('jobs', 'train')]}\n"
                                 f"controller log:\n{self.controller_log()}")
        self.assertEqual(done["status"].get("terminalState"), "Completed")
        statuses = {s["name"]: s for s in done["status"]["replicatedJobsStatus"]}
        self.assertEqual(sorted(statuses), ["launcher", "workers"])
        self.assertEqual((statuses["launcher"]["succeeded"], statuses["workers"]["succeeded"]), (1, 2))

        # One Job per replica, named <jobset>-<replicated job>-<index>, in dependency order.
        jobs = {j["metadata"]["name"]: j for j in self.items("jobs", "train")}
        self.assertEqual(sorted(jobs), ["train-launcher-0", "train-workers-0", "train-workers-1"])
        for name, job in jobs.items():
            self.assertEqual(job["metadata"]["ownerReferences"][0]["kind"], "JobSet")
            self.assertEqual(job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"],
                             name.rsplit("-", 2)[1])
        launcher_made = timestamp(jobs["train-launcher-0"]["metadata"]["creationTimestamp"])
        for name in ("train-workers-0", "train-workers-1"):
            self.assertGreaterEqual(timestamp(jobs[name]["metadata"]["creationTimestamp"]) - launcher_made, 2,
                                    f"{name} was made before the launcher was Ready")

        # The headless Service named after the JobSet (the pods' subdomain).
        service = self.get("service", "train")
        self.assertEqual(service["spec"]["clusterIP"], "None")
        self.assertEqual(service["spec"]["selector"], {"jobset.sigs.k8s.io/jobset-name": "train"})
        self.assertTrue(service["spec"]["publishNotReadyAddresses"])

        # Pods: JobSet's labels (the priority one from its pod webhook), hostnames
        # <jobset>-<replicated job>-<job index>-<pod index> under the Service's subdomain.
        pods = self.items("pods", "train")
        hostnames = set()
        for pod in pods:
            labels = pod["metadata"]["labels"]
            self.assertEqual(labels["jobset.sigs.k8s.io/jobset-name"], "train")
            self.assertIn(labels["jobset.sigs.k8s.io/replicatedjob-name"], ("launcher", "workers"))
            self.assertIn("jobset.sigs.k8s.io/job-key", labels)
            self.assertEqual(labels["jobset.sigs.k8s.io/priority"], "0")
            self.assertEqual(pod["spec"]["subdomain"], "train")
            self.assertEqual(pod["spec"]["hostname"], "train-{}-{}-{}".format(
                labels["jobset.sigs.k8s.io/replicatedjob-name"], labels["jobset.sigs.k8s.io/job-index"],
                labels["batch.kubernetes.io/job-completion-index"]))
            self.assertEqual(pod["status"]["phase"], "Succeeded")
            hostnames.add(pod["spec"]["hostname"])
        self.assertEqual(hostnames, {"train-launcher-0-0", "train-workers-0-0", "train-workers-0-1",
                                     "train-workers-1-0", "train-workers-1-1"})

    def test_validating_webhook_refuses_a_first_job_with_dependencies(self):
        bad = jobset("bad", self.ns, replicated_job("first", 1, 1, run_for(1), depends_on="second"),
                     replicated_job("second", 1, 1, run_for(1)))
        out = kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
        self.assertNotEqual(out.returncode, 0)
        # The webhook answers 422 Invalid, which the API server passes on as it is; the rule is
        # the webhook's only (the CRD's schema has none like it).
        self.assertIn('The JobSet "bad" is invalid', out.stderr)
        self.assertIn("DependsOn can't be set for the first ReplicatedJob", out.stderr)
        self.assertIsNone(self.get("jobset", "bad"))


if __name__ == "__main__":
    unittest.main()
