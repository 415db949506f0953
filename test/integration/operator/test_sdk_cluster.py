"""The Python SDK's kubernetes backend (sdk/python, `TrainingClient(backend="kubernetes")`)
against the real control plane with the real `trainctl operator`: every public method on jobs
the operator runs (kwok plays the kubelet: pods run for the seconds their annotations say and
exit with the code they say; `kubectl logs` shows kwok's two fake lines), then the example
notebook's cluster cells with a kubeconfig whose context names the test namespace."""
import contextlib
import io
import json
import os
import tempfile

from harness import (FOREVER, KUBECONFIG, OperatorTestCase, kubectl, make_job,
                     run_example_notebook, run_for, wait_for)
from trainctl import TrainingClient, constants, models

KWOK_LOG_LINE = "kwok fake container: this log is served by the kwok node through the API server"


def train_with_dollar(params):
    # The source travels in the container's command: "$HOME" must arrive as written.
    print("home is $HOME", params["lr"])


class SdkOnCluster(OperatorTestCase):

    def setUp(self):
        self.client = TrainingClient(config_file=KUBECONFIG, namespace=self.ns,
                                     backend="kubernetes")

    def test_function_job_every_read_method(self):
        c = self.client
        c.create_job(name="fn", train_func=train_with_dollar, parameters={"lr": 0.1},
                     num_workers=3, labels={"team": "ml"})
        wait_for("fn Created", lambda: c.is_job_created("fn"), timeout=30)
        job = c.wait_for_job_conditions("fn", wait_timeout=90, polling_interval=1)
        self.assertIsInstance(job, models.KubeflowOrgV1PyTorchJob)
        self.assertTrue(c.is_job_succeeded("fn"))
        self.assertFalse(c.is_job_failed("fn"))
        self.assertEqual([x.type for x in c.get_job_conditions("fn")][-1], "Succeeded")
        self.assertEqual(job.metadata.labels, {"team": "ml"})
        # Upstream's shape: Master 1 + Worker num_workers-1, torchrun with nproc 'auto' unset.
        specs = job.spec.pytorch_replica_specs
        self.assertEqual((specs["Master"].replicas, specs["Worker"].replicas), (1, 2))
        script = " ".join(specs["Worker"].template.spec.containers[0].args)
        self.assertIn('print("home is $HOME", params["lr"])', script)
        self.assertIn("<< 'TRAINCTL_EOF_", script)  # a quoted heredoc: no expansion
        self.assertIn("fn", [j.metadata.name for j in c.list_jobs()])

        self.assertEqual(c.get_job_pod_names("fn", is_master=True), ["fn-master-0"])
        self.assertEqual(sorted(c.get_job_pod_names("fn")),
                         ["fn-master-0", "fn-worker-0", "fn-worker-1"])
        self.assertEqual(c.get_job_pod_names("fn", replica_type="worker", replica_index=1),
                         ["fn-worker-1"])
        with self.assertRaisesRegex(ValueError, "replica_type"):
            c.get_job_pod_names("fn", replica_type="trainer")

        logs, events = c.get_job_logs("fn", verbose=True)
        self.assertEqual(list(logs), ["fn-master-0"])
        self.assertIn(KWOK_LOG_LINE, logs["fn-master-0"])
        self.assertTrue(any("Created pod: fn-worker-1" in e for e in events["pytorchjob/fn"]),
                        events)
        # verbose reads the job with the kind asked for, not the client's (upstream's bug).
        tf = TrainingClient(config_file=KUBECONFIG, namespace=self.ns, backend="kubernetes",
                            job_kind="TFJob")
        logs, events = tf.get_job_logs("fn", job_kind="PyTorchJob", verbose=True)
        self.assertIn("pytorchjob/fn", events)

        c.delete_job("fn")
        wait_for("fn deleted", lambda: "fn" not in [j.metadata.name for j in c.list_jobs()])
        with self.assertRaisesRegex(RuntimeError, "Failed to get PyTorchJob"):
            c.get_job("fn")

    def test_object_job_follow_waits_for_pending_pods(self):
        c = self.client
        job = make_job("PyTorchJob", "obj", self.ns,
                       {"Master": (1, run_for(4)),
                        "Worker": (2, {**run_for(3), "trainctl.dev/kwok-start-seconds": "3"})})
        c.create_job(job=models.deserialize(job, "KubeflowOrgV1PyTorchJob"))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            logs, _ = c.get_job_logs("obj", is_master=False, follow=True)
        # Every pod's lines, the ones Pending at first included, each line on its own; the
        # call returns once the pods have finished (kwok never closes a followed stream).
        self.assertEqual(sorted(logs), ["obj-master-0", "obj-worker-0", "obj-worker-1"])
        for pod in logs:
            self.assertIn(f"[Pod {pod}]: {KWOK_LOG_LINE}\n", printed.getvalue())
        self.assertEqual(logs["obj-worker-1"].count("\n"), 2)
        c.wait_for_job_conditions("obj", wait_timeout=60, polling_interval=1)
        c.delete_job("obj")

    def test_running_job_timeout_update_and_delete_while_running(self):
        c = self.client
        c.create_job(job=make_job("PyTorchJob", "run", self.ns,
                                  {"Master": (1, FOREVER), "Worker": (1, FOREVER)}))
        c.wait_for_job_conditions("run", expected_conditions={"Running"}, wait_timeout=60,
                                  polling_interval=1)
        self.assertTrue(c.is_job_running("run"))
        with self.assertRaisesRegex(TimeoutError, "Timeout waiting for PyTorchJob"):
            c.wait_for_job_conditions("run", wait_timeout=2, polling_interval=1)
        stream = c.stream_job_logs("run", replica_type="worker")
        first = [next(stream), next(stream)]
        stream.close()  # a notebook's interrupt: the readers stop
        self.assertEqual(first, [("run-worker-0", "kwok fake container: started"),
                                 ("run-worker-0", KWOK_LOG_LINE)])

        current = c.get_job("run")
        current.metadata.labels = {"stage": "two"}
        c.update_job(current, "run")
        self.assertEqual(self.job("PyTorchJob", "run")["metadata"]["labels"], {"stage": "two"})

        c.delete_job("run")
        wait_for("run's pods gone", lambda: not self.live_pods("run"), timeout=60)

    def test_failed_job_names_the_first_failed_replica(self):
        c = self.client
        job = make_job("PyTorchJob", "bad", self.ns,
                       {"Master": (1, FOREVER), "Worker": (1, run_for(1, exit_code=3))})
        c.create_job(job=job)  # a plain dict is accepted too
        with self.assertRaises(RuntimeError) as raised:
            c.wait_for_job_conditions("bad", wait_timeout=60, polling_interval=1)
        text = str(raised.exception)
        self.assertIn("PyTorchJob", text)
        self.assertIn("First failed replica: bad-worker-0 (exit code 3)", text)
        self.assertIn(KWOK_LOG_LINE, text)
        self.assertTrue(c.is_job_failed("bad"))
        c.delete_job("bad")

    def test_tensorflow_from_a_function_and_xgboost_from_yaml(self):
        c = self.client
        c.create_job(name="tf", job_kind="TFJob", train_func=train_with_dollar,
                     parameters={"lr": 1}, num_workers=2, num_chief_replicas=1,
                     num_ps_replicas=1)
        job = c.wait_for_job_conditions("tf", job_kind="TFJob", wait_timeout=90,
                                        polling_interval=1)
        self.assertEqual(sorted(job.spec.tf_replica_specs), ["Chief", "PS", "Worker"])
        self.assertEqual(c.get_job_pod_names("tf", is_master=True), ["tf-chief-0"])

        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            import yaml
            yaml.safe_dump(make_job("XGBoostJob", "xgb", self.ns,
                                    {"Master": (1, run_for(1)), "Worker": (2, run_for(1))}), f)
        try:
            c.create_job(job=f.name)
        finally:
            os.unlink(f.name)
        c.wait_for_job_conditions("xgb", job_kind="XGBoostJob", wait_timeout=90,
                                  polling_interval=1)
        self.assertEqual(sorted(c.get_job_pod_names("xgb")),
                         ["xgb-master-0", "xgb-worker-0", "xgb-worker-1"])
        for kind, name in (("TFJob", "tf"), ("XGBoostJob", "xgb")):
            c.delete_job(name, job_kind=kind)

    def test_api_errors_are_runtime_errors_naming_the_job(self):
        c = self.client
        with self.assertRaisesRegex(RuntimeError, f"Failed to get PyTorchJob: {self.ns}/nope"):
            c.get_job("nope")
        with self.assertRaisesRegex(RuntimeError, "Failed to delete"):
            c.delete_job("nope")
        # The operator's admission webhook is not in play here; the API server's schema is.
        bad = make_job("PyTorchJob", "schema", self.ns, {"Master": (1, run_for(1))})
        bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "one"
        with self.assertRaisesRegex(RuntimeError, "Failed to create PyTorchJob"):
            c.create_job(job=bad)

    def test_train_builds_upstreams_pvc_and_job_with_a_secret_and_waiting_workers(self):
        from trainctl.storage_initializer import (HuggingFaceDatasetParams,
                                                  HuggingFaceModelParams,
                                                  HuggingFaceTrainerParams)

        class Config(dict):  # what transformers/peft objects offer: to_dict()
            def to_dict(self):
                return dict(self)

        token = "hf_cluster_SECRET_31c9"
        c = self.client
        c.train(name="llm", num_workers=2, num_procs_per_worker=2,
                model_provider_parameters=HuggingFaceModelParams(
                    model_uri="hf://google-bert/bert-base-cased",
                    transformer_type="AutoModelForSequenceClassification", num_labels=5,
                    access_token=token),
                dataset_provider_parameters=HuggingFaceDatasetParams(
                    repo_id="yelp_review_full", split="train[:100]"),
                trainer_parameters=HuggingFaceTrainerParams(
                    training_parameters=Config(output_dir="out", num_train_epochs=1),
                    lora_config=Config(r=8, lora_alpha=8)),
                storage_config={"size": "2Gi"}, env_vars={"HF_HOME": "/tmp"})
        pvc = kubectl("get", "pvc", "llm", "-n", self.ns, "-o", "json").stdout
        pvc = json.loads(pvc)["spec"]
        self.assertEqual(pvc["resources"]["requests"]["storage"], "2Gi")
        self.assertEqual(pvc["accessModes"], constants.PVC_DEFAULT_ACCESS_MODES)
        secret = json.loads(kubectl("get", "secret", "llm-credentials", "-n", self.ns, "-o",
                                    "json").stdout)
        self.assertEqual(sorted(secret["data"]), ["model-token"])

        job = self.job("PyTorchJob", "llm")
        self.assertNotIn(token, json.dumps(job), "the token is in the Secret only")
        job = job["spec"]
        self.assertEqual(job["nprocPerNode"], "2")
        master = job["pytorchReplicaSpecs"]["Master"]
        worker = job["pytorchReplicaSpecs"]["Worker"]
        self.assertEqual((master["replicas"], worker["replicas"]), (1, 1))
        self.assertEqual((master["restartPolicy"], worker["restartPolicy"]),
                         ("ExitCode", "ExitCode"))
        init = master["template"]["spec"]["initContainers"]
        self.assertEqual([i["name"] for i in init], ["storage-initializer"])
        self.assertEqual(init[0]["image"], constants.STORAGE_INITIALIZER_IMAGE)
        self.assertEqual(init[0]["args"][:2], ["--model_provider", "hf"])
        model = json.loads(init[0]["args"][3])
        self.assertEqual(model["num_labels"], 5)
        self.assertNotIn("access_token", model)
        self.assertIn({"name": "TRAINCTL_MODEL_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": "llm-credentials", "key": "model-token"}}}, init[0]["env"])
        self.assertEqual(init[0]["args"][4:6], ["--dataset_provider", "hf"])
        waits = worker["template"]["spec"]["initContainers"]
        self.assertEqual([i["name"] for i in waits], ["wait-for-storage-initializer"],
                         "Workers wait for the Master's storage initializer")
        for spec in (master, worker):
            pod = spec["template"]["spec"]
            self.assertEqual(pod["volumes"], [{"name": "storage-initializer",
                                               "persistentVolumeClaim": {"claimName": "llm"}}])
            trainer = pod["containers"][0]
            self.assertEqual(trainer["name"], "pytorch")
            self.assertEqual(trainer["image"], constants.TRAINER_TRANSFORMER_IMAGE)
            self.assertNotIn("command", trainer, "upstream's image runs its own entrypoint")
            args = dict(zip(trainer["args"][::2], trainer["args"][1::2]))
            self.assertEqual(args["--transformer_type"], "AutoModelForSequenceClassification")
            self.assertEqual(json.loads(args["--lora_config"]), {"r": 8, "lora_alpha": 8})
            self.assertEqual(args["--model_dir"], constants.VOLUME_PATH_MODEL)
            self.assertIn({"name": "HF_HOME", "value": "/tmp"}, trainer["env"])
        # The operator made the pods, each with its init container (they wait for a volume
        # this test plane cannot provide: the cluster run is checked as objects).
        wait_for("llm's pods", lambda: len(self.pods("llm")) == 2, timeout=30)
        for pod in self.pods("llm"):
            first = pod["spec"]["initContainers"][0]["name"]  # the operator may add its own
            self.assertIn(first, ("storage-initializer", "wait-for-storage-initializer"))
        # A second train() with the same name finds the PVC and says so; the job then exists.
        with self.assertRaisesRegex(RuntimeError, "Failed to create PyTorchJob"):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                c.train(name="llm", model_provider_parameters=HuggingFaceModelParams(
                    model_uri="hf://x", transformer_type="AutoModelForCausalLM"),
                    dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="y"),
                    trainer_parameters=HuggingFaceTrainerParams(
                        training_parameters=Config(), lora_config=Config()))
        self.assertIn(f"PVC 'llm' already exists in namespace {self.ns}.", printed.getvalue())
        # The workspace goes with the job only when asked: the PVC and the Secret.
        c.delete_job("llm", delete_workspace=True)
        wait_for("the PVC and the Secret to go", lambda: kubectl(
            "get", "pvc,secret", "-n", self.ns, "-o", "name").stdout.count("llm") == 0,
            timeout=60)

    def test_train_with_our_images_runs_our_initializer_on_every_replica(self):
        from trainctl.storage_initializer import (HuggingFaceDatasetParams,
                                                  HuggingFaceModelParams,
                                                  HuggingFaceTrainerParams)

        class Config(dict):
            def to_dict(self):
                return dict(self)

        self.client.train(
            name="ours", num_workers=3, trainer_image="localhost:5000/trainctl-trainer:dev",
            initializer_image="localhost:5000/trainctl-initializer:dev",
            model_provider_parameters=HuggingFaceModelParams(
                model_uri="hf://org/model", transformer_type="AutoModelForCausalLM"),
            dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="org/data"),
            trainer_parameters=HuggingFaceTrainerParams(training_parameters=Config(),
                                                        lora_config=None))
        wait_for("ours' pods", lambda: len(self.pods("ours")) == 3, timeout=30)
        for pod in self.pods("ours"):
            init = pod["spec"]["initContainers"][0]  # first: before the operator's own
            self.assertEqual((init["name"], init["image"]),
                             ("storage-initializer", "localhost:5000/trainctl-initializer:dev"))
            main = pod["spec"]["containers"][0]
            self.assertEqual(main["command"], ["torchrun", "--module",
                                               "trainctl.trainer.hf_llm_training"])
            self.assertNotIn("--lora_config", main["args"], "no LoRA: full fine-tuning")
        self.client.delete_job("ours", delete_workspace=True)


class NotebookOnCluster(OperatorTestCase):
    """The example notebooks end to end: their local cells, then their cluster cells against
    this operator (the kubeconfig's current context names the test namespace, as a user's
    would)."""

    def run_notebook(self, name):
        """The executed notebook's printed output."""
        rc, output, printed = run_example_notebook(name, self.ns)
        self.assertEqual(rc, 0, output)
        return printed

    def test_fine_tune_notebook_cluster_cells(self):
        printed = self.run_notebook("fine-tune-an-llm.ipynb")
        self.assertNotIn("no cluster configured", printed)
        self.assertIn("Master 1 ['storage-initializer']", printed)
        self.assertIn("Worker 1 ['wait-for-storage-initializer']", printed)
        self.assertIn(f"workspace: pvc://{self.ns}/notebook-fine-tune", printed)
        wait_for("the fine-tune job and its PVC to go", lambda: self.job(
            "PyTorchJob", "notebook-fine-tune") is None and "notebook-fine-tune" not in kubectl(
            "get", "pvc", "-n", self.ns, "-o", "name").stdout, timeout=60)

    def test_notebook_cluster_cells(self):
        printed = self.run_notebook("train-locally-then-on-a-cluster.ipynb")
        self.assertNotIn("no cluster configured", printed)
        self.assertIn("['notebook-ddp-digits-master-0', 'notebook-ddp-digits-worker-0']", printed)
        self.assertIn("Succeeded ['notebook-ddp-digits-master-0']", printed)
        # Its last cell deleted the cluster job.
        self.assertIsNone(self.job("PyTorchJob", "notebook-ddp-digits"))
