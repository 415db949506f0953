#!/usr/bin/env python3
"""Writes fine-tune-an-llm.ipynb (no outputs) from the cells below; edit the cells here and
rerun, so the stored notebook never carries outputs."""

from make_notebook import write_notebook

CELLS = [
    ("markdown", """# Fine-tune an LLM with LoRA: on this machine, then on a cluster

`TrainingClient.train()` — upstream's call, unchanged — fine-tunes a Hugging Face causal LM with
LoRA on **2 replicas** (a Master and a Worker, each a torchrun agent) **on this machine**:
trainctl's runner runs the storage initializer once (model and dataset into the job's
workspace), then the trainer; the loss curve comes back from `get_job_metrics`, and the saved
adapter changes what the model writes. Then the same call goes to a Kubernetes cluster — only
`backend=` changes.

Everything is offline: the model is a small GPT-2 built from a config, with a tokenizer trained
on the fly on the repository's JSONL dataset (`examples/fine-tuning/`)."""),
    ("code", """import os
import sys

# Nothing is downloaded: the model and the data are on this machine.
os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["USE_TF"] = "0"
sys.path.insert(0, os.path.abspath(os.path.join("..", "fine-tuning")))
from tiny_model import DATASET, make_tiny_model

from trainctl import TrainingClient
from trainctl.storage_initializer import (HuggingFaceDatasetParams, HuggingFaceModelParams,
                                          HuggingFaceTrainerParams)

# The cluster cells run when a kubeconfig is given (the integration suite sets it).
KUBECONFIG = os.environ.get("TRAINCTL_NOTEBOOK_KUBECONFIG")
local = TrainingClient(backend="local")
JOB = "notebook-fine-tune"
BASE = make_tiny_model(os.path.join(os.path.expanduser("~"), ".cache", "trainctl",
                                    "notebook-tiny-gpt2"))
print("base model:", BASE)
"""),
    ("code", """import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained(BASE)
PROMPT = "the red cat"


def write(model, prompt=PROMPT):
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=8, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id)
    return tokenizer.decode(out[0])


base = AutoModelForCausalLM.from_pretrained(BASE)
print("before fine-tuning:", write(base))
"""),
    ("code", """from peft import LoraConfig
from transformers import TrainingArguments

# Start fresh if an earlier run left the job and its workspace behind.
if JOB in [j.metadata.name for j in local.list_jobs()]:
    local.delete_job(JOB, delete_workspace=True)

PARAMS = dict(
    num_workers=2, num_procs_per_worker=1,
    model_provider_parameters=HuggingFaceModelParams(
        model_uri="file://" + BASE, transformer_type="AutoModelForCausalLM"),
    dataset_provider_parameters=HuggingFaceDatasetParams(repo_id=DATASET),
    trainer_parameters=HuggingFaceTrainerParams(
        training_parameters=TrainingArguments(
            output_dir="out", max_steps=120, per_device_train_batch_size=8, learning_rate=1e-2,
            logging_steps=4, save_steps=40, report_to="none", disable_tqdm=True, seed=1),
        lora_config=LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                               target_modules=["c_attn", "c_proj", "c_fc"])),
)
local.train(name=JOB, env_vars={"HF_HUB_OFFLINE": "1"}, **PARAMS)
job = local.wait_for_job_conditions(JOB, polling_interval=1, wait_timeout=600)
print(job.status.conditions[-1].type, local.get_job_pod_names(JOB))
print("workspace:", local.get_job_workspace(JOB))
"""),
    ("code", """import matplotlib.pyplot as plt

metrics = local.get_job_metrics(JOB)
steps = [m["step"] for m in metrics if "loss" in m]
losses = [m["loss"] for m in metrics if "loss" in m]
first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
print(f"{len(losses)} logged steps; mean loss of the first 5 {first:.3f}, last 5 {last:.3f}")
assert last < first - 0.1, "the loss did not go down"

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(steps, losses)
ax.set_xlabel("step"); ax.set_ylabel("loss"); ax.set_title(f"{JOB}: LoRA, 2 replicas")
plt.show()
"""),
    ("code", """from peft import PeftModel

adapter = os.path.join(local.get_job_workspace(JOB), "out")
print(sorted(f for f in os.listdir(adapter) if not f.startswith("checkpoint")))
tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE), adapter)
print("after fine-tuning: ", write(tuned))
ids = tokenizer(PROMPT, return_tensors="pt").input_ids
with torch.no_grad():
    change = (tuned(ids).logits - base(ids).logits).abs().max().item()
print(f"largest change of a logit: {change:.3f}")
assert change > 1e-2
"""),
    ("markdown", """## The same call on a cluster

With a kubeconfig for a cluster where `trainctl operator` (or upstream's operator) runs, the same
`train()` makes a PVC named after the job, a Secret for any token, and the PyTorchJob (upstream's
images by default; `trainer_image=`/`initializer_image=` select the project's, see `images/`).
The model URI must then be one the cluster can reach (`hf://org/name`); a test cluster without a
storage provisioner keeps the pods pending, so this cell checks the objects and cleans up."""),
    ("code", """if KUBECONFIG:
    cluster = TrainingClient(backend="kubernetes", config_file=KUBECONFIG)
    cluster_params = dict(PARAMS, model_provider_parameters=HuggingFaceModelParams(
        model_uri="hf://openai-community/gpt2", transformer_type="AutoModelForCausalLM"))
    cluster.train(name=JOB, storage_config={"size": "1Gi"}, **cluster_params)
    job = cluster.get_job(JOB)
    for rtype, spec in job.spec.pytorch_replica_specs.items():
        print(rtype, spec.replicas, [c.name for c in spec.template.spec.init_containers],
              spec.template.spec.containers[0].image)
    print("workspace:", cluster.get_job_workspace(JOB))
    cluster.delete_job(JOB, delete_workspace=True)
else:
    print("no cluster configured: skipped (set TRAINCTL_NOTEBOOK_KUBECONFIG)")
"""),
    ("code", """local.delete_job(JOB, delete_workspace=True)
print("deleted", JOB, "and its workspace")
"""),
]


def main():
    write_notebook(CELLS, "fine-tune-an-llm.ipynb")


if __name__ == "__main__":
    main()
