"""TrainerClient on the kubernetes backend without a cluster: the public client over the real
KubernetesBackend, whose API objects are an in-memory API server (custom objects, pods, logs,
events). Checks what reaches the API (the TrainJob train() creates) and how what the API holds
reads back (runtimes, steps from JobSet's pod labels, status from conditions and pods, logs of
a step's container, events), as upstream's SDK reads them; every train() option and a
BuiltinTrainer in the TrainJob as upstream's SDK writes them, and get_runtime_packages'
one-node TrainJob."""

import contextlib
import datetime
import io
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
        self.on_create = None  # called with each object made

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
        if self.on_create:
            self.on_create(obj)
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
                           reason=reason, message=message, first_timestamp=when)


def train_func(lr, epochs=1):
    print("training", lr, epochs)


TRAINER = ("trainer.kubeflow.org", "v1alpha1")


def node_patch(metadata=None, **pod_spec):
    """A RuntimePatch of the ``node`` job's pod template."""
    t = trainer_types
    return t.RuntimePatch(t.TrainingRuntimeSpecPatch(t.JobSetTemplatePatch(
        metadata={"labels": {"jobset": "l"}},
        spec=t.JobSetSpecPatch([t.ReplicatedJobPatch("node", t.JobTemplatePatch(
            metadata={"annotations": {"job": "a"}},
            spec=t.JobSpecPatch(t.PodTemplatePatch(metadata=metadata,
                                                   spec=t.PodSpecPatch(**pod_spec)))))]))))


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
        # The namespace's runtimes first, then the cluster's (as upstream lists them).
        self.assertEqual(names, [("torch-distributed", "TrainingRuntime"),
                                 ("deepspeed-distributed", "ClusterTrainingRuntime")])
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

    def test_every_option_reaches_the_trainjob(self):
        t = trainer_types
        patch = node_patch(
            metadata={"labels": {"pod": "p"}}, service_account_name="trainer",
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
            init_containers=[t.ContainerPatch("prep", env=[{"name": "X", "value": "1"}])],
            containers=[t.ContainerPatch(
                "sidecar", env=[{"name": "T", "valueFrom": {"secretKeyRef": {
                    "name": "s", "key": "k"}}}],
                volume_mounts=[{"name": "data", "mountPath": "/data"}],
                security_context={"runAsUser": 1000})],
            image_pull_secrets=[{"name": "reg"}], security_context={"fsGroup": 2000},
            node_selector={"disk": "ssd"}, affinity={"nodeAffinity": {}},
            tolerations=[{"key": "gpu", "operator": "Exists"}],
            scheduling_gates=[{"name": "wait"}])
        name = self.client.train(
            trainer=t.CustomTrainerContainer(image="train:1", num_nodes=2),
            options=[t.Name("my-job"), t.Labels({"team": "a"}), t.Annotations({"note": "n"}),
                     t.TrainerCommand(["python", "train.py"]), t.TrainerArgs(["--lr", "0.1"]),
                     t.ActiveDeadlineSeconds(3600), patch, t.Labels({"team": "b"})])
        self.assertEqual(name, "my-job")
        (*_, body), = self.custom.created
        self.assertEqual(body["metadata"], {"name": "my-job", "labels": {"team": "b"},
                                            "annotations": {"note": "n"}})
        spec = body["spec"]
        self.assertEqual(spec["trainer"], {"numNodes": 2, "image": "train:1",
                                           "command": ["python", "train.py"],
                                           "args": ["--lr", "0.1"]})
        self.assertEqual(spec["activeDeadlineSeconds"], 3600)
        self.assertEqual(spec["runtimePatches"], [{
            "manager": "trainer.kubeflow.org/kubeflow-sdk",
            "trainingRuntimeSpec": {"template": {
                "metadata": {"labels": {"jobset": "l"}},
                "spec": {"replicatedJobs": [{"name": "node", "template": {
                    "metadata": {"annotations": {"job": "a"}},
                    "spec": {"template": {
                        "metadata": {"labels": {"pod": "p"}},
                        "spec": {
                            "serviceAccountName": "trainer",
                            "volumes": [{"name": "data",
                                         "persistentVolumeClaim": {"claimName": "d"}}],
                            "initContainers": [{"name": "prep",
                                                "env": [{"name": "X", "value": "1"}]}],
                            "containers": [{
                                "name": "sidecar",
                                "env": [{"name": "T", "valueFrom": {"secretKeyRef": {
                                    "name": "s", "key": "k"}}}],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                "securityContext": {"runAsUser": 1000}}],
                            "imagePullSecrets": [{"name": "reg"}],
                            "securityContext": {"fsGroup": 2000},
                            "nodeSelector": {"disk": "ssd"},
                            "affinity": {"nodeAffinity": {}},
                            "tolerations": [{"key": "gpu", "operator": "Exists"}],
                            "schedulingGates": [{"name": "wait"}]}}}}}]}}}}])

    def test_options_without_a_trainer_and_with_a_function(self):
        t = trainer_types
        self.client.train(options=[t.TrainerCommand(["sleep", "1"])])
        self.assertEqual(self.custom.created[-1][4]["spec"]["trainer"],
                         {"command": ["sleep", "1"]})
        self.client.train(trainer=CustomTrainer(func=train_func, func_args={"lr": 1}),
                          options=[t.Annotations({"a": "b"}), t.ActiveDeadlineSeconds(5)])
        body = self.custom.created[-1][4]
        self.assertEqual(body["metadata"]["annotations"], {"a": "b"})
        self.assertEqual(body["spec"]["activeDeadlineSeconds"], 5)
        self.assertIn("train_func(**{'lr': 1})", body["spec"]["trainer"]["command"][2])

    def test_bad_options_are_refused_before_anything_is_created(self):
        t = trainer_types
        self.job("taken")

        class Retries:  # not an option of upstream's or ours
            pass

        func = CustomTrainer(func=train_func)
        cases = [
            ([Retries()], r"options\[0\]: Retries is not a TrainJob option trainctl knows"),
            (t.Name("x"), "options must be a list, got Name"),
            ([t.Name("taken")], r"Name option: TrainJob team/taken already exists \(backend "
                                r"kubernetes\)"),
            ([t.Name("a" * 64)], "RFC 1035 label"),
            ([t.Name("9lives")], "RFC 1035 label"),
            ([t.Labels({"a": 1})], r"options\[0\] Labels\.labels: keys and values must be "
                                   "strings"),
            ([t.Annotations(["a"])], "annotations must be a dict of strings, got list"),
            ([t.ActiveDeadlineSeconds(0)], "seconds must be an int >= 1, got 0"),
            ([t.ActiveDeadlineSeconds(True)], "seconds must be an int >= 1, got True"),
            ([t.TrainerCommand("python x.py")], "command must be a list of strings"),
            ([t.RuntimePatch(), t.RuntimePatch()], r"options\[1\] RuntimePatch: a second "
                                                   "RuntimePatch of manager trainer.kubeflow.org"
                                                   "/kubeflow-sdk"),
            ([node_patch(containers=[t.ContainerPatch("c", volume_mounts=[
                {"name": "v", "mountPath": "rel"}])])],
             r"replicated_jobs\[0\]\.containers\[0\] \(c\)\.volume_mounts v: mountPath must "
             "be an absolute path"),
            ([node_patch(containers=[t.ContainerPatch("c", env=[{"name": "E"}])])],
             "env E: needs value or valueFrom"),
            ([node_patch(containers=[t.ContainerPatch("c", env=[
                {"name": "E", "valueFrom": {"bogus": {}}}])])], "valueFrom must hold one of"),
            ([node_patch(containers=[t.ContainerPatch(" ")])], "needs a non-empty name"),
        ]
        container = t.CustomTrainerContainer(image="train:1")  # takes every option
        for options, message in cases:
            with self.subTest(options=options):
                with self.assertRaisesRegex(ValueError, message):
                    self.client.train(trainer=container, options=options)
        for option in (t.TrainerCommand(["x"]), t.TrainerArgs(["x"])):
            with self.assertRaisesRegex(ValueError, "goes with a CustomTrainerContainer"):
                self.client.train(trainer=func, options=[option])
        self.assertEqual(self.custom.created, [])

    def add_torchtune(self, name="torchtune-llama3.2-1b"):
        self.add(runtime(name, framework="torchtune", policy={"torch": {"numProcPerNode": 2}},
                         image="ghcr.io/kubeflow/trainer/torchtune-trainer", gpus=2))

    def test_builtin_trainer_becomes_upstreams_tune_run(self):
        t = trainer_types
        self.add_torchtune()
        tune = self.client.get_runtime("torchtune-llama3.2-1b")
        self.assertEqual((tune.trainer.trainer_type, tune.trainer.command),
                         (t.TrainerType.BUILTIN_TRAINER, ("tune", "run")))
        config = t.TorchTuneConfig(
            dtype=t.DataType.BF16, batch_size=8, epochs=3, loss=t.Loss.CEWithChunkedOutputLoss,
            num_nodes=2, resources_per_node={"gpu": 4},
            peft_config=t.LoraConfig(lora_rank=8, lora_alpha=16, apply_lora_to_mlp=True,
                                     quantize_base=False),
            dataset_preprocess_config=t.TorchTuneInstructDataset(
                source=t.DataFormat.PARQUET, split="train[:5%]", train_on_input=False,
                column_map={"input": "question"}))
        init = t.Initializer(dataset=t.HuggingFaceDatasetInitializer(
            storage_uri="hf://tatsu-lab/alpaca/data/train.parquet"))
        self.client.train(runtime=tune, initializer=init, trainer=t.BuiltinTrainer(config),
                          options=[t.Labels({"kind": "tune"})])
        (*_, body), = self.custom.created
        self.assertEqual(body["metadata"]["labels"], {"kind": "tune"})
        self.assertEqual(body["spec"]["runtimeRef"]["name"], "torchtune-llama3.2-1b")
        self.assertEqual(body["spec"]["initializer"],
                         {"dataset": {"storageUri": "hf://tatsu-lab/alpaca/data/train.parquet"}})
        self.assertEqual(body["spec"]["trainer"], {
            "numNodes": 2,
            "resourcesPerNode": {"requests": {"nvidia.com/gpu": "4"},
                                 "limits": {"nvidia.com/gpu": "4"}},
            "command": ["tune", "run"],
            "args": ["dtype=bf16", "batch_size=8", "epochs=3",
                     "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
                     "dataset.data_files=/workspace/dataset/data/train.parquet",
                     "model.apply_lora_to_mlp=True", "model.lora_rank=8",
                     "model.lora_alpha=16", "model.quantize_base=False",
                     "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
                     "dataset=torchtune.datasets.instruct_dataset", "dataset.source=parquet",
                     "dataset.split=train[:5%]", "dataset.train_on_input=False",
                     "dataset.column_map={'input': 'question'}"]})
        # Nothing set: the runtime's recipe as it is; a dataset folder of the repository.
        self.client.train(runtime="torchtune-llama3.2-1b",
                          initializer=t.Initializer(dataset=t.HuggingFaceDatasetInitializer(
                              storage_uri="tatsu-lab/alpaca")),
                          trainer=t.BuiltinTrainer(t.TorchTuneConfig()))
        self.assertEqual(self.custom.created[-1][4]["spec"]["trainer"],
                         {"command": ["tune", "run"],
                          "args": ["dataset.data_dir=/workspace/dataset/."]})

    def test_builtin_trainer_bad_input(self):
        t = trainer_types
        self.add_torchtune()
        tune = "torchtune-llama3.2-1b"
        cases = [
            (dict(trainer=t.BuiltinTrainer(t.TorchTuneConfig())),
             "a BuiltinTrainer cannot run on runtime torch-distributed, whose trainer is "
             r"CustomTrainer \(framework torch\): a BuiltinTrainer runs on a torchtune runtime "
             "only"),
            (dict(runtime=tune, trainer=CustomTrainer(func=train_func)),
             f"a CustomTrainer cannot run on runtime {tune}, whose trainer is BuiltinTrainer"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer({"epochs": 1})),
             "BuiltinTrainer.config must be a TorchTuneConfig, got dict"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig(dtype="bf16"))),
             r"TorchTuneConfig.dtype must be a DataType \(bf16, fp32\), got 'bf16'"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig(num_nodes=0))),
             "TorchTuneConfig.num_nodes must be a positive int"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig(
                peft_config={"lora_rank": 8}))), "peft_config must be a LoraConfig, got dict"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig(
                dataset_preprocess_config=t.TorchTuneInstructDataset(source="csv")))),
             "TorchTuneInstructDataset.source must be a DataFormat"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig(
                resources_per_node={"mig-1g.5gb": 1, "gpu": 1}))),
             "TorchTuneConfig.resources_per_node: gpu and a MIG profile"),
            (dict(runtime=tune, trainer=t.BuiltinTrainer(t.TorchTuneConfig()),
                  options=[t.TrainerArgs(["epochs=1"])]), "TrainerArgs goes with a "
                                                          "CustomTrainerContainer"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, message):
                    self.client.train(**kwargs)
        self.assertEqual(self.custom.created, [])

    def finish_with_log(self, text):
        """Each TrainJob made from now on is Complete with a node-0 pod whose log is text."""
        def done(obj):
            name = obj["metadata"]["name"]
            obj["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
            p = pod(name, "launcher" if "deepspeed" in obj["spec"]["runtimeRef"]["name"]
                    else "node", 0, "Succeeded")
            self.core.pods.append(p)
            self.core.logs[(p.metadata.name, "node")] = text
        self.custom.on_create = done

    def test_runtime_packages_by_a_one_node_trainjob(self):
        self.finish_with_log("Python: 3.12.1\nPackage Version\n------- -------\ntorch   2.9.0\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertIsNone(self.client.get_runtime_packages(
                self.client.get_runtime("torch-distributed")))
        self.assertEqual(out.getvalue(),
                         "Python: 3.12.1\nPackage Version\n------- -------\ntorch   2.9.0\n")
        (*_, body), = self.custom.created
        trainer = body["spec"]["trainer"]
        self.assertEqual(body["spec"]["runtimeRef"]["name"], "torch-distributed")
        self.assertEqual(trainer["numNodes"], 1)
        self.assertEqual(trainer["resourcesPerNode"]["limits"], {"cpu": "1"})  # no GPU there
        self.assertEqual(trainer["command"][:2], ["bash", "-c"])
        self.assertIn("def print_packages():", trainer["command"][2])
        self.assertIn("importlib.metadata.distributions()", trainer["command"][2])
        self.assertIn('torchrun "$program_path/ephemeral_script.py"', trainer["command"][2])
        self.assertEqual(self.client.list_jobs(), [])  # deleted once read

        # A GPU runtime keeps its GPUs; on an MPI runtime one rank runs it.
        del self.custom.store[(*TRAINER, "team", "trainingruntimes")]["torch-distributed"]
        with contextlib.redirect_stdout(io.StringIO()):
            self.client.get_runtime_packages("torch-distributed")
            self.client.get_runtime_packages("deepspeed-distributed")
        gpu, mpi = (c[4]["spec"]["trainer"] for c in self.custom.created[1:])
        self.assertNotIn("resourcesPerNode", gpu)
        self.assertEqual(mpi["command"][:5], ["mpirun", "-np", "1", "bash", "-c"])
        self.assertIn('python -u "$program_path/ephemeral_script.py"', mpi["command"][5])
        self.assertEqual(self.client.list_jobs(), [])

        self.add_torchtune()
        with self.assertRaisesRegex(ValueError, "runtime torchtune-llama3.2-1b runs a "
                                                "BuiltinTrainer"):
            self.client.get_runtime_packages("torchtune-llama3.2-1b")
        self.assertEqual(len(self.custom.created), 3)

    def test_runtime_packages_of_a_failing_node_and_its_cleanup(self):
        def failed(obj):
            obj["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}
        self.custom.on_create = failed
        with self.assertRaisesRegex(RuntimeError, "Failed to get packages of runtime "
                                                  "torch-distributed.*is Failed"):
            self.client.get_runtime_packages("torch-distributed")
        self.assertEqual(len(self.custom.created), 1)
        self.assertEqual(self.client.list_jobs(), [])  # deleted even so

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
