"""``python -m trainctl.storage_initializer``: upstream's storage-initializer command line
(``--model_provider hf --model_provider_parameters JSON --dataset_provider hf|s3
--dataset_provider_parameters JSON``) fetching the model and the dataset into the workspace
(``$TRAINCTL_WORKSPACE``, default ``/workspace``: ``model/`` and ``dataset/``).

Every replica of a job may run it (each has it as an init container): the first takes an
exclusive lock on the workspace and does the work; the others wait for the lock, find the
marker ``.trainctl-initialized.json`` written for the same parameters, and exit at once. So the
work is done once, and no trainer starts before it is done. Changed parameters (another model
or dataset) redo the work.

Credentials come from the environment (``credentials.py``), never from the arguments; a token
found in the arguments (upstream's SDK puts it there) is used but reported.

Exit status: 0 done, 2 bad input or a source not found (the message names it and what was
searched), 1 anything else."""

import argparse
import fcntl
import hashlib
import json
import os
import sys
import time

from . import credentials
from .dataset import fetch_dataset
from .model import InitError, fetch_model

MARKER = ".trainctl-initialized.json"
LOCK = ".trainctl-initialize.lock"


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m trainctl.storage_initializer",
        description="Fetch a model and a dataset into the job's workspace, once per workspace")
    p.add_argument("--model_provider", required=True, help="hf")
    p.add_argument("--model_provider_parameters", required=True, help="JSON")
    p.add_argument("--dataset_provider", required=True, help="hf or s3")
    p.add_argument("--dataset_provider_parameters", required=True, help="JSON")
    p.add_argument("--workspace", default=None,
                   help="default: $TRAINCTL_WORKSPACE, else /workspace")
    return p.parse_args(argv)


def json_object_arg(text, flag, allow_null=False):
    """The JSON object a command-line flag holds (None for a missing flag or, with
    ``allow_null``, JSON null); InitError naming the flag otherwise."""
    if text is None and allow_null:
        return None
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as e:
        raise InitError(f"{flag}: not valid JSON: {e}") from e
    if value is None and allow_null:
        return None
    if not isinstance(value, dict):
        raise InitError(f"{flag}: expected a JSON object, got {type(value).__name__}")
    return value


def fingerprint(model_provider, model, dataset_provider, dataset):
    """Identifies the work: the parameters without their secrets."""
    def public(d):
        return {k: v for k, v in sorted(d.items()) if k not in credentials.PARAMETER_FIELDS}
    text = json.dumps([model_provider, public(model), dataset_provider, public(dataset)],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _read_marker(workspace):
    try:
        with open(os.path.join(workspace, MARKER)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write_marker(workspace, record):
    path = os.path.join(workspace, MARKER)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2)
    os.replace(tmp, path)


def initialize(args, environ=None, log=print):
    environ = os.environ if environ is None else environ
    workspace = args.workspace or environ.get("TRAINCTL_WORKSPACE") or "/workspace"
    if args.model_provider != "hf":
        raise InitError(f"--model_provider {args.model_provider!r}: expected hf")
    model = json_object_arg(args.model_provider_parameters, "--model_provider_parameters")
    dataset = json_object_arg(args.dataset_provider_parameters, "--dataset_provider_parameters")
    if not model.get("model_uri"):
        raise InitError("--model_provider_parameters: model_uri is missing")
    for field in credentials.PARAMETER_FIELDS:
        for what, params in (("model", model), ("dataset", dataset)):
            if params.get(field):
                log(f"warning: a {what} {field} was passed in the arguments, where anyone who "
                    "can read the job sees it; trainctl's SDK passes it through a Secret")
    key = fingerprint(args.model_provider, model, args.dataset_provider, dataset)
    os.makedirs(workspace, exist_ok=True)
    with open(os.path.join(workspace, LOCK), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another replica's storage initializer (same workspace)")
            fcntl.flock(lock, fcntl.LOCK_EX)
        marker = _read_marker(workspace)
        if marker and marker.get("fingerprint") == key:
            log(f"workspace {workspace}: model and dataset already there "
                f"(initialized at {marker.get('time')})")
            return marker
        start = time.monotonic()
        model_path = fetch_model(
            model["model_uri"], os.path.join(workspace, "model"),
            token=credentials.read("model_token", environ) or model.get("access_token"),
            log=log)
        needs_text = model.get("transformer_type") != "AutoModelForImageClassification"
        summary = fetch_dataset(
            args.dataset_provider, dataset, os.path.join(workspace, "dataset"), needs_text,
            token=credentials.read("dataset_token", environ) or dataset.get("access_token"),
            access_key=credentials.read("s3_access_key", environ) or dataset.get("access_key"),
            secret_key=credentials.read("s3_secret_key", environ) or dataset.get("secret_key"),
            log=log)
        record = {"fingerprint": key, "model": model_path, "dataset": summary,
                  "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "seconds": round(time.monotonic() - start, 1)}
        _write_marker(workspace, record)
        log(f"workspace {workspace}: ready in {record['seconds']}s")
        return record


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def log(msg):
        print(f"storage-initializer: {msg}", flush=True)
    try:
        initialize(args, log=log)
    except InitError as e:
        print(f"storage-initializer: error: {e}", file=sys.stderr, flush=True)
        return 2
    return 0
