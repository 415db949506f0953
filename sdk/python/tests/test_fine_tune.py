"""train()'s pieces without training: parameters → objects on both backends, credentials kept
out of every job field, TrainingArguments and LoraConfig round trips through the trainer's
parsing, the storage initializer's command line on bad input, checkpoints and metrics."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from transformers import TrainingArguments
from peft import LoraConfig

from trainctl import constants, models
from trainctl.api import llm
from trainctl.storage_initializer import (HuggingFaceDatasetParams, HuggingFaceModelParams,
                                          HuggingFaceTrainerParams, S3DatasetParams, storage)
from trainctl.trainer import hf_llm_training as trainer

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRETS = ("hf_model_SECRET_1", "hf_data_SECRET_2", "hf_hub_SECRET_3")


def objects(num_workers=2, **kw):
    ta = TrainingArguments(output_dir="out", max_steps=5, lr_scheduler_type="cosine",
                           hub_token=SECRETS[2], report_to="none")
    args = dict(
        name="ft", namespace="ns", labels=None, annotations=None, num_workers=num_workers,
        num_procs_per_worker=2, resources_per_worker={"gpu": 1, "cpu": 2},
        model_provider_parameters=HuggingFaceModelParams(
            model_uri="hf://org/tiny", transformer_type="AutoModelForCausalLM",
            access_token=SECRETS[0]),
        dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="org/data",
                                                             access_token=SECRETS[1]),
        trainer_parameters=HuggingFaceTrainerParams(
            training_parameters=ta, lora_config=LoraConfig(r=4, target_modules=["c_attn"])),
        init_env_vars=None, env_vars={"A": "1"}, storage_config=None)
    args.update(kw)
    out = llm.fine_tune_objects(**args)
    out["json"] = models.serialize(out["job"])
    return out


def template(job, rtype):
    return job["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"]


def arg_after(container, flag):
    return container["args"][container["args"].index(flag) + 1]


class ObjectsTest(unittest.TestCase):
    def test_local_every_replica_runs_the_initializer_then_torchrun_of_our_trainer(self):
        job = objects(local_python="/venv/bin/python")["json"]
        self.assertEqual(job["spec"]["nprocPerNode"], "2")
        self.assertEqual(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], 1)
        for rtype in ("Master", "Worker"):
            spec = template(job, rtype)
            init = spec["initContainers"]
            self.assertEqual([c["name"] for c in init], ["storage-initializer"])
            self.assertEqual(init[0]["command"], ["/venv/bin/python", "-m",
                                                  "trainctl.storage_initializer"])
            main = spec["containers"][0]
            self.assertEqual(main["command"], ["torchrun", "--module",
                                               "trainctl.trainer.hf_llm_training"])
            self.assertEqual(arg_after(main, "--model_dir"), "/workspace/model")
            self.assertEqual(main["resources"]["limits"], {"nvidia.com/gpu": 1, "cpu": 2})
            env = {e["name"]: e.get("value") for e in main["env"]}
            self.assertEqual(env["TRAINCTL_WORKSPACE"], "/workspace")
            self.assertEqual(env["PYTHONPATH"].split(os.pathsep)[0], SDK)
            self.assertEqual(spec["volumes"][0]["persistentVolumeClaim"]["claimName"], "ft")

    def test_cluster_default_keeps_upstreams_images_and_workers_wait_for_the_dataset(self):
        job = objects()["json"]
        master, worker = template(job, "Master"), template(job, "Worker")
        self.assertEqual(master["initContainers"][0]["image"],
                         constants.STORAGE_INITIALIZER_IMAGE)
        self.assertNotIn("command", master["initContainers"][0])
        self.assertNotIn("command", master["containers"][0], "the image's torchrun entrypoint")
        self.assertEqual(master["containers"][0]["image"], constants.TRAINER_TRANSFORMER_IMAGE)
        self.assertEqual(worker["initContainers"][0]["name"], llm.WAIT_CONTAINER)
        self.assertEqual(worker["initContainers"][0]["command"][-1], "/workspace/dataset")

    def test_cluster_with_our_images_every_replica_runs_our_initializer(self):
        job = objects(trainer_image="reg/trainer:1", initializer_image="reg/init:1")["json"]
        for rtype in ("Master", "Worker"):
            spec = template(job, rtype)
            self.assertEqual(spec["initContainers"][0]["image"], "reg/init:1")
            self.assertEqual(spec["containers"][0]["image"], "reg/trainer:1")
            self.assertEqual(spec["containers"][0]["command"][:2], ["torchrun", "--module"])

    def test_one_worker_is_a_master_alone(self):
        job = objects(num_workers=1)["json"]
        self.assertEqual(list(job["spec"]["pytorchReplicaSpecs"]), ["Master"])
        with self.assertRaisesRegex(ValueError, "num_workers must be at least 1"):
            objects(num_workers=0)

    def test_credentials_are_in_the_secret_and_in_no_job_field(self):
        for kw in ({}, {"local_python": sys.executable}):
            out = objects(**kw)
            text = json.dumps(out["json"])
            for secret in SECRETS:
                self.assertNotIn(secret, text)
            self.assertEqual(out["secret"], {"model_token": SECRETS[0],
                                             "dataset_token": SECRETS[1],
                                             "hub_token": SECRETS[2]})
            init = template(out["json"], "Master")["initContainers"][0]
            refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in init["env"]
                    if "valueFrom" in e}
            self.assertEqual(refs["TRAINCTL_MODEL_TOKEN"], {"name": "ft-credentials",
                                                            "key": "model-token"})
            main = template(out["json"], "Worker")["containers"][0]
            self.assertIn("TRAINCTL_HUB_TOKEN", [e["name"] for e in main["env"]])
        s3 = objects(dataset_provider_parameters=S3DatasetParams(
            endpoint_url="http://s3", bucket_name="b", file_key="k", access_key="AKIA_SECRET_4",
            secret_key="s3_SECRET_5"))
        self.assertNotIn("SECRET_4", json.dumps(s3["json"]))
        self.assertNotIn("SECRET_5", json.dumps(s3["json"]))
        self.assertEqual(s3["secret"]["s3_secret_key"], "s3_SECRET_5")

    def test_bad_parameters_are_value_errors_naming_what_is_allowed(self):
        with self.assertRaisesRegex(ValueError, "AutoModelForCausalLM"):
            HuggingFaceModelParams(model_uri="hf://a/b", transformer_type="AutoModelForMagic")
        with self.assertRaisesRegex(ValueError, "model_uri cannot be empty"):
            HuggingFaceModelParams(model_uri="", transformer_type="AutoModelForCausalLM")
        with self.assertRaisesRegex(ValueError, "Invalid model provider parameters"):
            objects(model_provider_parameters=HuggingFaceDatasetParams(repo_id="x"))
        with self.assertRaisesRegex(ValueError, "training_parameters"):
            objects(trainer_parameters=HuggingFaceTrainerParams())

    def test_missing_packages_are_named_with_the_install_command(self):
        real = llm.importlib.util.find_spec
        with mock.patch.object(llm.importlib.util, "find_spec",
                               lambda n: None if n in ("peft", "datasets") else real(n)):
            self.assertEqual(llm.missing_packages(lora=True), ["datasets", "peft"])
            self.assertEqual(llm.missing_packages(lora=False), ["datasets"])
        self.assertIn("pip install 'trainctl[huggingface]'", llm.INSTALL_HINT)


class RoundTripTest(unittest.TestCase):
    def test_training_arguments_survive_the_trip_to_the_trainer(self):
        ta = TrainingArguments(output_dir="/abs/out", max_steps=7, lr_scheduler_type="cosine",
                               save_strategy="steps", save_steps=3, hub_token="hf_real")
        sent, hub_token = llm.training_parameters(ta)
        self.assertEqual(hub_token, "hf_real")
        self.assertIsNone(sent["hub_token"], "never serialised")
        self.assertNotIn("logging_dir", sent, "client-side default: resolved by the trainer")
        self.assertNotIn("report_to", sent, "client-side default: resolved by the trainer")
        wire = json.loads(json.dumps(sent))
        fields = set(trainer._init_fields(TrainingArguments))
        kwargs, dropped = trainer.training_kwargs(dict(wire, future_arg=1), fields, "/ws")
        self.assertEqual(dropped, ["future_arg"])
        back = TrainingArguments(**kwargs)
        self.assertEqual(back.lr_scheduler_type, ta.lr_scheduler_type)
        self.assertEqual(back.save_strategy, ta.save_strategy)
        self.assertIsNone(back.hub_token, "the trainer takes it from the Secret as HF_TOKEN")
        self.assertEqual(back.output_dir, "/abs/out")
        if "logging_dir" in fields:  # gone in transformers 5
            self.assertTrue(back.logging_dir.startswith("/abs/out/runs/"))

    def test_upstream_placeholders_and_relative_paths(self):
        fields = set(trainer._init_fields(TrainingArguments))
        kwargs, _ = trainer.training_kwargs(
            {"output_dir": "out", "logging_dir": "logs", "hub_token": "<HUB_TOKEN>",
             "eval_strategy": "no"}, fields, "/ws")
        self.assertIsNone(kwargs["hub_token"])
        self.assertEqual(kwargs["output_dir"], "/ws/out")
        if "logging_dir" in fields:  # gone in transformers 5
            self.assertEqual(kwargs["logging_dir"], "/ws/logs")
        renamed = "evaluation_strategy" if "evaluation_strategy" in fields else "eval_strategy"
        self.assertIn(renamed, kwargs, "a key renamed between transformers releases is mapped")

    def test_lora_config_round_trip(self):
        sent = json.loads(llm._json(LoraConfig(r=4, target_modules=["c_attn", "c_fc"]).to_dict()))
        kwargs, dropped = trainer.lora_kwargs(dict(sent, from_the_future=1),
                                              trainer._init_fields(LoraConfig),
                                              "AutoModelForCausalLM")
        self.assertEqual(dropped, ["from_the_future"])
        back = LoraConfig(**kwargs)
        self.assertEqual(back.r, 4)
        self.assertEqual(set(back.target_modules), {"c_attn", "c_fc"})
        self.assertEqual(str(back.task_type.value if hasattr(back.task_type, "value")
                             else back.task_type), "CAUSAL_LM")


class TrainerHelpersTest(unittest.TestCase):
    def test_the_last_complete_checkpoint_skips_one_cut_short(self):
        with tempfile.TemporaryDirectory() as out:
            for step, files in ((10, ["trainer_state.json", "adapter_model.safetensors",
                                      "optimizer.pt"]),
                                (20, ["adapter_model.safetensors"]),  # killed while saving
                                (5, ["trainer_state.json", "model.safetensors",
                                     "optimizer.pt"])):
                os.makedirs(os.path.join(out, f"checkpoint-{step}"))
                for f in files:
                    open(os.path.join(out, f"checkpoint-{step}", f), "w").close()
            self.assertEqual(trainer.last_complete_checkpoint(out),
                             os.path.join(out, "checkpoint-10"))
        self.assertIsNone(trainer.last_complete_checkpoint("/nonexistent"))

    def test_cpu_devices_with_an_index_load_checkpoints_to_plain_cpu(self):
        import torch
        seen = []
        with mock.patch.object(torch, "load", lambda *a, **kw: seen.append(kw["map_location"])):
            with trainer.cpu_checkpoint_loading(torch.device("cpu", 0)):
                torch.load("f", map_location=torch.device("cpu", 0))
                torch.load("f", map_location="cpu:1")
            with trainer.cpu_checkpoint_loading(torch.device("cpu")):
                torch.load("f", map_location=torch.device("cpu", 0))
        self.assertEqual(seen, ["cpu", "cpu", torch.device("cpu", 0)])

    def test_metric_records(self):
        # Read back by trainctl's reader: tests/test_metrics.py, e2e/test_metrics_local.py.
        self.assertEqual(trainer.metric_record(3, {"loss": float("nan"), "epoch": 0.5,
                                                   "note": "x"}),
                         {"step": 3, "loss": None, "epoch": 0.5})


def model_folder(tmp):
    """A folder that passes for a model saved with save_pretrained (a config.json)."""
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as f:
        f.write("{}")
    return model


def initializer(workspace, model, dataset, env=None):
    """Runs the storage initializer offline, so that a test addresses only this machine (online,
    datasets reports each load to s3.amazonaws.com and the Hub is asked for metadata)."""
    path = os.pathsep.join(p for p in (SDK, os.environ.get("PYTHONPATH")) if p)
    e = dict(os.environ, TRAINCTL_WORKSPACE=workspace, PYTHONPATH=path, HF_HUB_OFFLINE="1",
             HF_DATASETS_OFFLINE="1")
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "trainctl.storage_initializer", "--model_provider", "hf",
         "--model_provider_parameters", json.dumps(model), "--dataset_provider", "hf",
         "--dataset_provider_parameters", json.dumps(dataset)],
        capture_output=True, text=True, env=e, timeout=120)


class StorageInitializerTest(unittest.TestCase):
    def test_a_missing_model_offline_names_the_uri_and_every_cache_searched(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = initializer(os.path.join(tmp, "ws"),
                            {"model_uri": "hf://nobody/absent-model",
                             "transformer_type": "AutoModelForCausalLM"},
                            {"repo_id": "x"},
                            {"HF_HUB_OFFLINE": "1", "HF_HOME": os.path.join(tmp, "hf")})
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("model_uri 'hf://nobody/absent-model': not found offline "
                          "(HF_HUB_OFFLINE is set); searched the Hugging Face caches "
                          f"{tmp}/ws/model, {tmp}/hf/hub", p.stderr)

    def test_a_dataset_without_text_names_the_columns_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = model_folder(tmp)
            data = os.path.join(tmp, "d.jsonl")
            with open(data, "w") as f:
                f.write('{"prompt": "a", "answer": "b"}\n')
            p = initializer(os.path.join(tmp, "ws"),
                            {"model_uri": "file://" + model,
                             "transformer_type": "AutoModelForCausalLM"},
                            {"repo_id": data}, {"HF_DATASETS_CACHE": os.path.join(tmp, "c")})
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"dataset {data!r} (split 'train') has no 'text' column, which text "
                          "models train on; columns found: prompt, answer", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "ws", "dataset")),
                             "nothing half-written")

    def test_an_hf_model_in_the_users_cache_is_linked_into_the_workspace_offline(self):
        sys.path.insert(0, os.path.join(SDK, "..", "..", "examples", "fine-tuning"))
        from tiny_model import DATASET, make_tiny_model
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "hf", "hub", "models--org--tiny")
            make_tiny_model(os.path.join(repo, "snapshots", "a" * 40))
            os.makedirs(os.path.join(repo, "refs"))
            with open(os.path.join(repo, "refs", "main"), "w") as f:
                f.write("a" * 40)
            ws = os.path.join(tmp, "ws")
            p = initializer(ws, {"model_uri": "hf://org/tiny",
                                 "transformer_type": "AutoModelForCausalLM"},
                            {"repo_id": DATASET},
                            {"HF_HUB_OFFLINE": "1", "HF_HOME": os.path.join(tmp, "hf"),
                             "HF_DATASETS_CACHE": os.path.join(tmp, "c")})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("taken from the Hugging Face cache", p.stdout)
            copied = os.path.join(ws, "model", "models--org--tiny", "snapshots", "a" * 40,
                                  "model.safetensors")
            self.assertEqual(os.stat(copied).st_ino, os.stat(os.path.join(
                repo, "snapshots", "a" * 40, "model.safetensors")).st_ino, "hard-linked")
            # In a process of its own, offline: transformers 4.40 looks for an adapter config on
            # the Hub despite local_files_only.
            load = subprocess.run(
                [sys.executable, "-c", "import sys, transformers; transformers.AutoModelForCausalLM"
                 ".from_pretrained('org/tiny', cache_dir=sys.argv[1], local_files_only=True)",
                 os.path.join(ws, "model")], env=dict(os.environ, HF_HUB_OFFLINE="1"),
                capture_output=True, text=True, timeout=120)
            self.assertEqual(load.returncode, 0, load.stderr)
            again = initializer(ws, {"model_uri": "hf://org/tiny",
                                     "transformer_type": "AutoModelForCausalLM"},
                                {"repo_id": DATASET}, {"HF_HUB_OFFLINE": "1"})
            self.assertIn("model and dataset already there", again.stdout)

    @unittest.skipIf(importlib.util.find_spec("boto3") is not None, "boto3 is installed")
    def test_s3_without_boto3_says_what_to_install(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = model_folder(tmp)
            e = dict(os.environ, TRAINCTL_WORKSPACE=os.path.join(tmp, "ws"),
                     PYTHONPATH=os.pathsep.join([SDK, os.environ.get("PYTHONPATH", "")]))
            p = subprocess.run(
                [sys.executable, "-m", "trainctl.storage_initializer", "--model_provider", "hf",
                 "--model_provider_parameters", json.dumps({
                     "model_uri": model, "transformer_type": "AutoModelForCausalLM"}),
                 "--dataset_provider", "s3", "--dataset_provider_parameters", json.dumps({
                     "endpoint_url": "http://127.0.0.1:9", "bucket_name": "b",
                     "file_key": "k"})], capture_output=True, text=True, env=e, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("dataset provider s3 needs boto3, which is not installed here: "
                          "pip install boto3", p.stderr)

    def test_the_fingerprint_ignores_secrets_and_sees_the_rest(self):
        a = storage.fingerprint("hf", {"model_uri": "m", "access_token": "t1"}, "hf",
                                {"repo_id": "d"})
        b = storage.fingerprint("hf", {"model_uri": "m", "access_token": "t2"}, "hf",
                                {"repo_id": "d"})
        c = storage.fingerprint("hf", {"model_uri": "m"}, "hf", {"repo_id": "other"})
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)


if __name__ == "__main__":
    unittest.main()


class LeaveStuckGroupTest(unittest.TestCase):
    """A trainer whose process group does not close after the model was saved says so, with its
    stacks, and exits 0 instead of hanging the job."""

    def test_it_prints_where_it_waited_and_exits_zero(self):
        import subprocess
        import sys
        proc = subprocess.run([sys.executable, "-c", "from trainctl.trainer import hf_llm_training as t; "
                               "t.leave_stuck_group(); print('not reached')"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("did not close within 120 s", proc.stderr)
        self.assertIn("Current thread", proc.stderr)
        self.assertNotIn("not reached", proc.stdout)

    def test_leaving_the_group_flushes_and_exits_zero_at_once(self):
        import subprocess
        import sys
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            code = ("import torch.distributed as dist\n"
                    f"dist.init_process_group('gloo', init_method='file://{tmp}/store', "
                    "rank=0, world_size=1)\n"
                    "print('saved', end='')\n"
                    "from trainctl.trainer import hf_llm_training as t\n"
                    "t.leave_group()\n"
                    "print('not reached')\n")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "saved")
