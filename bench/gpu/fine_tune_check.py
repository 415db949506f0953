#!/usr/bin/env python3
"""GPU check of train() on the local backend (run on a machine with an NVIDIA GPU; see
docs/fine-tuning.md "GPUs"): LoRA fine-tuning of the tiny GPT-2 with one replica asking
`gpu: 1` — the runner assigns CUDA_VISIBLE_DEVICES, torchrun starts the trainer, the Trainer
trains on cuda with an NCCL process group — then a job asking more GPUs than the machine has
must be refused with a message. Prints one JSON line per check; exit 1 if any failed."""

import json
import os
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk", "python"))
sys.path.insert(0, os.path.join(REPO, "examples", "fine-tuning"))

from tiny_model import DATASET, make_tiny_model  # noqa: E402


def report(check, ok, **facts):
    print(json.dumps({"check": check, "ok": bool(ok), **facts}), flush=True)
    return ok


def main():
    import torch
    import transformers
    import peft
    from peft import LoraConfig
    from transformers import TrainingArguments
    from trainctl import TrainingClient
    from trainctl.storage_initializer import (HuggingFaceDatasetParams, HuggingFaceModelParams,
                                              HuggingFaceTrainerParams)
    report("versions", True, torch=torch.__version__, transformers=transformers.__version__,
           peft=peft.__version__, cuda=torch.cuda.is_available(),
           gpus=torch.cuda.device_count(),
           name=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    tmp = tempfile.mkdtemp(prefix="gpu-ft-")
    base = make_tiny_model(os.path.join(tmp, "base"))
    client = TrainingClient(backend="local", state_dir=os.path.join(tmp, "state"))

    def params(max_steps):
        return HuggingFaceTrainerParams(
            training_parameters=TrainingArguments(
                output_dir="out", max_steps=max_steps, per_device_train_batch_size=16,
                learning_rate=1e-2, logging_steps=1, save_steps=20, report_to="none",
                disable_tqdm=True, seed=1),
            lora_config=LoraConfig(r=8, lora_alpha=16,
                                   target_modules=["c_attn", "c_proj", "c_fc"]))
    model = HuggingFaceModelParams(model_uri="file://" + base,
                                   transformer_type="AutoModelForCausalLM")
    data = HuggingFaceDatasetParams(repo_id=DATASET)
    ok = True
    start = time.monotonic()
    try:
        client.train(name="gpu", num_workers=1, num_procs_per_worker=1,
                     resources_per_worker={"gpu": 1}, model_provider_parameters=model,
                     dataset_provider_parameters=data, trainer_parameters=params(60))
        job = client.wait_for_job_conditions("gpu", wait_timeout=240, polling_interval=1)
        succeeded = client.is_job_succeeded(job=job)
    except Exception as e:  # keep going: the log says why
        succeeded = False
        report("gpu_job_error", False, error=str(e)[-2000:])
    try:
        log = client.get_job_logs("gpu")[0].get("gpu-master-0", "")
        losses = [m["loss"] for m in client.get_job_metrics("gpu") if "loss" in m]
        doc = client._backend.describe("gpu", "default")
    except Exception as e:
        log, losses, doc = f"(no job: {e})", [], {}
    line = next((l for l in log.splitlines() if l.startswith("trainer: ")), "")
    ok &= report("gpu_one_replica_lora", succeeded and "device cuda" in line and
                 "nccl" in line and len(losses) == 60,
                 seconds=round(time.monotonic() - start, 1), trainer_line=line,
                 first5=sum(losses[:5]) / 5 if losses else None,
                 last5=sum(losses[-5:]) / 5 if losses else None,
                 log_tail=log[-1500:] if not succeeded else "")
    env_line = [e for e in doc.get("events", []) if "CUDA_VISIBLE_DEVICES" in
                e.get("message", "")]
    report("gpu_assignment_event", True, events=[e.get("message") for e in env_line][:3])
    too_many = torch.cuda.device_count() + 1
    try:
        client.train(name="toomany", num_workers=too_many, num_procs_per_worker=1,
                     resources_per_worker={"gpu": 1}, model_provider_parameters=model,
                     dataset_provider_parameters=data, trainer_parameters=params(5))
        job = client.wait_for_job_conditions("toomany", wait_timeout=60, polling_interval=1)
        ok &= report("more_gpus_than_the_machine_refused", False, conditions=str(
            job.status.conditions))
    except Exception as e:
        ok &= report("more_gpus_than_the_machine_refused", "gpu" in str(e).lower(),
                     error=str(e)[-1200:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
