"""The model step: a model URI → a folder the trainer loads with ``local_files_only``.

* ``hf://org/name``: the repository's config, tokenizer and weight files (never the model
  instantiated) in the Hugging Face cache layout under ``<workspace>/model``, taken from, in
  order: that folder (a second run), the user's own Hugging Face cache (``HF_HUB_CACHE`` /
  ``HF_HOME``; files are hard-linked when on the same file system, else copied), the Hub
  (unless ``HF_HUB_OFFLINE`` is set);
* ``file:///abs/folder`` or ``/abs/folder``: used in place, nothing copied.

Errors are ``InitError`` with the message to print (exit status 2)."""

import os
import shutil
import time
from urllib.parse import urlparse

# What a model needs to load: configs, tokenizer files and safetensors weights. PyTorch
# ``.bin`` weights are fetched only when the repository has no safetensors.
ALLOW_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken"]
BIN_PATTERNS = ["*.bin"]
NO_BIN_PATTERNS = ["training_args.bin", "optimizer*.bin", "scheduler*.bin", "rng_state*"]


class InitError(Exception):
    """Bad input or a missing source: the message says which and what was searched."""


def parse_model_uri(uri):
    """("hf", "org/name") or ("path", "/abs/folder"); InitError for anything else."""
    parsed = urlparse(uri)
    if parsed.scheme == "hf":
        repo = (parsed.netloc + parsed.path).strip("/")
        if not repo:
            raise InitError(f"model_uri {uri!r}: no repository after hf://")
        return "hf", repo
    if parsed.scheme == "file":
        return "path", parsed.path
    if not parsed.scheme and uri.startswith("/"):
        return "path", uri
    raise InitError(f"model_uri {uri!r}: expected hf://ORG/NAME, file:///FOLDER or /FOLDER")


def _has_config(folder):
    return os.path.isfile(os.path.join(folder, "config.json"))


def _has_weights(folder):
    for _, _, files in os.walk(folder):
        if any(f.endswith((".safetensors", ".bin")) for f in files):
            return True
    return False


def _cached_snapshot(repo, cache_dir, revision=None):
    """The snapshot folder of ``repo`` in ``cache_dir`` when it holds a config and weights."""
    from huggingface_hub import snapshot_download
    try:
        path = snapshot_download(repo, cache_dir=cache_dir, revision=revision,
                                 local_files_only=True)
    except Exception:  # LocalEntryNotFoundError and its kin across hub versions
        return None
    return path if _has_config(path) and _has_weights(path) else None


def _copy_repo_tree(repo, from_cache, to_cache):
    """Hard-links (or copies) ``models--org--name`` from one cache to another, symlinks kept."""
    folder = "models--" + repo.replace("/", "--")
    src, dst = os.path.join(from_cache, folder), os.path.join(to_cache, folder)

    def link_or_copy(s, d):
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)
    tmp = dst + f".tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, symlinks=True, copy_function=link_or_copy)
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(tmp, dst)


def _offline():
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _user_cache():
    from huggingface_hub import constants
    return getattr(constants, "HF_HUB_CACHE", None) or constants.HUGGINGFACE_HUB_CACHE


def fetch_model(uri, model_dir, token=None, log=print):
    """Makes ``uri`` loadable from ``model_dir``; returns the folder the model is in."""
    kind, ref = parse_model_uri(uri)
    if kind == "path":
        if not _has_config(ref):
            raise InitError(f"model_uri {uri!r}: {ref} has no config.json (is it a model "
                            "folder written by save_pretrained?)")
        log(f"model {uri}: used in place ({ref})")
        return ref
    os.makedirs(model_dir, exist_ok=True)
    start = time.monotonic()
    found = _cached_snapshot(ref, model_dir)
    if found:
        log(f"model {uri}: already in the workspace ({found})")
        return found
    user_cache = _user_cache()
    searched = [model_dir]
    if os.path.realpath(user_cache) != os.path.realpath(model_dir):
        searched.append(user_cache)
        if _cached_snapshot(ref, user_cache):
            _copy_repo_tree(ref, user_cache, model_dir)
            found = _cached_snapshot(ref, model_dir)
            if found:
                log(f"model {uri}: taken from the Hugging Face cache {user_cache} "
                    f"({time.monotonic() - start:.1f}s)")
                return found
    if _offline():
        raise InitError(
            f"model_uri {uri!r}: not found offline (HF_HUB_OFFLINE is set); searched the "
            f"Hugging Face caches {', '.join(searched)}. Download it once with "
            f"`huggingface-cli download {ref}` or unset HF_HUB_OFFLINE")
    from huggingface_hub import snapshot_download
    log(f"model {uri}: downloading config, tokenizer and weight files into {model_dir}")
    try:
        path = snapshot_download(ref, cache_dir=model_dir, token=token,
                                 allow_patterns=ALLOW_PATTERNS)
        if not _has_weights(path):
            path = snapshot_download(ref, cache_dir=model_dir, token=token,
                                     allow_patterns=BIN_PATTERNS, ignore_patterns=NO_BIN_PATTERNS)
    except Exception as e:
        raise InitError(f"model_uri {uri!r}: cannot download from the Hugging Face Hub: "
                        f"{type(e).__name__}: {e}") from e
    if not _has_config(path):
        raise InitError(f"model_uri {uri!r}: the repository has no config.json")
    log(f"model {uri}: downloaded in {time.monotonic() - start:.1f}s ({path})")
    return path
