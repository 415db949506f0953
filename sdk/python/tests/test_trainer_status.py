"""The training's last progress report (a job's ``status.trainerStatus``, Trainer v2.3's shape)
as the SDK's job objects read it, from fixed JSON on both backends: ``TrainerClient``'s
``TrainJob.trainer_status`` (a ``TrainerStatus``, metrics by name) and ``TrainingClient``'s
``job.status.trainer_status`` (a ``KubeflowOrgV1TrainerStatus``). Locally a stand-in trainctl
prints what ``describe``/``get``/``runtimes list -o json`` print; on a cluster an in-memory
API answers. A job that has not reported reads None; odd fields are left out, never raised."""

import copy
import datetime
import json
import os
import stat
import sys
import tempfile
import unittest
from unittest import mock

from trainctl import TrainerClient, TrainingClient, models, trainer_types

UTC = datetime.timezone.utc

REPORTED = {"progressPercentage": 45, "estimatedRemainingSeconds": 3600,
            "metrics": [{"name": "loss", "value": "0.2347"},
                        {"name": "accuracy", "value": "0.9876"}],
            "lastUpdatedTime": "2026-11-30T12:05:00Z"}
EXPECTED = trainer_types.TrainerStatus(
    progress_percentage=45, estimated_remaining_seconds=3600,
    metrics={"loss": "0.2347", "accuracy": "0.9876"},
    last_updated_time=datetime.datetime(2026, 11, 30, 12, 5, tzinfo=UTC))

RUNTIME = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
           "metadata": {"name": "torch-distributed",
                        "labels": {"trainer.kubeflow.org/framework": "torch"}},
           "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                    "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                        "spec": {"template": {"spec": {"containers": [
                            {"name": "node", "image": "img:1"}]}}}}}]}}}}


def trainjob(name, reported=None):
    status = {"conditions": []}
    if reported is not None:
        status["trainerStatus"] = reported
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default",
                         "creationTimestamp": "2026-11-30T12:00:00Z"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
            "status": status}


def pytorchjob(name, reported=None):
    status = {"conditions": [{"type": "Running", "status": "True",
                              "lastTransitionTime": "2026-11-30T12:00:00Z"}],
              "replicaStatuses": {"Master": {"active": 1}}}
    if reported is not None:
        status["trainerStatus"] = reported
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "pytorch", "image": "img:1"}]}}}},
                "runPolicy": {}},
            "status": status}


def describe(job):
    """``trainctl describe -o json``'s document: the job, its replicas, events…"""
    return {"job": job, "replicas": [], "events": [], "failure": None, "warnings": []}


ODD = {"progressPercentage": "45", "estimatedRemainingSeconds": True, "lastUpdatedTime": 5,
       "metrics": [7, {"name": 3, "value": "x"}, {"name": "ok", "value": "1"},
                   {"name": "ok", "value": "2"}, {"name": "n", "value": 0.5}]}
ODD_EXPECTED = trainer_types.TrainerStatus(metrics={"ok": "2", "n": "0.5"})

FAKE = """\
import json, os, sys
args = sys.argv[1:]
while args and args[0] in ("--backend", "--state-dir", "-n"):
    args = args[2:]
if args[-2:] == ["-o", "json"]:
    args = args[:-2]
docs = json.load(open(os.environ["FAKE_TRAINCTL_DOCS"]))
key = " ".join(args)
if key not in docs:
    sys.stderr.write("error: %s not found\\n" % key)
    sys.exit(1)
print(json.dumps(docs[key]))
"""


class LocalBackendTest(unittest.TestCase):
    """A stand-in trainctl prints the documents by command (``describe trainjob tj``…)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        folder = self.tmp.name
        binary = os.path.join(folder, "trainctl")
        with open(binary, "w") as f:
            f.write(f"#!{sys.executable}\n" + FAKE)
        os.chmod(binary, os.stat(binary).st_mode | stat.S_IXUSR)
        self.docs_path = os.path.join(folder, "docs.json")
        self.env = mock.patch.dict(os.environ, {"TRAINCTL_BIN": binary,
                                                "FAKE_TRAINCTL_DOCS": self.docs_path})
        self.env.start()
        self.folder = folder

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def serve(self, docs):
        with open(self.docs_path, "w") as f:
            json.dump(docs, f)

    def test_trainer_client_trainjob_carries_the_report(self):
        reported, quiet = trainjob("tj", REPORTED), trainjob("quiet")
        self.serve({"runtimes list": [{"object": RUNTIME, "namespace": ""}],
                    "describe trainjob tj": describe(reported), "describe tj": describe(reported),
                    "describe trainjob quiet": describe(quiet), "describe quiet": describe(quiet),
                    "get trainjob": {"kind": "List", "items": [reported, quiet]}})
        client = TrainerClient(backend="local", state_dir=self.folder)
        job = client.get_job("tj")
        self.assertEqual(job.trainer_status, EXPECTED)
        self.assertEqual((job.name, job.num_nodes, job.runtime.name),
                         ("tj", 1, "torch-distributed"))  # the rest reads as before
        self.assertIsNone(client.get_job("quiet").trainer_status)
        self.assertEqual([j.trainer_status for j in client.list_jobs()], [EXPECTED, None])

    def test_training_client_job_status_carries_the_report(self):
        self.serve({"describe pytorchjob pj": describe(pytorchjob("pj", REPORTED)),
                    "describe pytorchjob quiet": describe(pytorchjob("quiet")),
                    "get pytorchjob": {"kind": "List", "items": [pytorchjob("pj", REPORTED)]}})
        client = TrainingClient(backend="local", state_dir=self.folder)
        job = client.get_job("pj")
        check_v1_report(self, job.status.trainer_status)
        self.assertEqual(job.status.conditions[0].type, "Running")
        self.assertEqual(job.status.replica_statuses["Master"].active, 1)
        self.assertIsNone(client.get_job("quiet").status.trainer_status)
        check_v1_report(self, client.list_jobs()[0].status.trainer_status)
        # As JSON again, the report is what the server holds (update_job compares this form).
        self.assertEqual(models.serialize(job)["status"]["trainerStatus"], REPORTED)


def check_v1_report(test, status):
    test.assertIsInstance(status, models.KubeflowOrgV1TrainerStatus)
    test.assertEqual((status.progress_percentage, status.estimated_remaining_seconds),
                     (45, 3600))
    test.assertEqual([(m.name, m.value) for m in status.metrics],
                     [("loss", "0.2347"), ("accuracy", "0.9876")])
    test.assertIsInstance(status.metrics[0], models.KubeflowOrgV1TrainerMetric)
    test.assertEqual(status.last_updated_time, datetime.datetime(2026, 11, 30, 12, 5, tzinfo=UTC))


class Thread:
    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def get(self, timeout=None):
        if self.error:
            raise self.error
        return self.value


class FakeCustomApi:
    """Custom objects by (group, plural) -> {name: object}, in one namespace."""

    def __init__(self, objects):
        self.objects = objects

    def list_cluster_custom_object(self, group, version, plural, async_req=False):
        return Thread({"items": list(self.objects.get((group, plural), {}).values())})

    def list_namespaced_custom_object(self, group, version, namespace, plural, async_req=False):
        return Thread({"items": list(self.objects.get((group, plural), {}).values())})

    def get_namespaced_custom_object(self, group, version, namespace, plural, name,
                                     async_req=False):
        from kubernetes.client.rest import ApiException
        found = self.objects.get((group, plural), {}).get(name)
        return Thread(found, None if found else ApiException(status=404, reason="NotFound"))


class FakeCoreApi:
    def list_namespaced_pod(self, namespace, label_selector=None, async_req=False):
        from kubernetes import client as k8s
        return Thread(k8s.V1PodList(items=[]))


class KubernetesBackendTest(unittest.TestCase):
    def setUp(self):
        try:
            from trainctl.backends import kubernetes as kb
        except ImportError:
            self.skipTest("needs the kubernetes package")
        self.kb = kb

    def client(self, cls, module, objects):
        backend = object.__new__(self.kb.KubernetesBackend)
        backend.custom_api, backend.core_api = FakeCustomApi(objects), FakeCoreApi()
        backend.default_namespace = lambda: "default"
        with mock.patch.object(module, "make_backend", return_value=backend):
            return cls(backend="kubernetes")

    def test_trainer_client_trainjob_carries_the_report(self):
        from trainctl.api import trainer_client
        trainer = "trainer.kubeflow.org"
        client = self.client(TrainerClient, trainer_client, {
            (trainer, "clustertrainingruntimes"): {"torch-distributed": RUNTIME},
            (trainer, "trainjobs"): {"tj": trainjob("tj", REPORTED), "quiet": trainjob("quiet"),
                                     "odd": trainjob("odd", ODD),
                                     "empty": trainjob("empty", {})}})
        self.assertEqual(client.get_job("tj").trainer_status, EXPECTED)
        self.assertIsNone(client.get_job("quiet").trainer_status)
        self.assertEqual(client.get_job("odd").trainer_status, ODD_EXPECTED)
        self.assertEqual(client.get_job("empty").trainer_status, trainer_types.TrainerStatus())
        self.assertEqual({j.name: j.trainer_status for j in client.list_jobs()},
                         {"tj": EXPECTED, "quiet": None, "odd": ODD_EXPECTED,
                          "empty": trainer_types.TrainerStatus()})

    def test_training_client_job_status_carries_the_report(self):
        from trainctl.api import training_client
        client = self.client(TrainingClient, training_client, {
            ("kubeflow.org", "pytorchjobs"): {"pj": pytorchjob("pj", REPORTED),
                                              "quiet": pytorchjob("quiet")}})
        check_v1_report(self, client.get_job("pj").status.trainer_status)
        self.assertIsNone(client.get_job("quiet").status.trainer_status)
        self.assertEqual([j.status.trainer_status is None for j in client.list_jobs()],
                         [False, True])


    def test_training_client_reads_the_operators_annotation_on_a_v1_job(self):
        # On a cluster the v1 CRDs have no trainerStatus: `trainctl operator` keeps the report in
        # the job's annotation, and the SDK shows it in the same place.
        from trainctl.api import training_client
        kept = pytorchjob("kept")
        kept["metadata"]["annotations"] = {"trainctl.dev/trainer-status": json.dumps(REPORTED)}
        broken = pytorchjob("broken")
        broken["metadata"]["annotations"] = {"trainctl.dev/trainer-status": "{not json"}
        client = self.client(TrainingClient, training_client, {
            ("kubeflow.org", "pytorchjobs"): {"kept": kept, "broken": broken}})
        check_v1_report(self, client.get_job("kept").status.trainer_status)
        self.assertIsNone(client.get_job("broken").status.trainer_status)


class TrainerStatusTypeTest(unittest.TestCase):
    def test_read_only_and_optional_on_trainjob(self):
        with self.assertRaises(Exception):
            EXPECTED.progress_percentage = 50  # frozen
        runtime = trainer_types.Runtime(
            name="r", trainer=trainer_types.RuntimeTrainer(
                trainer_type=trainer_types.TrainerType.CUSTOM_TRAINER, framework="torch",
                image="i"), kind=trainer_types.RuntimeKind.CLUSTER_TRAINING_RUNTIME)
        # Built as upstream's TrainJob is (positional, six fields): trainer_status is None.
        job = trainer_types.TrainJob("j", runtime, [], 1, None, "Created")
        self.assertIsNone(job.trainer_status)
        self.assertEqual(copy.deepcopy(EXPECTED), EXPECTED)


if __name__ == "__main__":
    unittest.main()
