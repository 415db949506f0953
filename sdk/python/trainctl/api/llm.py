"""``train()`` on a cluster: LLM fine-tuning as upstream's SDK shapes it — a PVC named after the
job, a PyTorchJob whose Master runs the storage-initializer init container (model and dataset
into the PVC) and every replica the Hugging Face trainer image. Parameter objects are duck-typed
(ours in ``trainctl.storage_initializer``, or upstream's): no transformers/peft import needed to
build the objects; ``trainer_parameters.lora_config`` and ``.training_parameters`` need
``to_dict()``."""

import json

from .. import constants
from .. import job_builder
from .. import models

def _json(obj):
    return json.dumps(obj, default=lambda o: sorted(o) if isinstance(o, set)
                      else o.__name__ if isinstance(o, type) else str(o))


def _provider(params, kinds, what):
    name = type(params).__name__
    if name not in kinds:
        raise ValueError(f"Invalid {what} provider parameters {params}")
    return kinds[name]


def train_on_cluster(client, name, namespace, labels, annotations, num_workers,
                     num_procs_per_worker, resources_per_worker, model_provider_parameters,
                     dataset_provider_parameters, trainer_parameters, init_env_vars, env_vars,
                     storage_config, queue_name):
    if not name or not model_provider_parameters or not dataset_provider_parameters or \
            not trainer_parameters:
        raise ValueError("One of the required parameters is None")
    storage = {"size": constants.PVC_DEFAULT_SIZE, "storage_class": None,
               "access_modes": constants.PVC_DEFAULT_ACCESS_MODES}
    storage.update(storage_config or {})
    mp = _provider(model_provider_parameters, {"HuggingFaceModelParams": "hf"}, "model")
    dp = _provider(dataset_provider_parameters,
                   {"S3DatasetParams": "s3", "HuggingFaceDatasetParams": "hf"}, "dataset")
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"accessModes": storage["access_modes"],
                    "resources": {"requests": {"storage": storage["size"]}}}}
    if storage.get("storage_class") is not None:
        pvc["spec"]["storageClassName"] = storage["storage_class"]
    try:
        client.core_api.create_namespaced_persistent_volume_claim(namespace=namespace, body=pvc)
    except Exception as e:
        existing = client.core_api.list_namespaced_persistent_volume_claim(namespace).items
        if any(p.metadata.name == name for p in existing):
            print(f"PVC '{name}' already exists in namespace {namespace}.")
        else:
            raise RuntimeError(f"failed to create PVC. Error: {e}") from e

    mount = constants.STORAGE_INITIALIZER_VOLUME_MOUNT
    init = models.V1Container(
        name=constants.STORAGE_INITIALIZER, image=constants.STORAGE_INITIALIZER_IMAGE,
        args=["--model_provider", mp, "--model_provider_parameters",
              _json(vars(model_provider_parameters)), "--dataset_provider", dp,
              "--dataset_provider_parameters", _json(vars(dataset_provider_parameters))],
        volume_mounts=[mount], env=job_builder.env_list(init_env_vars))
    transformer = model_provider_parameters.transformer_type
    trainer = models.V1Container(
        name=constants.JOB_PARAMETERS[constants.PYTORCHJOB_KIND]["container"],
        image=constants.TRAINER_TRANSFORMER_IMAGE,
        args=["--model_uri", model_provider_parameters.model_uri, "--transformer_type",
              getattr(transformer, "__name__", str(transformer)), "--num_labels",
              str(getattr(model_provider_parameters, "num_labels", None)), "--model_dir",
              constants.VOLUME_PATH_MODEL, "--dataset_dir",
              constants.VOLUME_PATH_DATASET, "--lora_config",
              _json(trainer_parameters.lora_config.to_dict()), "--training_parameters",
              _json(trainer_parameters.training_parameters.to_dict())],
        volume_mounts=[mount], env=job_builder.env_list(env_vars),
        resources=job_builder.resources_of(resources_per_worker))
    volume = {"name": constants.STORAGE_INITIALIZER,
              "persistentVolumeClaim": {"claimName": name}}

    def template(init_containers):
        return models.V1PodTemplateSpec(
            metadata=models.V1ObjectMeta(
                annotations={constants.ISTIO_SIDECAR_INJECTION: "false"}),
            spec=models.V1PodSpec(containers=[trainer], init_containers=init_containers,
                                  volumes=[models.deserialize(volume, "V1Volume")]))

    job = job_builder.job_from_template(
        constants.PYTORCHJOB_KIND, name, namespace, template(None), num_workers, labels,
        annotations, num_procs_per_worker)
    job.spec.pytorch_replica_specs[constants.REPLICA_TYPE_MASTER].template = template([init])
    client.create_job(job, namespace=namespace, queue_name=queue_name)
