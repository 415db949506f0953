"""Checkpoint before trainctl stops a job's replicas, and resume after.

A job with the annotation ``trainctl.dev/checkpoint-notice-seconds: N`` is told before its
replicas are stopped for a reason that is not their own failure (its active deadline, a
suspend or a preemption, a gang restart, a local ``trainctl delete``): the notice, one line of
JSON (``reason``, ``stopAt``, ``attempt``, ``seconds``), appears in the file named by
``TRAINCTL_NOTICE_FILE``. The stop comes at ``stopAt``, or sooner once every replica reported
that it is done (:func:`report_done`). See docs/sdk.md, "Checkpoint notice".

- :func:`notice` reads the notice (None while there is none).
- :func:`report_done` says this replica has checkpointed.
- :func:`resume_from` finds the last complete Hugging Face checkpoint in an output folder.
- ``CheckpointOnNotice`` is a Hugging Face ``TrainerCallback`` that saves a checkpoint when a
  notice arrives and then reports done (importing it imports transformers).
"""
import json
import os
import re

from .constants import NOTICE_DONE_FILE_ENV, NOTICE_FILE_ENV  # noqa: F401 (re-exported)


def notice(environ=None):
    """The pending notice as a dict, or None: no notice file configured, none given yet (the
    file is absent, or empty as a downward-API file is without the annotation), or a notice
    taken back. Never raises for a missing or partly written file."""
    environ = os.environ if environ is None else environ
    path = environ.get(NOTICE_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("reason"), str) \
            or not isinstance(value.get("stopAt"), str):
        return None
    return value


def report_done(environ=None):
    """Tells trainctl that this replica has checkpointed, so the stop may come before the
    notice's end. Returns True when reported. Locally it creates the file named by
    TRAINCTL_NOTICE_DONE_FILE; on a cluster (no such file) it returns False: there the pod
    annotation ``trainctl.dev/checkpoint-done`` reports it (docs/sdk.md), and without it the
    stop waits for the notice's seconds."""
    environ = os.environ if environ is None else environ
    path = environ.get(NOTICE_DONE_FILE_ENV)
    if not path:
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("done\n")
    os.replace(tmp, path)
    return True


def resume_from(output_dir):
    """The newest ``checkpoint-N`` folder of a Hugging Face Trainer's output with its trainer
    state, weights and optimizer, or None. A checkpoint cut short by a kill lacks some of them
    and is skipped."""
    try:
        names = os.listdir(output_dir)
    except OSError:
        return None
    steps = sorted((int(m.group(1)), n) for n in names
                   if (m := re.fullmatch(r"checkpoint-(\d+)", n)))
    for _, name in reversed(steps):
        path = os.path.join(output_dir, name)
        try:
            files = set(os.listdir(path))
        except OSError:
            continue
        weights = any(f.endswith((".safetensors", ".bin")) and not f.startswith(
            ("optimizer", "scheduler", "training_args", "rng_state")) for f in files)
        if "trainer_state.json" in files and weights and \
                any(f.startswith("optimizer") for f in files):
            return path
    return None


def _agreed_notice(fresh):
    """The fresh notice some rank of the default process group read (this rank's own when there
    is no group), or None when no rank has one: every rank must take the same decision to save,
    since saving is collective, and remember the same notice as handled (a rank whose file is
    refreshed later must not save for it again). One tiny all-reduce per check; the notice
    itself is gathered only when some rank has one."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return fresh
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return fresh
    device = "cpu"
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    t = torch.tensor([1 if fresh is not None else 0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if not t.item():
        return None
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, fresh)
    return next(n for n in gathered if n is not None)


def _make_callback_class():
    from transformers import TrainerCallback

    class CheckpointOnNotice(TrainerCallback):
        """Saves a checkpoint at the first step end after a notice arrives (on every rank
        together), then reports done. Training goes on until trainctl stops the replica: the
        stop, not the callback, ends the run. `check_every_steps` spaces the checks (each is
        one tiny all-reduce when several ranks train)."""

        def __init__(self, environ=None, check_every_steps=1, log=print):
            self._environ = os.environ if environ is None else environ
            self._every = max(1, int(check_every_steps))
            self._handled = None  # the notice last saved for
            self._saving_for = None
            self._log = log

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % self._every:
                return control
            current = notice(self._environ)
            agreed = _agreed_notice(current if current != self._handled else None)
            if agreed is not None:
                self._saving_for = agreed
                control.should_save = True
                if state.is_world_process_zero:
                    self._log(f"trainctl: checkpoint notice ({agreed.get('reason', '?')}, stop "
                              f"at {agreed.get('stopAt', '?')}): saving at step "
                              f"{state.global_step}", flush=True)
            return control

        def on_save(self, args, state, control, **kwargs):
            if self._saving_for is None:
                return control
            self._handled, self._saving_for = self._saving_for, None
            reported = report_done(self._environ)
            if state.is_world_process_zero:
                self._log(f"trainctl: checkpoint of step {state.global_step} saved"
                          + ("; reported done" if reported else ""), flush=True)
            return control

    return CheckpointOnNotice


def __getattr__(name):
    if name == "CheckpointOnNotice":
        cls = _make_callback_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
