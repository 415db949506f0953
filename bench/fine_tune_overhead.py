#!/usr/bin/env python3
"""Fine-tuning benchmarks (docs/benchmarks.md, issue #35), two measurements in one run:

1. `TrainingClient.train()` on the local backend against the same trainer started by hand
   (`torchrun --standalone --nproc_per_node P -m trainctl.trainer.hf_llm_training` with the
   arguments train() builds): time from the call to the first logged step, and steps per second
   between the first and the last logged step. One replica of P processes on each side, the
   tiny GPT-2 of examples/fine-tuning, LoRA, CPU; rounds alternate the two sides.
2. The storage initializer's peak RSS against the model's size on disk: a GPT-2 (12 layers,
   768 wide, random weights) in a Hugging Face cache, fetched offline into a workspace by
   `python -m trainctl.storage_initializer`, against loading it with from_pretrained (what
   upstream's initializer does).

    bench/fine_tune_overhead.py [--rounds 3] [--steps 40] [--procs 2]

Prints a Markdown table per measurement."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SDK = os.path.join(REPO, "sdk", "python")
sys.path.insert(0, SDK)
sys.path.insert(0, os.path.join(REPO, "examples", "fine-tuning"))

from tiny_model import DATASET, make_tiny_model  # noqa: E402


def watch(path_or_pipe, started, steps, deadline, is_pipe=False):
    """(seconds to the first step, seconds to the last) observed on a log."""
    first = last = None
    seen = 0
    buf = ""
    f = path_or_pipe if is_pipe else None
    while time.monotonic() < deadline:
        if f is None:
            if path_or_pipe and os.path.exists(path_or_pipe):
                f = open(path_or_pipe)
            else:
                time.sleep(0.02)
                continue
        chunk = f.readline()
        if not chunk:
            if is_pipe:
                break
            time.sleep(0.02)
            continue
        buf = chunk
        if buf.startswith('{"step"') and '"loss"' in buf:
            now = time.monotonic() - started
            seen += 1
            first = first if first is not None else now
            last = now
            if seen >= steps:
                break
    return first, last


def by_train(client, base, args_builder, steps, procs):
    name = f"bench-{int(time.time() * 1000) % 10**8}"
    started = time.monotonic()
    client.train(name=name, num_workers=1, num_procs_per_worker=procs, **args_builder())
    doc = None
    while doc is None or not doc.get("replicas") or not doc["replicas"][0].get("logFile"):
        doc = client._backend.describe(name, "default")
        time.sleep(0.05)
    first, last = watch(doc["replicas"][0]["logFile"], started, steps,
                        time.monotonic() + 600)
    client.wait_for_job_conditions(name, wait_timeout=600, polling_interval=0.5)
    client.delete_job(name, delete_workspace=True)
    return first, last


def by_hand(job, workspace, steps, procs):
    """The trainer with the args train() built, /workspace → a folder, started by torchrun."""
    spec = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    init, main = spec["initContainers"][0], spec["containers"][0]
    fix = [a.replace("/workspace", workspace) for a in main["args"]]
    env = dict(os.environ, TRAINCTL_WORKSPACE=workspace, PYTHONPATH=SDK, PYTHONUNBUFFERED="1",
               HF_HUB_OFFLINE="1")
    for e in main.get("env") or []:
        if "value" in e and e["name"] not in ("TRAINCTL_WORKSPACE", "PYTHONPATH"):
            env[e["name"]] = e["value"]
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "trainctl.storage_initializer"] +
                   [a.replace("/workspace", workspace) for a in init["args"]], env=env,
                   check=True, capture_output=True)
    p = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                          "--nproc_per_node", str(procs), "-m",
                          "trainctl.trainer.hf_llm_training"] + fix, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first, last = watch(p.stdout, started, steps, time.monotonic() + 600, is_pipe=True)
    p.stdout.read()
    p.wait()
    return first, last


def overhead(args, tmp):
    from peft import LoraConfig
    from transformers import TrainingArguments
    from trainctl import TrainingClient
    from trainctl.api import llm
    from trainctl import models
    from trainctl.storage_initializer import (HuggingFaceDatasetParams, HuggingFaceModelParams,
                                              HuggingFaceTrainerParams)
    base = make_tiny_model(os.path.join(tmp, "base"))

    def params():
        return dict(
            model_provider_parameters=HuggingFaceModelParams(
                model_uri="file://" + base, transformer_type="AutoModelForCausalLM"),
            dataset_provider_parameters=HuggingFaceDatasetParams(repo_id=DATASET),
            trainer_parameters=HuggingFaceTrainerParams(
                training_parameters=TrainingArguments(
                    output_dir="out", max_steps=args.steps, per_device_train_batch_size=4,
                    learning_rate=1e-2, logging_steps=1, save_strategy="no",
                    report_to="none", use_cpu=True, disable_tqdm=True, seed=1),
                lora_config=LoraConfig(r=8, target_modules=["c_attn", "c_proj", "c_fc"])),
            env_vars={"HF_HUB_OFFLINE": "1"})
    client = TrainingClient(backend="local", state_dir=os.path.join(tmp, "state"))
    objs = llm.fine_tune_objects(name="hand", namespace="default", labels=None,
                                 annotations=None, num_workers=1,
                                 num_procs_per_worker=args.procs, resources_per_worker=None,
                                 init_env_vars=None, storage_config=None,
                                 local_python=sys.executable, **params())
    job = models.serialize(objs["job"])
    rows = {"train()": [], "torchrun by hand": []}
    for r in range(args.rounds):
        for side in (("train()", "torchrun by hand") if r % 2 == 0 else
                     ("torchrun by hand", "train()")):
            if side == "train()":
                rows[side].append(by_train(client, base, params, args.steps, args.procs))
            else:
                ws = os.path.join(tmp, f"hand-{r}")
                rows[side].append(by_hand(job, ws, args.steps, args.procs))
                shutil.rmtree(ws, ignore_errors=True)
    print(f"\n{args.procs} processes, {args.steps} steps, {args.rounds} rounds per side "
          "(median)\n")
    print("| side | to the first step | steps/s after it |")
    print("|---|---|---|")
    med = {}
    for side, runs in rows.items():
        firsts = [f for f, _ in runs]
        rates = [(args.steps - 1) / (last - first) for first, last in runs]
        med[side] = (statistics.median(firsts), statistics.median(rates))
        print(f"| {side} | {med[side][0]:.2f} s | {med[side][1]:.1f} |")
    a, b = med["train()"], med["torchrun by hand"]
    print(f"\ntrain() / by hand: first step {a[0] / b[0]:.3f}, steps/s {a[1] / b[1]:.3f}")
    print("raw:", json.dumps(rows))


def peak_rss_mb(cmd, env):
    """Peak RSS of a child (and its children) in MB."""
    script = ("import resource,subprocess,sys;subprocess.run(sys.argv[1:],check=True,"
              "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", script] + cmd, env=env, check=True,
                         capture_output=True, text=True).stdout
    return int(out.strip()) / 1024


def initializer_rss(tmp):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    hf_home = os.path.join(tmp, "hf")
    repo = os.path.join(hf_home, "hub", "models--bench--gpt2-124m")
    snap = os.path.join(repo, "snapshots", "0" * 40)  # the cache layout, one snapshot
    os.makedirs(snap)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write("0" * 40)
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config()).save_pretrained(snap)
    size = sum(os.path.getsize(os.path.join(snap, f)) for f in os.listdir(snap)) / 2**20
    env = dict(os.environ, HF_HOME=hf_home, HF_HUB_OFFLINE="1", PYTHONPATH=SDK,
               TRAINCTL_WORKSPACE=os.path.join(tmp, "ws"), USE_TF="0")
    data = os.path.join(tmp, "d.jsonl")
    shutil.copy(DATASET, data)
    ours = peak_rss_mb([sys.executable, "-m", "trainctl.storage_initializer", "--model_provider",
                        "hf", "--model_provider_parameters",
                        json.dumps({"model_uri": "hf://bench/gpt2-124m",
                                    "transformer_type": "AutoModelForCausalLM"}),
                        "--dataset_provider", "hf", "--dataset_provider_parameters",
                        json.dumps({"repo_id": data})], env)
    loading = peak_rss_mb([sys.executable, "-c",
                           "import transformers as t;t.AutoModelForCausalLM.from_pretrained("
                           "'bench/gpt2-124m', local_files_only=True)"], env)
    print("\n| model on disk | storage initializer peak RSS | from_pretrained peak RSS |")
    print("|---|---|---|")
    print(f"| {size:.0f} MB | {ours:.0f} MB | {loading:.0f} MB |")
    print(f"\ninitializer / model size: {ours / size:.2f}; "
          f"initializer / from_pretrained: {ours / loading:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--only", choices=("overhead", "rss"))
    args = p.parse_args()
    os.environ.setdefault("USE_TF", "0")
    tmp = tempfile.mkdtemp(prefix="trainctl-ft-bench-")
    try:
        if args.only != "rss":
            overhead(args, tmp)
        if args.only != "overhead":
            initializer_rss(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
