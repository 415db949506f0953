"""The dataset step: a dataset source → ``<workspace>/dataset`` written by ``save_to_disk``
(the trainer reads it with ``load_from_disk``).

* provider ``hf``: ``repo_id`` is a Hub dataset id, a local folder (files ``datasets`` can read,
  or a folder written by ``save_to_disk``), or a ``.json``/``.jsonl``/``.csv``/``.parquet`` file
  (``file://`` allowed); ``split`` selects one split;
* provider ``s3``: every object under ``file_key`` in the bucket, through boto3, into
  ``<workspace>/dataset`` (upstream's layout: the key's first component dropped); the objects must
  be a ``save_to_disk`` folder. Keys from the job's Secret (``AWS_ACCESS_KEY_ID`` /
  ``AWS_SECRET_ACCESS_KEY``) or boto3's own configuration.

Text models need a ``text`` column: checked here, before any replica trains (InitError naming
the columns found). Written to a temporary folder and renamed, so a killed step leaves no half
dataset behind."""

import os
import shutil

from .model import InitError

FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def _local_path(repo_id):
    path = repo_id[len("file://"):] if repo_id.startswith("file://") else repo_id
    return path if os.path.exists(path) else None


def _load_hf(repo_id, split, token):
    import datasets
    path = _local_path(repo_id)
    try:
        if path and os.path.isfile(path):
            ext = os.path.splitext(path)[1].lower()
            if ext not in FILE_BUILDERS:
                raise InitError(f"dataset {repo_id!r}: a file must end in "
                                f"{', '.join(sorted(FILE_BUILDERS))}")
            return datasets.load_dataset(FILE_BUILDERS[ext], data_files=path,
                                         split=split or None)
        if path and os.path.isdir(path):
            if any(os.path.isfile(os.path.join(path, f))
                   for f in ("dataset_info.json", "dataset_dict.json", "state.json")):
                ds = datasets.load_from_disk(path)
                return ds[split] if split and isinstance(ds, datasets.DatasetDict) else ds
            return datasets.load_dataset(path, split=split or None)
        return datasets.load_dataset(repo_id, split=split or None, token=token)
    except InitError:
        raise
    except Exception as e:
        where = "" if path else (
            " (not a local path; looked it up as a Hugging Face Hub dataset, cache "
            f"{datasets.config.HF_DATASETS_CACHE}"
            + (", offline" if datasets.config.HF_DATASETS_OFFLINE else "") + ")")
        raise InitError(f"dataset {repo_id!r}{where}: {type(e).__name__}: {e}") from e


def _fetch_s3(params, out_dir, access_key, secret_key):
    try:
        import boto3
    except ImportError:
        raise InitError("dataset provider s3 needs boto3, which is not installed here: "
                        "pip install boto3") from None
    session = boto3.session.Session(aws_access_key_id=access_key,
                                    aws_secret_access_key=secret_key,
                                    region_name=params.get("region_name"))
    s3 = session.resource("s3", endpoint_url=params["endpoint_url"])
    bucket = s3.Bucket(params["bucket_name"])
    count = 0
    for obj in bucket.objects.filter(Prefix=params["file_key"]):
        rel = obj.key.split("/", 1)[1] if "/" in obj.key else obj.key
        if not rel or rel.endswith("/"):
            continue
        target = os.path.join(out_dir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        bucket.download_file(obj.key, target)
        count += 1
    if not count:
        raise InitError(f"dataset s3://{params['bucket_name']}/{params['file_key']}: no objects "
                        f"under that key at {params['endpoint_url']}")
    return count


def columns_of(ds):
    """Column names of a Dataset, or of each split of a DatasetDict ({split: [...]})."""
    if hasattr(ds, "column_names") and isinstance(ds.column_names, dict):
        return dict(ds.column_names)
    return {"": list(ds.column_names)}


def check_text_column(ds, source):
    for split, cols in columns_of(ds).items():
        if "text" not in cols:
            where = f" (split {split!r})" if split else ""
            raise InitError(f"dataset {source!r}{where} has no 'text' column, which text models "
                            f"train on; columns found: {', '.join(cols) or '(none)'}")


def fetch_dataset(provider, params, out_dir, needs_text, token=None, access_key=None,
                  secret_key=None, log=print):
    """Writes the dataset to ``out_dir`` (replaced whole); returns a one-line summary."""
    tmp = out_dir.rstrip("/") + f".tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    if provider == "hf":
        source = params["repo_id"]
        ds = _load_hf(source, params.get("split"), token)
        if needs_text:
            check_text_column(ds, source)
        ds.save_to_disk(tmp)
        rows = sum(len(d) for d in ds.values()) if hasattr(ds, "values") else len(ds)
        summary = f"dataset {source}: {rows} rows, columns {columns_of(ds)}"
    elif provider == "s3":
        os.makedirs(tmp)
        count = _fetch_s3(params, tmp, access_key, secret_key)
        summary = f"dataset s3://{params['bucket_name']}/{params['file_key']}: {count} objects"
    else:
        raise InitError(f"--dataset_provider {provider!r}: expected hf or s3")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
    log(summary)
    return summary
