"""TrainerClient on the kubernetes backend without a cluster: the public client over the real
KubernetesBackend, whose API objects are an in-memory API server (custom objects, pods, logs,
events). Checks what reaches the API (the TrainJob train() creates) and how what the API holds
reads back (runtimes, steps from JobSet's pod labels, status from conditions and pods, logs of
a step's container, events), as upstream's SDK reads them."""

import datetime
import unittest
from unittest import mock

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client as k8s  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from trainctl import CustomTrainer, TrainerClient, trainer_types  # noqa: E402
from trainctl.api import trainer_client as tc_module  # noqa: E402
from trainctl.backends import kubernetes as kb  # noqa: E402

T0 = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)


def runtime(name, kind="ClusterTrainingRuntime", policy=None, image="img:1", framework="torch",
            gpus=None, namespace=None):
    container = {"name": "node", "image": image}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    rjob = {"name": "node", "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
        "spec": {"template": {"spec": {"containers": [container]}}}}}
    meta = {"name": name, "labels": {"trainer.kubeflow.org/framework": framework}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
            "spec": {"mlPolicy": {"numNodes": 1, **(policy or {"torch": {}})},
                     "template": {"spec": {"replicatedJobs": [rjob]}}}}


class Thread:
    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def get(self, timeout=None):
        if self.error:
            raise self.error
        return self.value


class FakeCustomApi:
    """Custom objects by (group, version, namespace or None, plural) → {name: object}."""

    def __init__(self):
        self.store = {}
        self.created = []

    def _bucket(self, group, version, namespace, plural):
        return self.store.setdefault((group, version, namespace, plural), {})

    def list_cluster_custom_object(self, group, version, plural, async_req=False):
        return Thread({"items": list(self._bucket(group, version, None, plural).values())})

    def list_namespaced_custom_object(self, group, version, namespace, plural, async_req=False):
        return Thread({"items": list(self._bucket(group, version, namespace, plural).values())})

    def get_namespaced_custom_object(self, group, version, namespace, plural, name,
                                     async_req=False):
        found = self._bucket(group, version, namespace, plural).get(name)
        return Thread(found, None if found else ApiException(status=404, reason="NotFound"))

    def create_namespaced_custom_object(self, group, version, namespace, plural, body,
                                        async_req=False):
        obj = dict(body)
        obj["metadata"] = {**body["metadata"], "namespace": namespace,
                           "creationTimestamp": "2026-11-30T12:00:00Z"}
        self._bucket(group, version, namespace, plural)[obj["metadata"]["name"]] = obj
        self.created.append((group, version, namespace, plural, body))
        return Thread(obj)

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name,
                                        body=None, async_req=False):
        bucket = self._bucket(group, version, namespace, plural)
        if name not in bucket:
            return Thread(error=ApiException(status=404, reason="NotFound"))
        return Thread(bucket.pop(name))


class FakeCoreApi:
    def __init__(self):
        self.pods, self.logs, self.events = [], {}, []

    def list_namespaced_pod(self, namespace, label_selector=None, async_req=False):
        wanted = dict(p.split("=", 1) for p in (label_selector or "").split(",") if p)
        items = [p for p in self.pods
                 if all((p.metadata.labels or {}).get(k) == v for k, v in wanted.items())]
        return Thread(k8s.V1PodList(items=items))

    def read_namespaced_pod_log(self, name, namespace, container, **kwargs):
        return self.logs[(name, container)]

    def list_namespaced_event(self, namespace):
        return k8s.CoreV1EventList(items=self.events)


def pod(job, rjob, index, phase, created=T0, nproc=None, gpus=None, container="node"):
    env = [k8s.V1EnvVar(name="PET_NPROC_PER_NODE", value=str(nproc))] if nproc else None
    resources = k8s.V1ResourceRequirements(limits={"nvidia.com/gpu": str(gpus)}) if gpus else None
    labels = {"jobset.sigs.k8s.io/jobset-name": job,
              "jobset.sigs.k8s.io/replicatedjob-name": rjob,
              "batch.kubernetes.io/job-completion-index": str(index)}
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=f"{job}-{rjob}-0-{index}-x{created.second}",
                                  labels=labels, creation_timestamp=created),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name=container, env=env,
                                                       resources=resources)]),
        status=k8s.V1PodStatus(phase=phase))


def event(kind, name, reason, message, when):
    return k8s.CoreV1Event(metadata=k8s.V1ObjectMeta(creation_timestamp=when),
                           involved_object=k8s.V1ObjectReference(kind=kind, name=name),
                           reason=reason, message=message)


def train_func(lr, epochs=1):
    print("training", lr, epochs)


TRAINER = ("trainer.kubeflow.org", "v1alpha1")


class TrainerClientKubernetesTest(unittest.TestCase):
    def setUp(self):
        self.custom, self.core = FakeCustomApi(), FakeCoreApi()
        backend = object.__new__(kb.KubernetesBackend)
        backend.custom_api, backend.core_api = self.custom, self.core
        backend.default_namespace = lambda: "team"
        with mock.patch.object(tc_module, "make_backend", return_value=backend):
            self.client = TrainerClient(backend="kubernetes")
        self.add(runtime("torch-distributed", gpus=1))
        self.add(runtime("deepspeed-distributed", policy={"mpi": {"numProcPerNode": 4}},
                         framework="deepspeed"))
        self.add(runtime("torch-distributed", kind="TrainingRuntime", image="team-img:2",
                         namespace="team"))
        self.add({"kind": "ClusterTrainingRuntime", "metadata": {"name": "unlabelled"}})

    def add(self, obj):
        ns = (obj["metadata"].get("namespace"))
        plural = "trainingruntimes" if obj["kind"] == "TrainingRuntime" else \
            "clustertrainingruntimes"
        self.custom._bucket(*TRAINER, ns, plural)[obj["metadata"]["name"]] = obj

    def job(self, name, conditions=None, runtime_name="torch-distributed", num_nodes=2):
        obj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
               "metadata": {"name": name, "namespace": "team",
                            "creationTimestamp": "2026-11-30T12:00:00Z"},
               "spec": {"runtimeRef": {"name": runtime_name},
                        "trainer": {"numNodes": num_nodes}},
               "status": {"conditions": conditions or []}}
        self.custom._bucket(*TRAINER, "team", "trainjobs")[name] = obj
        return obj

    def test_runtimes_prefer_the_namespace_and_skip_unlabelled(self):
        names = [(r.name, r.kind.value) for r in self.client.list_runtimes()]
        self.assertEqual(names, [("deepspeed-distributed", "ClusterTrainingRuntime"),
                                 ("torch-distributed", "TrainingRuntime")])
        self.assertEqual(self.client.get_runtime("torch-distributed").trainer.image, "team-img:2")
        ds = self.client.get_runtime("deepspeed-distributed")
        self.assertEqual((ds.trainer.device_count, ds.trainer.command[0]), ("4", "mpirun"))
        del self.custom.store[(*TRAINER, "team", "trainingruntimes")]["torch-distributed"]
        torch = self.client.get_runtime("torch-distributed")
        self.assertEqual((torch.trainer.device, torch.trainer.device_count), ("gpu", "1"))
        with self.assertRaisesRegex(ValueError, "'gone' does not exist in namespace team "
                                                r"\(backend kubernetes\); these do: "
                                                "deepspeed-distributed, torch-distributed"):
            self.client.train(runtime="gone", trainer=CustomTrainer(func=train_func))
        self.assertEqual(self.custom.created, [])

    def test_train_creates_the_trainjob_upstream_would(self):
        name = self.client.train(trainer=CustomTrainer(
            func=train_func, func_args={"lr": 0.1}, num_nodes=2, env={"A": "1"},
            resources_per_node={"GPU": 2, "cpu": 4, "memory": "8Gi"}, image="mine:3"))
        (group, version, ns, plural, body), = self.custom.created
        self.assertEqual((group, version, ns, plural), (*TRAINER, "team", "trainjobs"))
        self.assertEqual(body["metadata"], {"name": name})
        spec = body["spec"]
        self.assertEqual(spec["runtimeRef"], {"name": "torch-distributed",
                                              "kind": "TrainingRuntime",
                                              "apiGroup": "trainer.kubeflow.org"})
        trainer = spec["trainer"]
        self.assertEqual(trainer["numNodes"], 2)
        self.assertEqual(trainer["image"], "mine:3")
        self.assertEqual(trainer["env"], [{"name": "A", "value": "1"}])
        self.assertEqual(trainer["resourcesPerNode"]["limits"],
                         {"nvidia.com/gpu": "2", "cpu": "4", "memory": "8Gi"})
        command = trainer["command"]
        self.assertEqual(command[:2], ["bash", "-c"])
        self.assertIn("def train_func(lr, epochs=1):", command[2])
        self.assertIn("train_func(**{'lr': 0.1})", command[2])
        self.assertIn('torchrun "$program_path/ephemeral_script.py"', command[2])
        self.assertNotIn("initializer", spec)

    def test_a_function_on_an_mpi_runtime_runs_on_every_rank(self):
        # The launcher's mpirun starts `bash -c` on each slot (its hosts from the policy's
        # OMPI_MCA_orte_default_hostfile, no --hostfile path); each rank writes the file itself.
        self.client.train(runtime="deepspeed-distributed",
                          trainer=CustomTrainer(func=train_func, num_nodes=2))
        (*_, body), = self.custom.created
        command = body["spec"]["trainer"]["command"]
        self.assertEqual(command[:3], ["mpirun", "bash", "-c"])
        self.assertIn('python -u "$program_path/ephemeral_script.py"', command[3])
        self.assertNotIn("--hostfile", command)

    def test_initializers_and_container_trainer(self):
        self.client.train(
            initializer=trainer_types.Initializer(
                dataset=trainer_types.HuggingFaceDatasetInitializer(
                    storage_uri="hf://org/data", access_token="tok"),
                model=trainer_types.S3ModelInitializer(storage_uri="s3://b/m")),
            trainer=trainer_types.CustomTrainerContainer(image="train:1", num_nodes=3))
        spec = self.custom.created[0][4]["spec"]
        self.assertEqual(spec["trainer"], {"numNodes": 3, "image": "train:1"})
        self.assertEqual(spec["initializer"]["dataset"],
                         {"storageUri": "hf://org/data",
                          "env": [{"name": "ACCESS_TOKEN", "value": "tok"}]})
        self.assertEqual(spec["initializer"]["model"]["env"],
                         [{"name": "IGNORE_PATTERNS", "value": "*.msgpack,*.h5,*.bin,*.pt,*.pth"}])

    def test_steps_and_status(self):
        self.job("j1")
        later = T0 + datetime.timedelta(seconds=5)
        self.core.pods = [pod("j1", "dataset-initializer", 0, "Succeeded",
                              container="dataset-initializer"),
                          pod("j1", "node", 1, "Pending"),
                          pod("j1", "node", 0, "Failed"),  # restarted since
                          pod("j1", "node", 0, "Running", created=later, nproc=2, gpus=1),
                          pod("other", "node", 0, "Running")]
        job = self.client.get_job("j1")
        self.assertEqual(job.status, "Created")  # node-1 is not running yet
        self.assertEqual([(s.name, s.status) for s in job.steps],
                         [("dataset-initializer", "Succeeded"), ("node-0", "Running"),
                          ("node-1", "Pending")])
        self.assertEqual((job.steps[1].device, job.steps[1].device_count), ("gpu", "2"))
        self.assertEqual(job.steps[1].pod_name, "j1-node-0-0-x5")
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual(job.runtime.name, "torch-distributed")
        self.assertEqual(job.creation_timestamp, T0)
        self.core.pods[1].status.phase = "Running"
        self.assertEqual(self.client.get_job("j1").status, "Running")
        self.job("j1", [{"type": "Complete", "status": "True"}])
        self.assertEqual(self.client.get_job("j1").status, "Complete")
        self.job("j1", [{"type": "Failed", "status": "True"}])
        self.assertEqual(self.client.get_job("j1").status, "Failed")
        self.job("j1", [{"type": "Complete", "status": "False"}])
        self.assertEqual(self.client.get_job("j1").status, "Running")

    def test_mpi_launcher_is_node_0(self):
        self.job("m", runtime_name="deepspeed-distributed")
        self.core.pods = [pod("m", "launcher", 0, "Running"), pod("m", "node", 0, "Running")]
        steps = self.client.get_job("m").steps
        self.assertEqual([(s.name, s.pod_name) for s in steps],
                         [("node-0", "m-launcher-0-0-x0"), ("node-1", "m-node-0-0-x0")])

    def test_logs_events_list_delete(self):
        self.job("j1")
        self.job("j2", runtime_name="deepspeed-distributed")
        self.core.pods = [pod("j1", "node", 0, "Running"), pod("j1", "node", 1, "Pending"),
                          pod("j1", "dataset-initializer", 0, "Succeeded",
                              container="dataset-initializer")]
        self.core.logs = {("j1-node-0-0-x0", "node"): "a\nb\n",
                          ("j1-dataset-initializer-0-0-x0", "dataset-initializer"): "fetched\n"}
        self.assertEqual(list(self.client.get_job_logs("j1")), ["a", "b"])
        self.assertEqual(list(self.client.get_job_logs("j1", step="dataset-initializer")),
                         ["fetched"])
        self.assertEqual(list(self.client.get_job_logs("j1", step="node-1")), [])  # Pending
        self.core.events = [
            event("Pod", "j1-node-0-0-x0", "Started", "started", T0 + datetime.timedelta(2)),
            event("TrainJob", "j1", "Created", "made", T0),
            event("Pod", "j2-node-0-0-x0", "Started", "not ours", T0),
            event("ConfigMap", "j1", "X", "not a part", T0)]
        events = self.client.get_job_events("j1")
        self.assertEqual([(e.involved_object_kind, e.reason, e.message) for e in events],
                         [("TrainJob", "Created", "made"), ("Pod", "Started", "started")])
        self.assertEqual(sorted(j.name for j in self.client.list_jobs()), ["j1", "j2"])
        self.assertEqual([j.name for j in self.client.list_jobs(
            runtime=self.client.get_runtime("deepspeed-distributed"))], ["j2"])
        self.client.delete_job("j2")
        self.assertEqual([j.name for j in self.client.list_jobs()], ["j1"])
        with self.assertRaisesRegex(RuntimeError, "Failed to delete TrainJob: team/j2"):
            self.client.delete_job("j2")

    def test_wait(self):
        self.job("j1")
        seen = []
        with self.assertRaisesRegex(TimeoutError, r"to reach status: \{'Complete'\} status "
                                                  r"\(it is Created\)"):
            self.client.wait_for_job_status("j1", timeout=0.3, polling_interval=0.1,
                                            callbacks=[seen.append])
        self.assertGreaterEqual(len(seen), 2)
        self.job("j1", [{"type": "Failed", "status": "True"}])
        with self.assertRaisesRegex(RuntimeError, "TrainJob j1 is Failed"):
            self.client.wait_for_job_status("j1", timeout=1, polling_interval=0.1)
        self.assertEqual(self.client.wait_for_job_status(
            "j1", status={"Failed", "Complete"}, timeout=1, polling_interval=0.1).status, "Failed")


if __name__ == "__main__":
    unittest.main()
