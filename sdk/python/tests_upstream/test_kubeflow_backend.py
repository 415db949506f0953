"""The unmodified ``kubeflow`` SDK 0.5.0's own ``TrainerClient`` with trainctl's local backend set
as its public ``backend`` (trainctl.kubeflow_backend): a function on 2 nodes of the built-in
torch-distributed runtime trains through upstream's class, with upstream's CustomTrainer; its
option objects and get_runtime_packages go through trainctl too; and kubeflow's own option and
TorchTune objects become the TrainJob fields upstream's own code makes of them.

Run by the kubeflow SDK's own venv (hack/upstream-sdk/venv.sh trainer, no system packages) with
the project's SDK on PYTHONPATH: CTest `sdk.kubeflow_backend`. The training itself runs under
Debian's torchrun, started by the trainctl binary ($TRAINCTL_BIN).
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

from kubeflow.trainer import CustomTrainer, LocalProcessBackendConfig, TrainerClient

import trainctl
from trainctl import kubeflow_backend

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import train_funcs  # noqa: E402


class KubeflowTrainerClientOnTrainctl(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="trainctl-kubeflow-backend-")
        self.client = TrainerClient(backend_config=LocalProcessBackendConfig())
        self.client.backend = kubeflow_backend.runtime_backend("local", state_dir=self.state)

    def tearDown(self):
        for job in trainctl.TrainerClient(backend="local", state_dir=self.state).list_jobs():
            trainctl.TrainerClient(backend="local", state_dir=self.state).delete_job(job.name)
        shutil.rmtree(self.state, ignore_errors=True)

    def test_upstreams_client_trains_on_two_local_nodes(self):
        from kubeflow.trainer.backends.base import RuntimeBackend
        self.assertIsInstance(self.client.backend, RuntimeBackend)
        self.assertIn("torch-distributed", [r.name for r in self.client.list_runtimes()])
        name = self.client.train(runtime="torch-distributed", trainer=CustomTrainer(
            func=train_funcs.ddp_digits, func_args={"params": {"lr": 0.5, "epochs": 10}},
            num_nodes=2))
        job = self.client.wait_for_job_status(name, timeout=300, polling_interval=1)
        self.assertEqual(job.status, "Complete")
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual(sorted(s.name for s in job.steps), ["node-0", "node-1"])
        lines = list(self.client.get_job_logs(name, step="node-1"))
        results = [json.loads(line[line.index("RESULT ") + 7:]) for line in lines
                   if "RESULT {" in line]
        self.assertEqual([(r["rank"], r["world"]) for r in results], [(1, 2)])
        self.assertIn(name, [j.name for j in self.client.list_jobs()])
        self.client.delete_job(name)
        self.assertNotIn(name, [j.name for j in self.client.list_jobs()])

    def test_runtime_packages_and_options_through_upstreams_client(self):
        from kubeflow.trainer import CustomTrainerContainer
        from kubeflow.trainer import options as o
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.client.get_runtime_packages(self.client.get_runtime("torch-distributed"))
        lines = out.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("Python: 3."), lines[:3])
        self.assertEqual(lines[1].split(), ["Package", "Version"])
        self.assertEqual(self.client.list_jobs(), [])
        # kubeflow's own option objects: read by trainctl, honoured by the local runner.
        name = self.client.train(
            runtime="torch-distributed", trainer=CustomTrainerContainer(image="unused:1"),
            options=[o.Name("upstream-options"), o.Labels({"from": "kubeflow"}),
                     o.TrainerCommand(["python3", "-c", "import sys; print(sys.argv[1:])"]),
                     o.TrainerArgs(["a", "b"])])
        self.assertEqual(name, "upstream-options")
        self.assertEqual(self.client.wait_for_job_status(name, timeout=120,
                                                         polling_interval=1).status, "Complete")
        self.assertEqual(list(self.client.get_job_logs(name)), ["['a', 'b']"])
        # One the local runner cannot honour is refused, with why, before anything runs.
        patch = o.RuntimePatch(training_runtime_spec=o.TrainingRuntimeSpecPatch(
            template=o.JobSetTemplatePatch(spec=o.JobSetSpecPatch(replicated_jobs=[
                o.ReplicatedJobPatch(name="node", template=o.JobTemplatePatch(
                    spec=o.JobSpecPatch(template=o.PodTemplatePatch(
                        spec=o.PodSpecPatch(tolerations=[{"key": "gpu"}])))))]))))
        with self.assertRaisesRegex(ValueError, r"options\[0\] RuntimePatch sets .*\.spec\."
                                                r"tolerations, which the local backend cannot "
                                                "honour: one machine and no scheduler"):
            self.client.train(runtime="torch-distributed", options=[patch],
                              trainer=CustomTrainerContainer(image="unused:1"))
        self.assertEqual([j.name for j in self.client.list_jobs()], [name])
        with self.assertRaisesRegex(ValueError, "no-such-runtime"):
            self.client.train(runtime="no-such-runtime",
                              trainer=CustomTrainer(func=train_funcs.ddp_digits))


def _quantities(value):
    """Upstream's model writes quantities as numbers (4.0), trainctl as the API's text ("4")."""
    if isinstance(value, dict):
        return {k: _quantities(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, (int, float)) else value


class UpstreamObjectsMakeUpstreamsTrainJob(unittest.TestCase):
    """kubeflow 0.5.0's own option and TorchTune objects: trainctl's TrainJob fields equal what
    upstream's own code makes of them (its options' __call__ for the Kubernetes backend, its
    get_trainer_cr_from_builtin_trainer)."""

    def test_options(self):
        from kubeflow.trainer import options as o
        from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend
        from trainctl import trainjob_spec
        kube = object.__new__(KubernetesBackend)  # the options only check its class
        patch = o.RuntimePatch(training_runtime_spec=o.TrainingRuntimeSpecPatch(
            template=o.JobSetTemplatePatch(
                metadata={"labels": {"js": "1"}},
                spec=o.JobSetSpecPatch(replicated_jobs=[o.ReplicatedJobPatch(
                    name="node", template=o.JobTemplatePatch(
                        metadata={"annotations": {"j": "2"}},
                        spec=o.JobSpecPatch(template=o.PodTemplatePatch(
                            metadata={"labels": {"p": "3"}},
                            spec=o.PodSpecPatch(
                                service_account_name="sa", volumes=[],
                                node_selector={"n": "s"}, tolerations=[{"key": "t"}],
                                init_containers=[o.ContainerPatch(
                                    name="init", volume_mounts=[
                                        {"name": "v", "mountPath": "/v"}])],
                                containers=[o.ContainerPatch(
                                    name="side", env=[{"name": "E", "value": "1"}],
                                    security_context={"runAsUser": 1})])))))]))))
        options = [o.Name("n1"), o.Labels({"l": "1"}), o.Annotations({"a": "2"}),
                   o.TrainerCommand(["c"]), o.TrainerArgs(["--x"]),
                   o.ActiveDeadlineSeconds(60), patch]
        theirs = {}
        for option in options:
            option(theirs, None, kube)
        ours = trainjob_spec.read_options(options, "container")
        self.assertEqual(ours.name, "n1")
        body = trainjob_spec.apply_options({"metadata": {"name": "n1"}, "spec": {}}, ours)
        self.assertEqual(body, theirs)

    def test_builtin_trainer(self):
        from kubeflow.trainer.backends.kubernetes import utils
        from kubeflow.trainer.constants import constants
        from kubeflow.trainer.types import types as t
        from trainctl import trainer_types, trainjob_spec
        theirs_runtime = t.Runtime(
            name="torchtune-llama3.2-1b", kind=t.RuntimeKind.CLUSTER_TRAINING_RUNTIME,
            trainer=t.RuntimeTrainer(trainer_type=t.TrainerType.BUILTIN_TRAINER,
                                     framework="torchtune", image="i"))
        theirs_runtime.trainer.set_command(constants.TORCH_TUNE_COMMAND)
        ours_runtime = trainjob_spec.runtime_of({
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "torchtune-llama3.2-1b",
                         "labels": {"trainer.kubeflow.org/framework": "torchtune"}},
            "spec": {"mlPolicy": {"torch": {}}, "template": {"spec": {"replicatedJobs": [{
                "name": "node", "template": {
                    "metadata": {"labels": {
                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [
                        {"name": "node", "image": "i"}]}}}}}]}}}})
        self.assertEqual(ours_runtime.trainer.trainer_type,
                         trainer_types.TrainerType.BUILTIN_TRAINER)
        configs = [
            t.TorchTuneConfig(),
            t.TorchTuneConfig(
                dtype=t.DataType.FP32, batch_size=2, epochs=1, num_nodes=3,
                loss=t.Loss.CEWithChunkedOutputLoss, resources_per_node={"GPU": 2, "cpu": 8},
                peft_config=t.LoraConfig(apply_lora_to_output=False, lora_dropout=0.05,
                                         use_dora=True, lora_attn_modules=["q_proj"]),
                dataset_preprocess_config=t.TorchTuneInstructDataset(
                    source=t.DataFormat.CSV, new_system_prompt="Be brief.",
                    train_on_input=False))]
        uris = [None, "hf://tatsu-lab/alpaca", "tatsu-lab/alpaca/data/x.json",
                "hf://org/repo/folder"]
        for config in configs:
            for uri in uris:
                init = t.Initializer(
                    dataset=t.HuggingFaceDatasetInitializer(storage_uri=uri)) if uri else None
                with self.subTest(config=config, uri=uri):
                    trainer = t.BuiltinTrainer(config=config)
                    theirs = utils.get_trainer_cr_from_builtin_trainer(
                        theirs_runtime, trainer, init).to_dict()
                    ours = trainjob_spec.builtin_trainer_section(trainer, ours_runtime, init)
                    self.assertEqual(_quantities(ours), _quantities(theirs))


if __name__ == "__main__":
    unittest.main()
