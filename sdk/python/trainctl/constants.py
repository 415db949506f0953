"""Constants of the trainctl SDK: every name of upstream ``kubeflow.training.constants``
(``kubeflow-training`` 1.9.4) with the same value, plus MXJob and a few helpers of ours.

Differences from upstream, on purpose:

* ``DEFAULT_NAMESPACE`` is the plain ``"default"``. Upstream computes the client's default
  namespace at *import* (the in-pod service-account file, else the kubeconfig's current context);
  here ``current_namespace()`` does that, and the client calls it when it is constructed.
* ``JAXJOB_REPLICA_TYPES`` is the tuple ``("worker",)``; upstream's is the string ``"worker"``,
  which turned ``replica_type in JAXJOB_REPLICA_TYPES`` into a substring test ("work" passed).
* The base images upstream never set (``"TODO"`` for XGBoostJob/MPIJob and the literal
  ``"JAXJOB_BASE_IMAGE"`` for JAXJob in ``JOB_PARAMETERS``) keep those values, but are listed in
  ``BASE_IMAGE_UNSET`` and ``default_base_image(kind)`` raises a clear ValueError for them.
* MXJob (served by the project's CRDs, gone from upstream 1.9): ``MXJOB_*`` and a seventh
  ``JOB_PARAMETERS`` entry; ``ALL_REPLICA_TYPES``, ``JOB_REPLICA_TYPES``, ``JOB_DEFAULT_PORTS``
  and the replica-type constants that upstream lacks (Evaluator, Tuner, TunerTracker,
  TunerServer) are ours as well.
* ``INIT_CONTAINER_MOUNT_PATH``, ``VOLUME_PATH_DATASET`` and ``VOLUME_PATH_MODEL`` live in
  upstream's ``kubeflow.storage_initializer.constants``; they are here too.

As upstream, ``JOB_PARAMETERS[kind]["model"]`` and ``JOB_MODELS`` hold model class *names*
(``"KubeflowOrgV1PyTorchJob"``); ``models.KIND_MODELS`` maps a kind to the class itself.
"""

import json
import os
from typing import Union

from . import models

# How long to wait in seconds for requests to the Kubernetes API server.
DEFAULT_TIMEOUT = 120

# The default PIP index URL to download Python packages.
DEFAULT_PIP_INDEX_URL = "https://pypi.org/simple"

# The fallback namespace; the client's actual default comes from current_namespace().
DEFAULT_NAMESPACE = "default"

# Annotation that disables the Istio sidecar on job pods.
ISTIO_SIDECAR_INJECTION = "sidecar.istio.io/inject"

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

POD_KIND = "Pod"
POD_PHASE_PENDING = "Pending"

# Job conditions; a condition holds when its status is CONDITION_STATUS_TRUE.
JOB_CONDITION_CREATED = "Created"
JOB_CONDITION_RUNNING = "Running"
JOB_CONDITION_RESTARTING = "Restarting"

# Gang restart (trainctl's addition; docs/status-machine.md, "Gang restart").
RESTART_SCOPE_ANNOTATION = "trainctl.dev/restart-scope"
RESTART_ATTEMPT_ANNOTATION = "trainctl.dev/restart-attempt"
GANG_RESTART_REASON = "GangRestart"

# Checkpoint notice (trainctl's addition; docs/status-machine.md, "Checkpoint notice"; the
# helpers that read it in a replica are in trainctl.checkpoint).
NOTICE_SECONDS_ANNOTATION = "trainctl.dev/checkpoint-notice-seconds"
NOTICE_SIGNAL_ANNOTATION = "trainctl.dev/checkpoint-signal"
NOTICE_ANNOTATION = "trainctl.dev/checkpoint-notice"
NOTICE_DONE_ANNOTATION = "trainctl.dev/checkpoint-done"
CHECKPOINT_NOTICE_REASON = "CheckpointNotice"
NOTICE_FILE_ENV = "TRAINCTL_NOTICE_FILE"
NOTICE_DONE_FILE_ENV = "TRAINCTL_NOTICE_DONE_FILE"
JOB_CONDITION_SUCCEEDED = "Succeeded"
JOB_CONDITION_FAILED = "Failed"
JOB_CONDITIONS = {
    JOB_CONDITION_CREATED,
    JOB_CONDITION_RUNNING,
    JOB_CONDITION_RESTARTING,
    JOB_CONDITION_SUCCEEDED,
    JOB_CONDITION_FAILED,
}
CONDITION_STATUS_TRUE = "True"

# Labels the operator puts on job pods.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER = "master"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"  # value: the replica type, lower-case
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"

# Kueue queue label.
LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

# Replica types, as the replica-spec maps spell them.
REPLICA_TYPE_CHIEF = "Chief"
REPLICA_TYPE_PS = "PS"
REPLICA_TYPE_MASTER = "Master"
REPLICA_TYPE_WORKER = "Worker"
REPLICA_TYPE_SCHEDULER = "Scheduler"
REPLICA_TYPE_SERVER = "Server"
REPLICA_TYPE_LAUNCHER = "Launcher"
# Ours (TFJob Evaluator; MXJob tuning), as the project's operator accepts them.
REPLICA_TYPE_EVALUATOR = "Evaluator"
REPLICA_TYPE_TUNER = "Tuner"
REPLICA_TYPE_TUNER_TRACKER = "TunerTracker"
REPLICA_TYPE_TUNER_SERVER = "TunerServer"

# The LLM train() API (Kubernetes only).
STORAGE_INITIALIZER = "storage-initializer"
PVC_DEFAULT_SIZE = "10Gi"
PVC_DEFAULT_ACCESS_MODES = ["ReadWriteOnce", "ReadOnlyMany"]
INIT_CONTAINER_MOUNT_PATH = "/workspace"
VOLUME_PATH_DATASET = INIT_CONTAINER_MOUNT_PATH + "/dataset"
VOLUME_PATH_MODEL = INIT_CONTAINER_MOUNT_PATH + "/model"
STORAGE_INITIALIZER_IMAGE = os.getenv(
    "STORAGE_INITIALIZER_IMAGE", "ghcr.io/kubeflow/training-v1/storage-initializer")
STORAGE_INITIALIZER_VOLUME_MOUNT = models.V1VolumeMount(
    name=STORAGE_INITIALIZER, mount_path=INIT_CONTAINER_MOUNT_PATH)
TRAINER_TRANSFORMER_IMAGE = os.getenv(
    "TRAINER_TRANSFORMER_IMAGE", "ghcr.io/kubeflow/training-v1/trainer-huggingface")

# TFJob.
TFJOB_KIND = "TFJob"
TFJOB_MODEL = "KubeflowOrgV1TFJob"
TFJOB_PLURAL = "tfjobs"
TFJOB_CONTAINER = "tensorflow"
TFJOB_REPLICA_TYPES = (REPLICA_TYPE_PS.lower(), REPLICA_TYPE_CHIEF.lower(),
                       REPLICA_TYPE_WORKER.lower())
TFJOB_BASE_IMAGE = "docker.io/tensorflow/tensorflow:2.9.1"
TFJOB_BASE_IMAGE_GPU = "docker.io/tensorflow/tensorflow:2.9.1-gpu"

# PyTorchJob.
PYTORCHJOB_KIND = "PyTorchJob"
PYTORCHJOB_MODEL = "KubeflowOrgV1PyTorchJob"
PYTORCHJOB_PLURAL = "pytorchjobs"
PYTORCHJOB_CONTAINER = "pytorch"
PYTORCHJOB_REPLICA_TYPES = (REPLICA_TYPE_MASTER.lower(), REPLICA_TYPE_WORKER.lower())
PYTORCHJOB_BASE_IMAGE = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"

# How a function-built job starts its script (command DEFAULT_COMMAND, one args string).
ENTRYPOINT_TORCH = "torchrun"
ENTRYPOINT_PYTHON = "python -u"
DEFAULT_COMMAND = ["bash", "-c"]

# XGBoostJob.
XGBOOSTJOB_KIND = "XGBoostJob"
XGBOOSTJOB_MODEL = "KubeflowOrgV1XGBoostJob"
XGBOOSTJOB_PLURAL = "xgboostjobs"
XGBOOSTJOB_CONTAINER = "xgboost"
XGBOOSTJOB_REPLICA_TYPES = (REPLICA_TYPE_MASTER.lower(), REPLICA_TYPE_WORKER.lower())

# MPIJob.
MPIJOB_KIND = "MPIJob"
MPIJOB_MODEL = "KubeflowOrgV1MPIJob"
MPIJOB_PLURAL = "mpijobs"
MPIJOB_CONTAINER = "mpi"
MPIJOB_REPLICA_TYPES = (REPLICA_TYPE_LAUNCHER.lower(), REPLICA_TYPE_WORKER.lower())

# PaddleJob.
PADDLEJOB_KIND = "PaddleJob"
PADDLEJOB_MODEL = "KubeflowOrgV1PaddleJob"
PADDLEJOB_PLURAL = "paddlejobs"
PADDLEJOB_CONTAINER = "paddle"
PADDLEJOB_REPLICA_TYPES = (REPLICA_TYPE_MASTER.lower(), REPLICA_TYPE_WORKER.lower())
PADDLEJOB_BASE_IMAGE = "docker.io/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"

# JAXJob. The replica types are a tuple here (upstream: the bare string "worker").
JAXJOB_KIND = "JAXJob"
JAXJOB_MODEL = "KubeflowOrgV1JAXJob"
JAXJOB_PLURAL = "jaxjobs"
JAXJOB_CONTAINER = "jax"
JAXJOB_REPLICA_TYPES = (REPLICA_TYPE_WORKER.lower(),)
JAXJOB_BASE_IMAGE = "ghcr.io/kubeflow/training-v1/jaxjob-dist-spmd-mnist:latest"

# MXJob (ours).
MXJOB_KIND = "MXJob"
MXJOB_MODEL = "KubeflowOrgV1MXJob"
MXJOB_PLURAL = "mxjobs"
MXJOB_CONTAINER = "mxnet"
MXJOB_REPLICA_TYPES = tuple(t.lower() for t in (
    REPLICA_TYPE_SCHEDULER, REPLICA_TYPE_SERVER, REPLICA_TYPE_WORKER, REPLICA_TYPE_TUNER,
    REPLICA_TYPE_TUNER_TRACKER, REPLICA_TYPE_TUNER_SERVER))

# Placeholder base images upstream ships in JOB_PARAMETERS; a job from a function needs a real
# image there, so default_base_image() refuses these.
BASE_IMAGE_UNSET = frozenset({"TODO", "JAXJOB_BASE_IMAGE"})

# kind -> model class name, plural, default container name and default base image.
JOB_PARAMETERS = {
    TFJOB_KIND: {"model": TFJOB_MODEL, "plural": TFJOB_PLURAL, "container": TFJOB_CONTAINER,
                 "base_image": TFJOB_BASE_IMAGE},
    PYTORCHJOB_KIND: {"model": PYTORCHJOB_MODEL, "plural": PYTORCHJOB_PLURAL,
                      "container": PYTORCHJOB_CONTAINER, "base_image": PYTORCHJOB_BASE_IMAGE},
    XGBOOSTJOB_KIND: {"model": XGBOOSTJOB_MODEL, "plural": XGBOOSTJOB_PLURAL,
                      "container": XGBOOSTJOB_CONTAINER, "base_image": "TODO"},
    MPIJOB_KIND: {"model": MPIJOB_MODEL, "plural": MPIJOB_PLURAL, "container": MPIJOB_CONTAINER,
                  "base_image": "TODO"},
    PADDLEJOB_KIND: {"model": PADDLEJOB_MODEL, "plural": PADDLEJOB_PLURAL,
                     "container": PADDLEJOB_CONTAINER, "base_image": PADDLEJOB_BASE_IMAGE},
    JAXJOB_KIND: {"model": JAXJOB_MODEL, "plural": JAXJOB_PLURAL, "container": JAXJOB_CONTAINER,
                  "base_image": "JAXJOB_BASE_IMAGE"},
    MXJOB_KIND: {"model": MXJOB_MODEL, "plural": MXJOB_PLURAL, "container": MXJOB_CONTAINER,
                 "base_image": "TODO"},
}

# Every job model's class name, in JOB_PARAMETERS order.
JOB_MODELS = tuple(params["model"] for params in JOB_PARAMETERS.values())

# Any job model.
JOB_MODELS_TYPE = Union[
    models.KubeflowOrgV1TFJob,
    models.KubeflowOrgV1PyTorchJob,
    models.KubeflowOrgV1XGBoostJob,
    models.KubeflowOrgV1MPIJob,
    models.KubeflowOrgV1PaddleJob,
    models.KubeflowOrgV1JAXJob,
    models.KubeflowOrgV1MXJob,
]

# kind -> its lower-case replica types (the replica-type label values).
JOB_REPLICA_TYPES = {
    TFJOB_KIND: TFJOB_REPLICA_TYPES,
    PYTORCHJOB_KIND: PYTORCHJOB_REPLICA_TYPES,
    XGBOOSTJOB_KIND: XGBOOSTJOB_REPLICA_TYPES,
    MPIJOB_KIND: MPIJOB_REPLICA_TYPES,
    PADDLEJOB_KIND: PADDLEJOB_REPLICA_TYPES,
    JAXJOB_KIND: JAXJOB_REPLICA_TYPES,
    MXJOB_KIND: MXJOB_REPLICA_TYPES,
}

# Every lower-case replica type a job pod can carry (get_job_pods' replica_type check); besides
# the per-kind tuples above it has TFJob's "master" and "evaluator", which the operator accepts.
ALL_REPLICA_TYPES = tuple(dict.fromkeys(
    [t for types in JOB_REPLICA_TYPES.values() for t in types]
    + [REPLICA_TYPE_MASTER.lower(), REPLICA_TYPE_EVALUATOR.lower()]))

# kind -> (port name, port number) the operator gives the main container by default.
JOB_DEFAULT_PORTS = {
    TFJOB_KIND: ("tfjob-port", 2222),
    PYTORCHJOB_KIND: ("pytorchjob-port", 23456),
    XGBOOSTJOB_KIND: ("xgboostjob-port", 9999),
    MPIJOB_KIND: ("mpi-port", 9999),
    PADDLEJOB_KIND: ("master", 36543),
    JAXJOB_KIND: ("jaxjob-port", 6666),
    MXJOB_KIND: ("mxjob-port", 9091),
}

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/"
SERVICE_ACCOUNT_NAMESPACE_FILE = SERVICE_ACCOUNT_DIR + "serviceaccount/namespace"


def default_base_image(job_kind):
    """The default image for a job built from a function, or ValueError when the kind is unknown
    or upstream ships only a placeholder for it (XGBoostJob, MPIJob, JAXJob, MXJob)."""
    if job_kind not in JOB_PARAMETERS:
        raise ValueError(f"Job kind must be one of {list(JOB_PARAMETERS)}, got {job_kind!r}")
    image = JOB_PARAMETERS[job_kind]["base_image"]
    if image in BASE_IMAGE_UNSET:
        raise ValueError(f"There is no default base image for {job_kind}; pass base_image")
    return image


def _kubeconfig_path(config_file):
    if config_file:
        return os.path.expanduser(config_file)
    paths = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return os.path.expanduser(paths[0] if paths else "~/.kube/config")


def _load_kubeconfig(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml  # optional; a kubeconfig in YAML needs it (kubernetes brings it)
    except ImportError:
        return None
    return yaml.safe_load(text)


def _kubeconfig_namespace(config_file, context):
    try:
        config = _load_kubeconfig(_kubeconfig_path(config_file))
        name = context or config.get("current-context")
        for entry in config.get("contexts") or []:
            if entry.get("name") == name:
                namespace = (entry.get("context") or {}).get("namespace")
                return namespace.strip() if isinstance(namespace, str) and namespace.strip() \
                    else None
    except Exception:  # no file, unreadable, or not a kubeconfig: fall back
        return None
    return None


def _pod_namespace():
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE, encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


def current_namespace(config_file=None, context=None):
    """The namespace a client uses when none is given, looked up now (not at import):

    1. inside a pod (``/var/run/secrets/kubernetes.io/`` exists) and with no ``config_file``/
       ``context`` given: the service account's namespace file;
    2. the namespace of ``context`` (else the current context) in the kubeconfig
       ``config_file`` (else the first of ``$KUBECONFIG``, else ``~/.kube/config``); a YAML
       kubeconfig needs PyYAML, a JSON one does not;
    3. ``DEFAULT_NAMESPACE``.

    Unlike upstream, the namespace file is stripped and a missing one falls through, and an
    explicit ``config_file``/``context`` is honoured."""
    if not config_file and not context and os.path.isdir(SERVICE_ACCOUNT_DIR):
        namespace = _pod_namespace()
        if namespace:
            return namespace
    return _kubeconfig_namespace(config_file, context) or DEFAULT_NAMESPACE
