"""The trainer.kubeflow.org/v1alpha1 CRDs (hack/gen-crds.py → manifests/crds/trainer.kubeflow.org_*)
on the real API server, which does all the work here (no operator runs): the resources served
with Kubeflow Trainer v2.3.0's names and scope, the defaults its schema fills in, and the requests
its schema refuses, with the messages upstream's CRDs give (users and clients read them)."""
import json
import os
import unittest
import uuid

from harness import REPO, get_json, kubectl

GROUP = "trainer.kubeflow.org"
PLURALS = ("trainjobs", "trainingruntimes", "clustertrainingruntimes")
CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
IMMUTABLE = "field is immutable"


def install_trainer_crds():
    for plural in PLURALS:
        kubectl("apply", "--server-side", "--force-conflicts", "-f",
                os.path.join(REPO, "manifests", "crds", f"{GROUP}_{plural}.yaml"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd",
            *(f"{plural}.{GROUP}" for plural in PLURALS))


def trainjob(name, **spec):
    spec.setdefault("runtimeRef", {"name": "torch-distributed"})
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name}, "spec": spec}


def pod_template(container, **labels):
    return {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": container, "image": "example.invalid/mpi:1",
                                     "command": ["mpirun", "python3", "train.py"],
                                     "ports": [{"containerPort": 2222}],
                                     "resources": {"limits": {"cpu": "1"}}}]}}


def runtime(kind, name, ml_policy, **spec):
    """A runtime with a launcher and a node replicated job."""
    step = "trainer.kubeflow.org/trainjob-ancestor-step"
    jobs = [{"name": "launcher", "template": {"metadata": {"labels": {step: "trainer"}},
                                               "spec": {"template": pod_template("node")}}},
            {"name": "node", "template": {"spec": {"template": pod_template("node", role="worker")}}}]
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": kind, "metadata": {"name": name},
            "spec": {"mlPolicy": ml_policy, "template": {"spec": {"replicatedJobs": jobs}}, **spec}}


class TrainerCrds(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        install_trainer_crds()
        cls.ns = "tj-" + uuid.uuid4().hex[:8]
        cls.suffix = cls.ns[3:]
        kubectl("create", "namespace", cls.ns)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "clustertrainingruntimes", "-l", f"test={cls.suffix}", "--wait=false", check=False)
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def create(self, obj, namespaced=True):
        obj.setdefault("metadata", {}).setdefault("labels", {})["test"] = self.suffix
        args = ["create", "-f", "-", "-o", "json"] + (["-n", self.ns] if namespaced else [])
        return json.loads(kubectl(*args, input=json.dumps(obj)).stdout)

    def refused(self, obj, message, namespaced=True):
        """Creating `obj` fails with `message` in the API server's answer, and nothing is stored."""
        args = ["create", "-f", "-"] + (["-n", self.ns] if namespaced else [])
        out = kubectl(*args, input=json.dumps(obj), check=False)
        self.assertNotEqual(out.returncode, 0, f"accepted: {json.dumps(obj)}")
        self.assertIn(message, out.stderr)
        where = ["-n", self.ns] if namespaced else []
        self.assertIsNone(get_json(obj["kind"].lower(), obj["metadata"]["name"], *where))
        return out.stderr

    def patch_refused(self, name, patch, message):
        out = kubectl("patch", "trainjob", name, "-n", self.ns, "--type=merge", "-p", json.dumps(patch),
                      check=False)
        self.assertNotEqual(out.returncode, 0, f"patch accepted: {patch}")
        self.assertIn(message, out.stderr)
        return out.stderr

    def test_resources_served_with_upstreams_names_and_scope(self):
        served = json.loads(kubectl("get", "--raw", f"/apis/{GROUP}/v1alpha1").stdout)
        resources = {r["name"]: r for r in served["resources"]}
        self.assertEqual(set(resources), {"trainjobs", "trainjobs/status", "trainingruntimes",
                                          "clustertrainingruntimes"})
        self.assertEqual([(resources[p]["kind"], resources[p]["singularName"], resources[p]["namespaced"])
                          for p in PLURALS],
                         [("TrainJob", "trainjob", True), ("TrainingRuntime", "trainingruntime", True),
                          ("ClusterTrainingRuntime", "clustertrainingruntime", False)])
        for plural in PLURALS:
            self.assertNotIn("shortNames", resources[plural], plural)

    def test_state_column_is_the_last_condition_and_status_is_a_subresource(self):
        name = "columns-" + self.suffix
        self.create(trainjob(name))
        condition = {"type": "Complete", "status": "True", "reason": "JobsCompleted",
                     "message": "done", "lastTransitionTime": "2026-01-02T03:04:05Z"}
        suspended = dict(condition, type="Suspended", status="False", reason="Resumed")
        kubectl("patch", "trainjob", name, "-n", self.ns, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"conditions": [suspended, condition]}}))
        table = kubectl("get", "trainjob", name, "-n", self.ns).stdout.splitlines()
        self.assertEqual(table[0].split(), ["NAME", "STATE", "AGE"])
        self.assertEqual(table[1].split()[:2], [name, "Complete"])
        # The main resource does not write status.
        kubectl("patch", "trainjob", name, "-n", self.ns, "--type=merge",
                "-p", json.dumps({"status": {"conditions": [suspended]}}))
        job = get_json("trainjob", name, "-n", self.ns)
        self.assertEqual([c["type"] for c in job["status"]["conditions"]], ["Suspended", "Complete"])

    def test_minimal_trainjob_gets_upstreams_defaults(self):
        job = self.create(trainjob("minimal"))
        self.assertEqual(job["spec"]["runtimeRef"], {"name": "torch-distributed", "apiGroup": GROUP,
                                                     "kind": "ClusterTrainingRuntime"})
        self.assertIs(job["spec"]["suspend"], False)
        self.assertEqual(job["spec"]["managedBy"], CONTROLLER)
        # What trainctl reads is kept as written.
        job = self.create(trainjob(
            "overrides", trainer={"image": "example.invalid/t:2", "numNodes": 2, "numProcPerNode": 4,
                                  "env": [{"name": "A", "value": "1"},
                                          {"name": "B", "valueFrom": {"secretKeyRef": {"key": "k"}}}],
                                  "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2, "memory": "1Gi"}}},
            runtimePatches=[{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {
                "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                    "metadata": {"labels": {"queue": "a"}},
                    "spec": {"nodeSelector": {"pool": "gpu"},
                             "containers": [{"name": "node", "env": [{"name": "C", "value": "3"}]}]}}}}}]}}}}]))
        trainer = job["spec"]["trainer"]
        self.assertEqual(trainer["env"][1], {"name": "B", "valueFrom": {"secretKeyRef": {"key": "k", "name": ""}}})
        self.assertEqual(trainer["resourcesPerNode"], {"limits": {"nvidia.com/gpu": 2, "memory": "1Gi"}})
        pod = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0][
            "template"]["spec"]["template"]
        self.assertEqual(pod["metadata"]["labels"], {"queue": "a"})
        self.assertEqual(pod["spec"]["containers"][0]["env"], [{"name": "C", "value": "3"}])

    def test_minimal_mpi_runtime_gets_upstreams_defaults(self):
        name = "mpi-" + self.suffix
        rt = self.create(runtime("ClusterTrainingRuntime", name, {"numNodes": 2, "mpi": {}},
                                 podGroupPolicy={"coscheduling": {}}), namespaced=False)
        spec = rt["spec"]
        self.assertEqual(spec["mlPolicy"]["mpi"], {"numProcPerNode": 1, "mpiImplementation": "OpenMPI",
                                                   "sshAuthMountPath": "/root/.ssh", "runLauncherAsNode": False})
        self.assertEqual(spec["podGroupPolicy"], {"coscheduling": {"scheduleTimeoutSeconds": 60}})
        jobs = spec["template"]["spec"]["replicatedJobs"]
        self.assertEqual([(j["name"], j["replicas"], j["groupName"]) for j in jobs],
                         [("launcher", 1, "default"), ("node", 1, "default")])
        # Labels that pick a replicated job's step, and the pod templates, are kept as written,
        # with the core schema's defaults a container gets in upstream's CRD (a port's protocol).
        self.assertEqual(jobs[0]["template"]["metadata"]["labels"],
                         {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"})
        want = pod_template("node", role="worker")
        want["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
        self.assertEqual(jobs[1]["template"]["spec"]["template"], want)
        # Cluster-scoped: no namespace.
        self.assertNotIn("namespace", rt["metadata"])

        flux = self.create(runtime("TrainingRuntime", "flux", {"flux": {}},
                                   podGroupPolicy={"volcano": {"networkTopology": {}}}))
        self.assertEqual(flux["spec"]["mlPolicy"]["flux"], {"numProcPerNode": 1})
        self.assertEqual(flux["spec"]["podGroupPolicy"]["volcano"]["networkTopology"],
                         {"mode": "hard", "highestTierAllowed": 1})
        self.assertEqual(flux["metadata"]["namespace"], self.ns)

    def test_bad_trainjobs_refused_with_upstreams_messages(self):
        self.refused(trainjob("bad.name"), "metadata.name must match RFC 1035 DNS label format")
        self.refused(trainjob("9lives"), "metadata.name must match RFC 1035 DNS label format")
        self.refused(trainjob("a" * 64), "metadata.name must be no more than 63 characters")
        self.refused(trainjob("other", managedBy="example.com/controller"),
                     "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                     "kueue.x-k8s.io/multikueue if set")
        for asset in ("dataset", "model"):
            err = self.refused(trainjob("uri", initializer={asset: {"storageUri": "bucket/path"}}),
                               "storageUri may be empty, or it must be a valid URI (scheme://...)")
            self.assertIn(f"spec.initializer.{asset}.storageUri", err)
        self.refused(trainjob("deadline", activeDeadlineSeconds=0), "should be greater than or equal to 1")
        self.refused(trainjob("noref", runtimeRef={"name": ""}), "should be at least 1 chars long")
        self.refused(trainjob("twice", trainer={"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}),
                     "Duplicate value")
        self.refused(trainjob("patches", runtimePatches=[{"manager": "m"}, {"manager": "m"}]), "Duplicate value")
        # The empty and URI forms are accepted.
        self.create(trainjob("uri-ok", initializer={"dataset": {"storageUri": ""},
                                                    "model": {"storageUri": "hf://org/model"}}))
        self.create(trainjob("multikueue", managedBy="kueue.x-k8s.io/multikueue"))

    def test_bad_runtimes_refused_with_upstreams_messages(self):
        self.refused(runtime("TrainingRuntime", "two", {"torch": {}, "mpi": {}}),
                     "Only one of the policy can be configured")
        self.refused(runtime("ClusterTrainingRuntime", "two-" + self.suffix, {"jax": {}, "xgboost": {}}),
                     "Only one of the policy can be configured", namespaced=False)
        self.refused(runtime("TrainingRuntime", "flux0", {"flux": {"numProcPerNode": 0}}),
                     "NumProcPerNode in fluxPolicy must be >= 1")
        self.refused(runtime("TrainingRuntime", "inject", {"torch": {"envInjection": {"targets": [
            {"jobName": "node", "containerNames": ["sidecar", "node"]}]}}}),
            "containerNames must not include the main node container because PET_* envs are always "
            "injected into it")
        self.refused(runtime("TrainingRuntime", "intel", {"mpi": {"mpiImplementation": "Intel"}}),
                     'Unsupported value: "Intel"')
        self.refused({"apiVersion": f"{GROUP}/v1alpha1", "kind": "TrainingRuntime",
                      "metadata": {"name": "empty"}, "spec": {}}, "should have at least 1 properties")
        rt = runtime("TrainingRuntime", "ordered", {"torch": {}})
        rt["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
        rt["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "launcher", "status": "Ready"}]
        self.refused(rt, "StartupPolicy and DependsOn APIs are mutually exclusive")

    def test_immutable_fields_refused_on_update(self):
        name = "frozen"
        self.create(trainjob(name, trainer={"image": "example.invalid/t:1"}, activeDeadlineSeconds=600,
                             initializer={"dataset": {"storageUri": "hf://a/b"}},
                             runtimePatches=[{"manager": "m"}]))
        for field, patch in (("spec.runtimeRef", {"runtimeRef": {"name": "other"}}),
                             ("spec.trainer", {"trainer": {"image": "example.invalid/t:2"}}),
                             ("spec.initializer", {"initializer": {"dataset": {"storageUri": "hf://a/c"}}}),
                             ("spec.activeDeadlineSeconds", {"activeDeadlineSeconds": 60}),
                             ("spec.managedBy", {"managedBy": "kueue.x-k8s.io/multikueue"})):
            err = self.patch_refused(name, {"spec": patch}, IMMUTABLE)
            self.assertIn(field, err)
        # suspend may change, and a manager may add its patch.
        kubectl("patch", "trainjob", name, "-n", self.ns, "--type=json", "-p", json.dumps(
            [{"op": "replace", "path": "/spec/suspend", "value": True},
             {"op": "add", "path": "/spec/runtimePatches/-", "value": {"manager": "n"}}]))
        job = get_json("trainjob", name, "-n", self.ns)
        self.assertIs(job["spec"]["suspend"], True)
        self.assertEqual([p["manager"] for p in job["spec"]["runtimePatches"]], ["m", "n"])
        # A runtime's JobSet keeps JobSet's own defaults and immutable fields.
        rt = self.create(runtime("TrainingRuntime", "jobset", {"torch": {}},
                                 template={"spec": {"failurePolicy": {"maxRestarts": 1}}}))
        self.assertEqual(rt["spec"]["template"]["spec"]["failurePolicy"],
                         {"maxRestarts": 1, "restartStrategy": "Recreate"})
        out = kubectl("patch", "trainingruntime", "jobset", "-n", self.ns, "--type=merge", "-p", json.dumps(
            {"spec": {"template": {"spec": {"failurePolicy": {"maxRestarts": 2}}}}}), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("Value is immutable", out.stderr)


if __name__ == "__main__":
    unittest.main()
