"""``train()``: LLM fine-tuning as upstream's SDK shapes it — a PVC named after the job (the
workspace), a PyTorchJob whose replicas run the Hugging Face trainer under torchrun after the
storage initializer has put the model and the dataset into the workspace.

``fine_tune_objects`` decides everything (pure); ``train_on_cluster`` and ``train_locally``
write it. Differences from upstream 1.9.4, on purpose:

* credentials (model/dataset tokens, S3 keys, ``hub_token``) go into a Secret
  ``<name>-credentials`` that the containers read through ``secretKeyRef``, never into args or
  env values (locally the Secret is a private folder given to ``trainctl run --secret``);
* every replica waits for the storage initializer: with the project's initializer (always
  locally; on a cluster with ``initializer_image``) every replica runs it, and it does the work
  once under a lock; with upstream's image the Master runs it and the Workers wait for its
  dataset to appear;
* ``restartPolicy: ExitCode`` on every replica (upstream leaves the default, OnFailure, which
  retries bad input forever): exit codes 1-127 fail the job with the message that says why,
  128 and up (SIGKILL, OOM, preemption) restart it, and the trainer resumes;
* ``training_parameters``: ``*_token`` never serialised, and ``logging_dir``/``report_to`` left
  out when they are transformers' client-side defaults, so the trainer resolves them where it
  runs; a relative ``output_dir`` lands in the workspace;
* locally, the containers run this interpreter's ``trainctl.storage_initializer`` and
  ``torchrun -m trainctl.trainer.hf_llm_training`` (images are ignored on this machine).

Parameter objects are duck-typed (ours in ``trainctl.storage_initializer``, or upstream's)."""

import importlib.util
import json
import os
import re

from .. import constants
from .. import job_builder
from .. import models
from ..storage_initializer import credentials, transformer_type_name

TRAINER_MODULE = "trainctl.trainer.hf_llm_training"
INITIALIZER_MODULE = "trainctl.storage_initializer"
WAIT_CONTAINER = "wait-for-storage-initializer"
# Packages train() needs where training runs (the local backend: this interpreter).
LOCAL_PACKAGES = ("torch", "transformers", "datasets", "accelerate", "huggingface_hub",
                  "safetensors")
INSTALL_HINT = ("pip install 'trainctl[huggingface]' (in the trainctl repository, "
                "`make deps` installs a tested set into .venv)")
_SDK_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _json(obj):
    return json.dumps(obj, default=lambda o: sorted(o) if isinstance(o, set)
                      else o.__name__ if isinstance(o, type) else str(o))


def _provider(params, kinds, what):
    name = type(params).__name__
    if name not in kinds:
        raise ValueError(f"Invalid {what} provider parameters {params}")
    return kinds[name]


def missing_packages(lora):
    names = LOCAL_PACKAGES + (("peft",) if lora else ())
    return [n for n in names if importlib.util.find_spec(n) is None]


def _client_default_report_to(training_args):
    try:
        return type(training_args)(output_dir=training_args.output_dir).report_to
    except Exception:
        return None


def training_parameters(training_args):
    """(the JSON-able dict the trainer gets, the hub token or None)."""
    d = training_args.to_dict()
    hub_token = getattr(training_args, "hub_token", None)
    for key in list(d):
        if key.endswith("_token"):
            d[key] = None
    out = d.get("output_dir") or ""
    logging_dir = d.get("logging_dir") or ""
    auto = re.escape(os.path.join(out, "runs")) + r"/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_"
    if not logging_dir or re.match(auto, logging_dir):
        d.pop("logging_dir", None)
    if d.get("report_to") == _client_default_report_to(training_args):
        d.pop("report_to", None)
    return d, hub_token


def _credentials(model_params, dataset_params, hub_token):
    found = {"model_token": getattr(model_params, "access_token", None),
             "dataset_token": getattr(dataset_params, "access_token", None),
             "s3_access_key": getattr(dataset_params, "access_key", None),
             "s3_secret_key": getattr(dataset_params, "secret_key", None),
             "hub_token": hub_token}
    return {k: v for k, v in found.items() if v}


def _public(params):
    return {k: v for k, v in vars(params).items()
            if k not in credentials.PARAMETER_FIELDS}


def _secret_env(job_name, which):
    return [models.V1EnvVar(
        name=credentials.ENV[w],
        value_from=models.deserialize(
            {"secretKeyRef": {"name": credentials.secret_name(job_name),
                              "key": credentials.SECRET_KEYS[w]}}, "V1EnvVarSource"))
        for w in which]


def fine_tune_objects(name, namespace, labels, annotations, num_workers, num_procs_per_worker,
                      resources_per_worker, model_provider_parameters,
                      dataset_provider_parameters, trainer_parameters, init_env_vars, env_vars,
                      storage_config, local_python=None, trainer_image=None,
                      initializer_image=None):
    """{"job": model, "pvc": dict, "secret": {key: value} (may be empty)}. ``local_python``
    set: the containers run that interpreter (the local backend). Raises ValueError."""
    if not name or not model_provider_parameters or not dataset_provider_parameters or \
            not trainer_parameters:
        raise ValueError("One of the required parameters is None")
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers}")
    storage = {"size": constants.PVC_DEFAULT_SIZE, "storage_class": None,
               "access_modes": constants.PVC_DEFAULT_ACCESS_MODES}
    storage.update(storage_config or {})
    mp = _provider(model_provider_parameters, {"HuggingFaceModelParams": "hf"}, "model")
    dp = _provider(dataset_provider_parameters,
                   {"S3DatasetParams": "s3", "HuggingFaceDatasetParams": "hf"}, "dataset")
    transformer = transformer_type_name(model_provider_parameters.transformer_type)
    ta = getattr(trainer_parameters, "training_parameters", None)
    if ta is None or not hasattr(ta, "to_dict"):
        raise ValueError("trainer_parameters.training_parameters: expected a "
                         "transformers.TrainingArguments")
    lora = getattr(trainer_parameters, "lora_config", None)
    ta_dict, hub_token = training_parameters(ta)
    secret = _credentials(model_provider_parameters, dataset_provider_parameters, hub_token)

    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"accessModes": storage["access_modes"],
                    "resources": {"requests": {"storage": storage["size"]}}}}
    if storage.get("storage_class") is not None:
        pvc["spec"]["storageClassName"] = storage["storage_class"]

    mount = constants.STORAGE_INITIALIZER_VOLUME_MOUNT
    ours = local_python is not None or initializer_image is not None
    workspace_env = [models.V1EnvVar(name="TRAINCTL_WORKSPACE",
                                     value=constants.INIT_CONTAINER_MOUNT_PATH)]
    local_env = []
    if local_python:
        from ..backends.local import torchrun_workaround_env
        pythonpath = os.pathsep.join(p for p in (_SDK_ROOT, os.environ.get("PYTHONPATH")) if p)
        local_env = [models.V1EnvVar(name="PYTHONPATH", value=pythonpath),
                     models.V1EnvVar(name="PYTHONUNBUFFERED", value="1")]
        local_env += [models.V1EnvVar(name=k, value=v)
                      for k, v in torchrun_workaround_env().items()]
    init_args = ["--model_provider", mp, "--model_provider_parameters",
                 _json(_public(model_provider_parameters)), "--dataset_provider", dp,
                 "--dataset_provider_parameters", _json(_public(dataset_provider_parameters))]
    init_secrets = [w for w in ("model_token", "dataset_token", "s3_access_key",
                                "s3_secret_key") if w in secret]
    init = models.V1Container(
        name=constants.STORAGE_INITIALIZER,
        image=initializer_image or constants.STORAGE_INITIALIZER_IMAGE,
        command=[local_python, "-m", INITIALIZER_MODULE] if local_python else None,
        args=init_args, volume_mounts=[mount],
        env=(job_builder.env_list(init_env_vars) or []) + workspace_env + local_env +
        _secret_env(name, init_secrets))

    trainer_args = ["--model_uri", model_provider_parameters.model_uri, "--transformer_type",
                    transformer, "--num_labels",
                    str(getattr(model_provider_parameters, "num_labels", None)),
                    "--model_dir", constants.VOLUME_PATH_MODEL, "--dataset_dir",
                    constants.VOLUME_PATH_DATASET]
    if lora is not None:
        trainer_args += ["--lora_config", _json(lora.to_dict())]
    trainer_args += ["--training_parameters", _json(ta_dict)]
    # Upstream's image runs its own entrypoint; ours and this machine run our trainer module.
    command = ["torchrun", "--module", TRAINER_MODULE] if local_python or trainer_image else None
    trainer = models.V1Container(
        name=constants.JOB_PARAMETERS[constants.PYTORCHJOB_KIND]["container"],
        image=trainer_image or constants.TRAINER_TRANSFORMER_IMAGE, command=command,
        args=trainer_args, volume_mounts=[mount],
        env=(job_builder.env_list(env_vars) or []) + workspace_env + local_env +
        _secret_env(name, [w for w in ("hub_token",) if w in secret]),
        resources=job_builder.resources_of(resources_per_worker))
    # Upstream's initializer image cannot share the work: Workers wait for its dataset.
    wait = models.V1Container(
        name=WAIT_CONTAINER, image=trainer_image or constants.TRAINER_TRANSFORMER_IMAGE,
        command=["python3", "-c", WAIT_SCRIPT, constants.VOLUME_PATH_DATASET],
        volume_mounts=[mount])
    volume = {"name": constants.STORAGE_INITIALIZER,
              "persistentVolumeClaim": {"claimName": name}}

    def template(init_containers):
        return models.V1PodTemplateSpec(
            metadata=models.V1ObjectMeta(
                annotations={constants.ISTIO_SIDECAR_INJECTION: "false"}),
            spec=models.V1PodSpec(containers=[trainer], init_containers=init_containers,
                                  volumes=[models.deserialize(volume, "V1Volume")]))

    job = job_builder.job_from_template(
        constants.PYTORCHJOB_KIND, name, namespace, template([init if ours else wait]),
        num_workers, labels, annotations, num_procs_per_worker)
    job.spec.pytorch_replica_specs[constants.REPLICA_TYPE_MASTER].template = template([init])
    # Bad input (exit 2) or an error in training fails the job at once, with its message; a
    # kill, an OOM or a preemption (exit code 128 and up) restarts it, and it resumes.
    for spec in job.spec.pytorch_replica_specs.values():
        spec.restart_policy = "ExitCode"
    return {"job": job, "pvc": pvc, "secret": secret}


# Waits until a dataset written by save_to_disk is in the folder (argv[1]), printing why.
WAIT_SCRIPT = (
    "import os,sys,time\n"
    "d=sys.argv[1]\n"
    "names=('dataset_dict.json','dataset_info.json','state.json')\n"
    "print('waiting for the storage initializer to write',d,flush=True)\n"
    "while not any(os.path.exists(os.path.join(d,n)) for n in names): time.sleep(2)\n"
    "print('dataset ready',flush=True)\n")


def _secret_body(name, namespace, data):
    import base64
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": credentials.secret_name(name), "namespace": namespace,
                         "labels": {"trainctl.dev/credentials-for": name}},
            "data": {credentials.SECRET_KEYS[k]: base64.b64encode(v.encode()).decode()
                     for k, v in data.items()}}


def train_on_cluster(client, name, namespace, queue_name, **kwargs):
    objs = fine_tune_objects(name=name, namespace=namespace, **kwargs)
    core = client.core_api
    pvc = objs["pvc"]
    try:
        core.create_namespaced_persistent_volume_claim(namespace=namespace, body=pvc)
    except Exception as e:
        existing = core.list_namespaced_persistent_volume_claim(namespace).items
        if any(p.metadata.name == name for p in existing):
            print(f"PVC '{name}' already exists in namespace {namespace}.")
        else:
            raise RuntimeError(f"failed to create PVC. Error: {e}") from e
    if objs["secret"]:
        body = _secret_body(name, namespace, objs["secret"])
        try:
            core.create_namespaced_secret(namespace=namespace, body=body)
        except Exception as e:
            if getattr(e, "status", None) != 409:
                raise RuntimeError(f"failed to create Secret "
                                   f"{credentials.secret_name(name)}. Error: {e}") from e
            core.replace_namespaced_secret(credentials.secret_name(name), namespace, body)
    client.create_job(objs["job"], namespace=namespace, queue_name=queue_name)


def train_locally(client, name, namespace, queue_name, **kwargs):
    lora = getattr(kwargs.get("trainer_parameters"), "lora_config", None) is not None
    missing = missing_packages(lora)
    if missing:
        raise ValueError(
            f"train() runs the trainer with {client._backend.python}, which cannot import "
            f"{', '.join(missing)}. Install them: {INSTALL_HINT}")
    objs = fine_tune_objects(name=name, namespace=namespace,
                             local_python=client._backend.python, **kwargs)
    secret_dir = None
    if objs["secret"]:
        secret_dir = client._backend.write_secret(
            namespace, credentials.secret_name(name),
            {credentials.SECRET_KEYS[k]: v for k, v in objs["secret"].items()})
    secrets = {credentials.secret_name(name): secret_dir} if secret_dir else {}
    with client._backend.secrets_for(name, secrets):
        client.create_job(objs["job"], namespace=namespace, queue_name=queue_name)
