"""The Hugging Face fine-tuning trainer that ``TrainingClient.train()`` runs on every replica,
under torchrun: ``python -m torch.distributed.run ... -m trainctl.trainer.hf_llm_training``
with upstream's arguments (``--model_uri --transformer_type --num_labels --model_dir
--dataset_dir --lora_config --training_parameters``), so a job built for upstream's trainer
image runs here unchanged.

What it adds to upstream's trainer (kubeflow-training 1.9.4):
* resumes from the last complete checkpoint in ``output_dir`` when the job runs again (a
  retry, a restart, a killed runner started again), and saves the final adapter (LoRA) or
  model, with the tokenizer, when training ends;
* rank 0 prints one JSON line per logging step (``{"step": 10, "loss": 2.31, "learning_rate":
  …, "epoch": …}``) that ``TrainingClient.get_job_metrics`` reads;
* where the job has a runtime status endpoint (``KUBEFLOW_TRAINER_SERVER_URL``), rank 0 also
  reports progress, time left, loss, learning rate and epoch to the job's status
  (``trainctl.progress``), in place of transformers' own ``KubeflowCallback`` (5.4 and later);
* ``training_parameters`` from another transformers release: unknown keys are dropped with a
  warning naming them; ``*_token`` placeholders are dropped and the hub token comes from the
  job's Secret as ``HF_TOKEN`` (never pickled into ``training_args.bin``);
  ``output_dir``/``logging_dir`` relative to the workspace, and ``logging_dir``/``report_to``
  resolved here, where training runs;
* the dataset is tokenized without padding to the model's maximum length (the collator pads
  each batch) and is not sharded by hand (the Trainer's distributed sampler does it once);
* ``trust_remote_code`` only when ``TRAINCTL_TRUST_REMOTE_CODE=1``.

Exit status: 0 trained, 2 bad input (the message names the argument or the column), else
what the training raised."""

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import sys

from .. import checkpoint
from .. import progress
from ..storage_initializer import TRANSFORMER_TYPES, credentials
from ..storage_initializer.model import InitError, parse_model_uri
from ..storage_initializer.storage import json_object_arg

TOKEN_PLACEHOLDER = re.compile(r"^<[A-Z_]+>$")
TASK_TYPES = {
    "AutoModelForCausalLM": "CAUSAL_LM",
    "AutoModelForSequenceClassification": "SEQ_CLS",
    "AutoModelForTokenClassification": "TOKEN_CLS",
    "AutoModelForQuestionAnswering": "QUESTION_ANS",
}
RENAMED = {"evaluation_strategy": "eval_strategy", "eval_strategy": "evaluation_strategy"}


class BadInput(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(prog="trainctl.trainer.hf_llm_training",
                                description="Fine-tune a Hugging Face model (LoRA or full)")
    p.add_argument("--model_uri", required=True)
    p.add_argument("--transformer_type", required=True, help=", ".join(TRANSFORMER_TYPES))
    p.add_argument("--num_labels", default="None")
    p.add_argument("--model_dir", default="/workspace/model")
    p.add_argument("--dataset_dir", default="/workspace/dataset")
    p.add_argument("--lora_config", default=None, help="JSON of peft.LoraConfig; none: full")
    p.add_argument("--training_parameters", default="{}", help="JSON of TrainingArguments")
    return p.parse_args(argv)


def workspace_of(model_dir, environ=None):
    environ = os.environ if environ is None else environ
    return environ.get("TRAINCTL_WORKSPACE") or os.path.dirname(os.path.abspath(model_dir))


def _init_fields(cls):
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def training_kwargs(raw, accepted, workspace):
    """(kwargs for TrainingArguments, dropped keys). Pure: ``accepted`` is the set of field
    names of the installed TrainingArguments."""
    kwargs, dropped = {}, []
    for key, value in raw.items():
        if key not in accepted and RENAMED.get(key) in accepted:
            key = RENAMED[key]
        if key not in accepted:
            dropped.append(key)
            continue
        if key.endswith("_token") and isinstance(value, str) and TOKEN_PLACEHOLDER.match(value):
            value = None
        kwargs[key] = value
    out = kwargs.get("output_dir") or "output"
    kwargs["output_dir"] = out if os.path.isabs(out) else os.path.join(workspace, out)
    if kwargs.get("logging_dir") and not os.path.isabs(kwargs["logging_dir"]):
        kwargs["logging_dir"] = os.path.join(workspace, kwargs["logging_dir"])
    return kwargs, sorted(dropped)


def lora_kwargs(raw, fields, transformer_type):
    """(kwargs for LoraConfig, dropped keys). A dict given for a field whose default is a
    dataclass (e.g. runtime_config) becomes that dataclass."""
    kwargs, dropped = {}, []
    for key, value in raw.items():
        if key not in fields:
            dropped.append(key)
            continue
        f = fields[key]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if isinstance(value, dict) and dataclasses.is_dataclass(default):
            value = type(default)(**value)
        kwargs[key] = value
    if not kwargs.get("task_type") and transformer_type in TASK_TYPES:
        kwargs["task_type"] = TASK_TYPES[transformer_type]
    return kwargs, sorted(dropped)


# The newest complete checkpoint: trainctl.checkpoint's, kept under the trainer's old name.
last_complete_checkpoint = checkpoint.resume_from


def metric_record(step, logs):
    """The JSON line rank 0 prints for one logging step: numbers only, non-finite as null."""
    rec = {"step": int(step)}
    for k, v in logs.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        rec[k] = v if math.isfinite(v) else None
    return rec


def report_progress(trainer, environ=None):
    """Adds ``trainctl.progress.TrainerStatusCallback`` to ``trainer`` when the job has a status
    endpoint; returns it, or None (then nothing changes and nothing is imported). transformers
    5.4 and later add their own ``KubeflowCallback`` for that endpoint whenever its URL is set:
    it is taken out, so that the job's status gets one stream of reports (ours measures the
    time left from the steps this run made, which holds after a resume)."""
    environ = os.environ if environ is None else environ
    if not progress.enabled(environ):
        return None
    for callback in list(trainer.callback_handler.callbacks):
        if type(callback).__name__ == "KubeflowCallback":
            trainer.remove_callback(callback)
    callback = progress.TrainerStatusCallback(progress.Reporter(environ=environ))
    trainer.add_callback(callback)
    return callback


def skip_bool_buffers_in_ddp(model):
    """torch 1.x's gloo cannot broadcast bool tensors, and DistributedDataParallel broadcasts
    every buffer when it starts ("Invalid scalar type"): GPT-2's causal masks are bool buffers.
    They are built from the config, equal on every rank, so DDP may skip them."""
    import torch
    if int(torch.__version__.split(".")[0]) >= 2:
        return
    names = [n for n, b in model.named_buffers() if b.dtype == torch.bool]
    if names:
        model._ddp_params_and_buffers_to_ignore = names


@contextlib.contextmanager
def cpu_checkpoint_loading(device):
    """Resuming several CPU processes: some transformers releases load the optimizer with
    ``map_location=args.device``, and torch cannot restore storages to "cpu:N" ("don't know
    how to restore data location ... cpu:0"). Within the block, torch.load maps a CPU device
    with an index to plain "cpu". Nothing changes on GPUs."""
    import torch
    if device.type != "cpu" or device.index is None:
        yield
        return
    real = torch.load

    def load(*args, **kwargs):
        where = kwargs.get("map_location")
        if isinstance(where, torch.device) and where.type == "cpu":
            kwargs["map_location"] = "cpu"
        elif isinstance(where, str) and where.startswith("cpu:"):
            kwargs["map_location"] = "cpu"
        return real(*args, **kwargs)
    torch.load = load
    try:
        yield
    finally:
        torch.load = real


def _max_length(tokenizer, config):
    limits = [getattr(config, a, None) for a in ("max_position_embeddings", "n_positions")]
    limits = [x for x in limits if isinstance(x, int) and x > 0]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    return min(limits) if limits else 1024


def train(args, environ=None):
    environ = os.environ if environ is None else environ
    # transformers imports TensorFlow and JAX when they are installed: seconds per process, and
    # nothing here uses them.
    os.environ.setdefault("USE_TF", "0")
    os.environ.setdefault("USE_FLAX", "0")
    import datasets
    import transformers
    from transformers import TrainerCallback

    if args.transformer_type not in TRANSFORMER_TYPES:
        raise BadInput(f"--transformer_type {args.transformer_type!r}: expected one of "
                       + ", ".join(TRANSFORMER_TYPES))
    rank = int(environ.get("RANK", "0"))
    world = int(environ.get("WORLD_SIZE", "1"))
    workspace = workspace_of(args.model_dir, environ)
    raw = json_object_arg(args.training_parameters, "--training_parameters", allow_null=True) or {}
    ta_fields = _init_fields(transformers.TrainingArguments)
    kwargs, dropped = training_kwargs(raw, set(ta_fields), workspace)
    hub_token = credentials.read("hub_token", environ)
    if hub_token:
        # For push_to_hub, through huggingface_hub's own variable: a token in TrainingArguments
        # would be pickled into every checkpoint's training_args.bin.
        os.environ["HF_TOKEN"] = hub_token
    if dropped and rank == 0:
        print(f"trainer: warning: transformers {transformers.__version__} has no training "
              f"argument {', '.join(dropped)}; ignored", flush=True)
    try:
        training_args = transformers.TrainingArguments(**kwargs)
    except (TypeError, ValueError) as e:
        raise BadInput(f"--training_parameters: {e}") from e

    kind, ref = parse_model_uri(args.model_uri)
    where = {"pretrained_model_name_or_path": ref, "local_files_only": True,
             "trust_remote_code": environ.get("TRAINCTL_TRUST_REMOTE_CODE") == "1"}
    if kind == "hf":
        where["cache_dir"] = args.model_dir
    extra = {}
    if args.num_labels not in (None, "", "None"):
        extra["num_labels"] = int(args.num_labels)
    model_class = getattr(transformers, args.transformer_type)
    model = model_class.from_pretrained(**where, **extra)
    image = args.transformer_type == "AutoModelForImageClassification"
    tokenizer = None
    if not image:
        tokenizer = transformers.AutoTokenizer.from_pretrained(**where)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if getattr(model.config, "pad_token_id", None) is None:
            model.config.pad_token_id = tokenizer.pad_token_id

    ds = datasets.load_from_disk(args.dataset_dir)
    if isinstance(ds, datasets.DatasetDict):
        if "train" not in ds:
            raise BadInput(f"dataset {args.dataset_dir}: no 'train' split (splits: "
                           f"{', '.join(ds)})")
        train_ds = ds["train"]
        eval_ds = next((ds[s] for s in ("eval", "validation") if s in ds), None)
    else:
        train_ds, eval_ds = ds, None
    if not image:
        if "text" not in train_ds.column_names:
            raise BadInput(f"dataset {args.dataset_dir} has no 'text' column, which text "
                           f"models train on; columns found: {', '.join(train_ds.column_names)}")
        max_len = _max_length(tokenizer, model.config)
        keep = {"label", "labels"}

        def tokenize(batch):
            return tokenizer(batch["text"], truncation=True, max_length=max_len)

        def prepare(d):
            drop = [c for c in d.column_names if c not in keep]
            return d.map(tokenize, batched=True, remove_columns=drop, keep_in_memory=True)
        train_ds = prepare(train_ds)
        eval_ds = prepare(eval_ds) if eval_ds is not None else None

    lora = json_object_arg(args.lora_config, "--lora_config", allow_null=True)
    if lora:
        import peft
        lkw, ldropped = lora_kwargs(lora, _init_fields(peft.LoraConfig), args.transformer_type)
        if ldropped and rank == 0:
            print(f"trainer: warning: peft {peft.__version__} has no LoraConfig field "
                  f"{', '.join(ldropped)}; ignored", flush=True)
        if training_args.gradient_checkpointing:
            model.enable_input_require_grads()
        model = peft.get_peft_model(model, peft.LoraConfig(**lkw))
        if rank == 0:
            model.print_trainable_parameters()

    if image:
        collator = transformers.DefaultDataCollator()
    elif args.transformer_type in ("AutoModelForCausalLM", "AutoModelForMaskedLM"):
        collator = transformers.DataCollatorForLanguageModeling(
            tokenizer, mlm=args.transformer_type == "AutoModelForMaskedLM",
            pad_to_multiple_of=8)
    else:
        collator = transformers.DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)

    # Under torchrun the Trainer wraps the model in DDP even for one process.
    skip_bool_buffers_in_ddp(model)

    class JsonMetrics(TrainerCallback):
        def on_log(self, a, state, control, logs=None, **kw):
            if state.is_world_process_zero and logs:
                print(json.dumps(metric_record(state.global_step, logs)), flush=True)

    callbacks = [JsonMetrics()]
    if environ.get(checkpoint.NOTICE_FILE_ENV):
        # The job has a checkpoint notice: save when it comes, so a resumed run starts there.
        callbacks.append(checkpoint.CheckpointOnNotice(environ))
    trainer = transformers.Trainer(model=model, args=training_args, train_dataset=train_ds,
                                   eval_dataset=eval_ds, data_collator=collator,
                                   callbacks=callbacks)
    report_progress(trainer, environ)
    resume = last_complete_checkpoint(training_args.output_dir)
    if rank == 0:
        import torch.distributed as dist
        backend = dist.get_backend() if dist.is_available() and dist.is_initialized() else "-"
        print(f"trainer: {world} process(es), device {training_args.device}, process group "
              f"{backend}, output {training_args.output_dir}"
              + (f", resuming from {resume}" if resume else ""), flush=True)
    with cpu_checkpoint_loading(training_args.device):
        trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    if trainer.is_world_process_zero():
        if tokenizer is not None:
            tokenizer.save_pretrained(training_args.output_dir)
        what = "adapter" if lora else "model"
        print(f"trainer: saved the final {what} to {training_args.output_dir} "
              f"(step {trainer.state.global_step})", flush=True)


LEAVE_GROUP_SECONDS = 120


def leave_group():
    """The end of a distributed training, after the model was saved: the ranks leave the
    process group together and the process exits 0 at once, without the interpreter's
    finalization.

    Why together: with torch 1.x's gloo a rank that exits while another still holds the group
    can abort at exit ("terminate called without an active exception", exit -6) after training
    succeeded. Why watched: rank 0 stayed here after saving, the other ranks gone, in 2 of 4 runs
    of sdk.e2e_local on 2026-11-27, and a two-replica job stayed Running for 10 minutes in CI on
    2026-11-29 (where is not known; a wait here that holds the GIL would never let the Python
    timer below run, nor would a hang in the interpreter's finalization). So two watchdogs: the timer (exit 0, the model is saved) and faulthandler's own
    thread, which needs no GIL (exit 1: the job fails, its log says where it waited, instead of
    hanging). Does not return."""
    import faulthandler
    import threading

    import torch.distributed as dist
    watchdog = threading.Timer(LEAVE_GROUP_SECONDS, leave_stuck_group)
    watchdog.daemon = True
    watchdog.start()
    faulthandler.dump_traceback_later(LEAVE_GROUP_SECONDS + 30, exit=True)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def leave_stuck_group():
    """The end of a training whose process group does not close: says so, with every thread's
    stack, and exits 0 (the model was saved before)."""
    import faulthandler
    print(f"trainer: the process group did not close within {LEAVE_GROUP_SECONDS} s after the "
          "model was saved; leaving without it. Where it waited:", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(0)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # `kill -USR1 <pid>` prints where every thread of a trainer that seems stuck waits.
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        train(args)
    except (BadInput, InitError) as e:
        print(f"trainer: error: {e}", file=sys.stderr, flush=True)
        return 2
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized():
        leave_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
