"""TrainingClient.train() on this machine, end to end through the real runner with real
transformers + peft on CPU: a small GPT-2 (built from a config, tokenizer trained on the repo's
JSONL) fine-tuned with LoRA by 2 replicas x 2 processes; the loss falls, the adapter is saved
and changes the model, no credential reaches a job field, log or event; a run whose runner is
SIGKILLed mid-training, started again, resumes from its last checkpoint and ends at max_steps;
bad input fails before training with the message that names it."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "examples", "fine-tuning"))

from tiny_model import DATASET, make_tiny_model  # noqa: E402

from trainctl import TrainingClient  # noqa: E402
from trainctl.storage_initializer import (HuggingFaceDatasetParams,  # noqa: E402
                                          HuggingFaceModelParams, HuggingFaceTrainerParams)

TOKEN = "hf_e2e_SECRET_do_not_leak_7f3a"
# Long enough that a test sees training under way before it kills something (about 45 steps/s
# on 2 cores).
MAX_STEPS = 300


def checkpoint_resumed(test, log):
    """The N of the checkpoint-N the trainer said it resumed from."""
    import re
    found = re.search(r"resuming from .*/out/checkpoint-(\d+)\b", log)
    test.assertIsNotNone(found, "the trainer did not resume")
    return int(found.group(1))


def trainer_pids(pgids):
    """The trainer processes (not torchrun's agents) in the process groups ``pgids``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                pgrp = int(f.read().rsplit(")", 1)[1].split()[2])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if pgrp in pgids and b"trainctl.trainer.hf_llm_training" in argv and \
                b"torch.distributed.run" not in argv:
            found.append(int(entry))
    return found


def trainer_params(max_steps, save_steps=10, **extra):
    from peft import LoraConfig
    from transformers import TrainingArguments
    args = TrainingArguments(
        output_dir="out", max_steps=max_steps, per_device_train_batch_size=4,
        learning_rate=1e-2, logging_steps=1, save_steps=save_steps, report_to="none",
        use_cpu=True, disable_tqdm=True, seed=1, ddp_find_unused_parameters=False,
        hub_token=TOKEN, **extra)
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj", "c_fc"],
                      lora_dropout=0.0)
    return HuggingFaceTrainerParams(training_parameters=args, lora_config=lora)


class FineTuneLocalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="trainctl-ft-")
        cls.base = make_tiny_model(os.path.join(cls.tmp, "base"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="state-", dir=self.tmp)
        self.client = TrainingClient(backend="local", state_dir=self.state)

    def tearDown(self):
        for job in self.client.list_jobs():
            with contextlib.suppress(RuntimeError):
                self.client.delete_job(job.metadata.name, delete_workspace=True)

    def train(self, name, max_steps, num_workers=2, procs=2, **kw):
        self.client.train(
            name=name, num_workers=num_workers, num_procs_per_worker=procs,
            model_provider_parameters=kw.pop("model", HuggingFaceModelParams(
                model_uri="file://" + self.base, transformer_type="AutoModelForCausalLM",
                access_token=TOKEN)),
            dataset_provider_parameters=kw.pop("dataset", HuggingFaceDatasetParams(
                repo_id=DATASET)),
            trainer_parameters=trainer_params(max_steps, **kw),
            env_vars={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
            init_env_vars={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                           "HF_DATASETS_CACHE": os.path.join(self.tmp, "datasets-cache")})

    def wait(self, name, timeout):
        """wait_for_job_conditions; on a timeout, each trainer prints where its threads wait
        (SIGUSR1, faulthandler) and the test fails with every replica's last lines."""
        try:
            return self.client.wait_for_job_conditions(name, wait_timeout=timeout,
                                                       polling_interval=1)
        except TimeoutError as e:
            doc = json.loads(self.trainctl("describe", name, "-o", "json").stdout or "{}")
            pgids = {r["pid"] for r in doc.get("replicas", []) if r.get("pid")}
            for pid in trainer_pids(pgids):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR1)
            time.sleep(3)
            logs, _ = self.client.get_job_logs(name, is_master=False)
            tails = "".join(f"\n--- {replica}:\n{text[-15000:]}" for replica, text in logs.items())
            states = [{k: r.get(k) for k in ("name", "state", "pid", "attempt")}
                      for r in doc.get("replicas", [])]
            self.fail(f"{e}\nreplicas: {states}{tails}")

    def trainctl(self, *args):
        return subprocess.run([self.client._backend.trainctl, "--state-dir", self.state] +
                              list(args), capture_output=True, text=True, timeout=60)

    def test_lora_on_two_replicas_of_two_processes_learns_and_saves_an_adapter(self):
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        c = self.client
        self.train("tiny", max_steps=40)
        job = self.wait("tiny", 600)
        self.assertTrue(c.is_job_succeeded(job=job), job.status.conditions)
        logs, _ = c.get_job_logs("tiny", is_master=False)
        # The trainer leaves a process group stuck after the save (a hang seen twice on
        # 2026-11-27, cause unknown) with every thread's stack: shown here, so a run that hit it
        # tells where it waited.
        for replica, text in logs.items():
            if "did not close within" in text:
                print(f"\n--- {replica}: the final barrier hung; its log:\n{text[-20000:]}",
                      file=sys.stderr)
        self.assertRegex(logs["tiny-master-0"],
                         r"trainer: 4 process\(es\), device cpu(:0)?, process group gloo")
        self.assertIn("already there", logs["tiny-master-0"] + logs["tiny-worker-0"],
                      "the storage initializer did the work once")

        losses = [m["loss"] for m in c.get_job_metrics("tiny") if "loss" in m]
        self.assertEqual(len(losses), 40)
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        self.assertGreater(first - last, 0.1, f"first 5 {first:.3f}, last 5 {last:.3f}")

        workspace = c.get_job_workspace("tiny")
        self.assertEqual(workspace, os.path.join(self.state, ".claims", "default", "tiny"))
        described = self.trainctl("describe", "pytorchjob", "tiny")
        self.assertIn(f"Workspace:          {workspace} (PVC tiny;", described.stdout)
        out = os.path.join(workspace, "out")
        self.assertTrue(os.path.isfile(os.path.join(out, "adapter_model.safetensors")))
        self.assertFalse(os.path.exists(os.path.join(out, "model.safetensors")), "LoRA only")
        with open(os.path.join(out, "adapter_config.json")) as f:
            self.assertEqual(set(json.load(f)["target_modules"]), {"c_attn", "c_proj", "c_fc"})

        tok = AutoTokenizer.from_pretrained(out)
        ids = tok("the red cat sleeps by the", return_tensors="pt").input_ids
        base = AutoModelForCausalLM.from_pretrained(self.base)
        with torch.no_grad():
            before = base(ids).logits
            tuned = PeftModel.from_pretrained(base, out)
            after = tuned(ids).logits
        self.assertGreater((after - before).abs().max().item(), 1e-2)

        # The token is in the Secret folder only: not in the job, args, env values, logs,
        # events, or the checkpoints' pickled training arguments.
        secrets = os.path.join(self.state, ".sdk", "secrets")
        for root, _, files in os.walk(self.state):
            if root.startswith(secrets):
                continue
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    self.assertNotIn(TOKEN.encode(), f.read(), os.path.join(root, name))
        self.assertIn(TOKEN.encode(), open(os.path.join(
            secrets, "default", "tiny-credentials", "model-token"), "rb").read())

        c.delete_job("tiny", delete_workspace=True)
        self.assertFalse(os.path.exists(workspace))
        self.assertFalse(os.path.exists(os.path.join(secrets, "default", "tiny-credentials")))

    def test_a_run_whose_runner_was_killed_resumes_from_its_last_checkpoint(self):
        c = self.client
        self.train("resume", max_steps=MAX_STEPS, num_workers=2, procs=1, save_steps=10)
        deadline = time.monotonic() + 300
        steps = []
        while time.monotonic() < deadline:
            steps = [m["step"] for m in c.get_job_metrics("resume") if "loss" in m]
            if steps and steps[-1] >= 25:
                break
            time.sleep(0.5)
        self.assertGreaterEqual(steps[-1], 25, "training did not get to step 25")
        doc = json.loads(self.trainctl("describe", "resume", "-o", "json").stdout)
        pids = [r["pid"] for r in doc["replicas"] if r.get("pid")]
        os.kill(doc["runner"]["pid"], signal.SIGKILL)
        for pid in pids:  # what a crashed machine leaves: nothing running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        with self.assertRaisesRegex(RuntimeError, "RunnerLost"):
            c.wait_for_job_conditions("resume", wait_timeout=60, polling_interval=1)
        workspace = c.get_job_workspace("resume")

        # Started again: the job is deleted (the workspace stays, as a PVC), the same call.
        c.delete_job("resume")
        self.assertTrue(os.path.isdir(os.path.join(workspace, "out", "checkpoint-20")))
        self.train("resume", max_steps=MAX_STEPS, num_workers=2, procs=1, save_steps=10)
        job = self.wait("resume", 600)
        self.assertTrue(c.is_job_succeeded(job=job))
        log = c.get_job_logs("resume")[0]["resume-master-0"]
        resumed_from = checkpoint_resumed(self, log)
        self.assertGreaterEqual(resumed_from, 20)
        resumed = [m["step"] for m in c.get_job_metrics("resume") if "loss" in m]
        self.assertEqual(resumed[0], resumed_from + 1, "the second run starts after it")
        self.assertEqual(resumed[-1], MAX_STEPS)
        with open(os.path.join(workspace, "out", "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["global_step"], MAX_STEPS)

    def test_a_killed_replica_restarts_in_place_and_resumes(self):
        # restartPolicy ExitCode: a SIGKILL (exit 137) restarts the replica, which resumes. One
        # replica: when one of several dies, the others fail with it (gang restart is #38).
        c = self.client
        self.train("inplace", max_steps=MAX_STEPS, num_workers=1, procs=1, save_steps=10)
        deadline = time.monotonic() + 300
        steps = []
        while time.monotonic() < deadline and (not steps or steps[-1] < 15):
            steps = [m["step"] for m in c.get_job_metrics("inplace") if "loss" in m]
            time.sleep(0.2)
        doc = json.loads(self.trainctl("describe", "inplace", "-o", "json").stdout)
        self.assertIn("pid", doc["replicas"][0], "training ended before the kill")
        os.killpg(doc["replicas"][0]["pid"], signal.SIGKILL)
        job = self.wait("inplace", 600)
        self.assertTrue(c.is_job_succeeded(job=job), job.status.conditions)
        self.assertEqual(job.status.replica_statuses["Master"].restarts, 1)
        log = c.get_job_logs("inplace")[0]["inplace-master-0"]
        self.assertGreaterEqual(checkpoint_resumed(self, log), 10)
        with open(os.path.join(c.get_job_workspace("inplace"), "out",
                               "trainer_state.json")) as f:
            self.assertEqual(json.load(f)["global_step"], MAX_STEPS)

    def test_bad_input_fails_before_training_with_the_message_that_names_it(self):
        c = self.client
        with self.assertRaisesRegex(ValueError, "is not one of the supported types"):
            HuggingFaceModelParams(model_uri="hf://a/b", transformer_type="AutoModelForMagic")
        data = os.path.join(self.tmp, "no-text.jsonl")
        with open(data, "w") as f:
            f.write('{"prompt": "a", "answer": "b"}\n')
        self.train("notext", max_steps=2, num_workers=1, procs=1,
                   dataset=HuggingFaceDatasetParams(repo_id=data))
        with self.assertRaisesRegex(RuntimeError, "no 'text' column"):
            c.wait_for_job_conditions("notext", wait_timeout=120, polling_interval=1)
        logs, _ = c.get_job_logs("notext")
        self.assertIn("has no 'text' column, which text models train on; columns found: "
                      "prompt, answer", logs["notext-master-0"])
        self.assertNotIn("trainer:", logs["notext-master-0"], "the trainer never started")


if __name__ == "__main__":
    unittest.main()
