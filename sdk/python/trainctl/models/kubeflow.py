"""The ``kubeflow.org/v1`` training-job models, field for field those of upstream
``kubeflow-training`` 1.9.4 (class names, attribute names, type strings, JSON keys and which
attributes are required), plus MXJob, which the project's CRDs serve and upstream 1.9 dropped.

Deliberate differences from upstream, all additive:

* ``KubeflowOrgV1ReplicaStatus.restarts`` (int): the project's CRD and operator report it (every
  retry of the type: recreations and in-place restarts), and ``past_restarts`` (int, JSON
  ``pastRestarts``), the part of it that belongs to replicas no longer there;
* ``KubeflowOrgV1JobStatus.trainer_status`` (JSON ``trainerStatus``), a
  ``KubeflowOrgV1TrainerStatus`` (``progress_percentage``, ``estimated_remaining_seconds``,
  ``metrics`` as ``KubeflowOrgV1TrainerMetric`` name/value pairs, ``last_updated_time``): what
  the training last reported to trainctl's runtime status endpoint, in the shape Kubeflow
  Trainer v2.3 gives a TrainJob's ``status.trainerStatus``; None until it reports;
* ``KubeflowOrgV1MXJob``/``...MXJobList``/``...MXJobSpec``: spec attributes ``job_mode``,
  ``mx_replica_specs``, ``run_policy``; like the 1.9.4 specs of the other kinds,
  ``mx_replica_specs`` and ``run_policy`` are required (upstream 1.5's MXJobSpec also required
  ``job_mode``; the project's operator ignores it, so it is optional here).

Type strings naming no model of this SDK (``Quantity``, ``K8sIoApiAutoscalingV2MetricSpec``) are
kept as upstream spells them; ``deserialize`` leaves such values as plain JSON (or, for the metric
spec, uses ``kubernetes.client.V2MetricSpec`` when kubernetes is in use).
"""

from .base import Model

_REPLICA_SPECS = "dict(str, KubeflowOrgV1ReplicaSpec)"


class KubeflowOrgV1ReplicaSpec(Model):
    """One replica type of a job: how many pods, their restart policy and pod template."""
    openapi_types = {"replicas": "int", "restart_policy": "str", "template": "V1PodTemplateSpec"}
    attribute_map = {"replicas": "replicas", "restart_policy": "restartPolicy",
                     "template": "template"}


class KubeflowOrgV1SchedulingPolicy(Model):
    """Gang-scheduling settings (Volcano / scheduler-plugins)."""
    openapi_types = {"min_available": "int", "min_resources": "dict(str, Quantity)",
                     "priority_class": "str", "queue": "str", "schedule_timeout_seconds": "int"}
    attribute_map = {"min_available": "minAvailable", "min_resources": "minResources",
                     "priority_class": "priorityClass", "queue": "queue",
                     "schedule_timeout_seconds": "scheduleTimeoutSeconds"}


class KubeflowOrgV1RunPolicy(Model):
    """Job-wide runtime policy: clean-up, TTL, deadline, backoff, scheduling, suspend."""
    openapi_types = {"active_deadline_seconds": "int", "backoff_limit": "int",
                     "clean_pod_policy": "str", "managed_by": "str",
                     "scheduling_policy": "KubeflowOrgV1SchedulingPolicy", "suspend": "bool",
                     "ttl_seconds_after_finished": "int"}
    attribute_map = {"active_deadline_seconds": "activeDeadlineSeconds",
                     "backoff_limit": "backoffLimit", "clean_pod_policy": "cleanPodPolicy",
                     "managed_by": "managedBy", "scheduling_policy": "schedulingPolicy",
                     "suspend": "suspend", "ttl_seconds_after_finished": "ttlSecondsAfterFinished"}


class KubeflowOrgV1RDZVConf(Model):
    """One key/value of a PyTorch elastic rendezvous configuration."""
    openapi_types = {"key": "str", "value": "str"}
    attribute_map = {"key": "key", "value": "value"}


class KubeflowOrgV1ElasticPolicy(Model):
    """PyTorch elastic training (torchrun rendezvous and scaling) settings."""
    openapi_types = {"max_replicas": "int", "max_restarts": "int",
                     "metrics": "list[K8sIoApiAutoscalingV2MetricSpec]", "min_replicas": "int",
                     "n_proc_per_node": "int", "rdzv_backend": "str",
                     "rdzv_conf": "list[KubeflowOrgV1RDZVConf]", "rdzv_host": "str",
                     "rdzv_id": "str", "rdzv_port": "int", "standalone": "bool"}
    attribute_map = {"max_replicas": "maxReplicas", "max_restarts": "maxRestarts",
                     "metrics": "metrics", "min_replicas": "minReplicas",
                     "n_proc_per_node": "nProcPerNode", "rdzv_backend": "rdzvBackend",
                     "rdzv_conf": "rdzvConf", "rdzv_host": "rdzvHost", "rdzv_id": "rdzvId",
                     "rdzv_port": "rdzvPort", "standalone": "standalone"}


class KubeflowOrgV1PaddleElasticPolicy(Model):
    """PaddlePaddle elastic training settings."""
    openapi_types = {"max_replicas": "int", "max_restarts": "int",
                     "metrics": "list[K8sIoApiAutoscalingV2MetricSpec]", "min_replicas": "int"}
    attribute_map = {"max_replicas": "maxReplicas", "max_restarts": "maxRestarts",
                     "metrics": "metrics", "min_replicas": "minReplicas"}


class KubeflowOrgV1JobCondition(Model):
    """One condition (Created, Running, Restarting, Succeeded, Failed) of a job's status."""
    openapi_types = {"last_transition_time": "datetime", "last_update_time": "datetime",
                     "message": "str", "reason": "str", "status": "str", "type": "str"}
    attribute_map = {"last_transition_time": "lastTransitionTime",
                     "last_update_time": "lastUpdateTime", "message": "message",
                     "reason": "reason", "status": "status", "type": "type"}
    required_attributes = frozenset({"status", "type"})


class KubeflowOrgV1ReplicaStatus(Model):
    """Pod counts of one replica type (``restarts`` and ``past_restarts`` are ours, see the
    module docstring)."""
    openapi_types = {"active": "int", "failed": "int", "label_selector": "V1LabelSelector",
                     "past_restarts": "int", "restarts": "int", "selector": "str",
                     "succeeded": "int"}
    attribute_map = {"active": "active", "failed": "failed", "label_selector": "labelSelector",
                     "past_restarts": "pastRestarts", "restarts": "restarts",
                     "selector": "selector", "succeeded": "succeeded"}


class KubeflowOrgV1TrainerMetric(Model):
    """One metric of a training's progress report: its name and its value as text (ours)."""
    openapi_types = {"name": "str", "value": "str"}
    attribute_map = {"name": "name", "value": "value"}
    required_attributes = frozenset({"name", "value"})


class KubeflowOrgV1TrainerStatus(Model):
    """The training's last progress report (ours; see the module docstring)."""
    openapi_types = {"estimated_remaining_seconds": "int", "last_updated_time": "datetime",
                     "metrics": "list[KubeflowOrgV1TrainerMetric]", "progress_percentage": "int"}
    attribute_map = {"estimated_remaining_seconds": "estimatedRemainingSeconds",
                     "last_updated_time": "lastUpdatedTime", "metrics": "metrics",
                     "progress_percentage": "progressPercentage"}


class KubeflowOrgV1JobStatus(Model):
    """A job's observed state: conditions, per-replica-type counts ("Master", "Worker", ...),
    times, and (ours) the training's last progress report."""
    openapi_types = {"completion_time": "datetime",
                     "conditions": "list[KubeflowOrgV1JobCondition]",
                     "last_reconcile_time": "datetime",
                     "replica_statuses": "dict(str, KubeflowOrgV1ReplicaStatus)",
                     "start_time": "datetime",
                     "trainer_status": "KubeflowOrgV1TrainerStatus"}
    attribute_map = {"completion_time": "completionTime", "conditions": "conditions",
                     "last_reconcile_time": "lastReconcileTime",
                     "replica_statuses": "replicaStatuses", "start_time": "startTime",
                     "trainer_status": "trainerStatus"}


class KubeflowOrgV1PyTorchJobSpec(Model):
    openapi_types = {"elastic_policy": "KubeflowOrgV1ElasticPolicy", "nproc_per_node": "str",
                     "pytorch_replica_specs": _REPLICA_SPECS,
                     "run_policy": "KubeflowOrgV1RunPolicy"}
    attribute_map = {"elastic_policy": "elasticPolicy", "nproc_per_node": "nprocPerNode",
                     "pytorch_replica_specs": "pytorchReplicaSpecs", "run_policy": "runPolicy"}
    required_attributes = frozenset({"pytorch_replica_specs", "run_policy"})


class KubeflowOrgV1TFJobSpec(Model):
    openapi_types = {"enable_dynamic_worker": "bool", "run_policy": "KubeflowOrgV1RunPolicy",
                     "success_policy": "str", "tf_replica_specs": _REPLICA_SPECS}
    attribute_map = {"enable_dynamic_worker": "enableDynamicWorker", "run_policy": "runPolicy",
                     "success_policy": "successPolicy", "tf_replica_specs": "tfReplicaSpecs"}
    required_attributes = frozenset({"run_policy", "tf_replica_specs"})


class KubeflowOrgV1XGBoostJobSpec(Model):
    openapi_types = {"run_policy": "KubeflowOrgV1RunPolicy", "xgb_replica_specs": _REPLICA_SPECS}
    attribute_map = {"run_policy": "runPolicy", "xgb_replica_specs": "xgbReplicaSpecs"}
    required_attributes = frozenset({"run_policy", "xgb_replica_specs"})


class KubeflowOrgV1MPIJobSpec(Model):
    """MPIJob (v1) spec; unlike the other kinds, upstream does not require ``run_policy``."""
    openapi_types = {"clean_pod_policy": "str", "main_container": "str",
                     "mpi_replica_specs": _REPLICA_SPECS, "run_policy": "KubeflowOrgV1RunPolicy",
                     "slots_per_worker": "int"}
    attribute_map = {"clean_pod_policy": "cleanPodPolicy", "main_container": "mainContainer",
                     "mpi_replica_specs": "mpiReplicaSpecs", "run_policy": "runPolicy",
                     "slots_per_worker": "slotsPerWorker"}
    required_attributes = frozenset({"mpi_replica_specs"})


class KubeflowOrgV1PaddleJobSpec(Model):
    openapi_types = {"elastic_policy": "KubeflowOrgV1PaddleElasticPolicy",
                     "paddle_replica_specs": _REPLICA_SPECS, "run_policy": "KubeflowOrgV1RunPolicy"}
    attribute_map = {"elastic_policy": "elasticPolicy",
                     "paddle_replica_specs": "paddleReplicaSpecs", "run_policy": "runPolicy"}
    required_attributes = frozenset({"paddle_replica_specs", "run_policy"})


class KubeflowOrgV1JAXJobSpec(Model):
    openapi_types = {"jax_replica_specs": _REPLICA_SPECS, "run_policy": "KubeflowOrgV1RunPolicy"}
    attribute_map = {"jax_replica_specs": "jaxReplicaSpecs", "run_policy": "runPolicy"}
    required_attributes = frozenset({"jax_replica_specs", "run_policy"})


class KubeflowOrgV1MXJobSpec(Model):
    """MXJob spec (ours; see the module docstring)."""
    openapi_types = {"job_mode": "str", "mx_replica_specs": _REPLICA_SPECS,
                     "run_policy": "KubeflowOrgV1RunPolicy"}
    attribute_map = {"job_mode": "jobMode", "mx_replica_specs": "mxReplicaSpecs",
                     "run_policy": "runPolicy"}
    required_attributes = frozenset({"mx_replica_specs", "run_policy"})


def _job_and_list(prefix, spec):
    """The ``<prefix>`` job class (apiVersion, kind, metadata, spec, status) and its list class
    (apiVersion, items [required], kind, metadata); every kind has the same two shapes."""
    job = type(prefix, (Model,), {
        "__module__": __name__, "__qualname__": prefix,
        "__doc__": f"A {prefix[len('KubeflowOrgV1'):]} object (``kubeflow.org/v1``).",
        "openapi_types": {"api_version": "str", "kind": "str", "metadata": "V1ObjectMeta",
                          "spec": spec.__name__, "status": "KubeflowOrgV1JobStatus"},
        "attribute_map": {"api_version": "apiVersion", "kind": "kind", "metadata": "metadata",
                          "spec": "spec", "status": "status"},
    })
    name = prefix + "List"
    job_list = type(name, (Model,), {
        "__module__": __name__, "__qualname__": name,
        "__doc__": f"A list of {prefix} objects, as the API server returns it.",
        "openapi_types": {"api_version": "str", "items": f"list[{prefix}]", "kind": "str",
                          "metadata": "V1ListMeta"},
        "attribute_map": {"api_version": "apiVersion", "items": "items", "kind": "kind",
                          "metadata": "metadata"},
        "required_attributes": frozenset({"items"}),
    })
    return job, job_list


KubeflowOrgV1PyTorchJob, KubeflowOrgV1PyTorchJobList = _job_and_list(
    "KubeflowOrgV1PyTorchJob", KubeflowOrgV1PyTorchJobSpec)
KubeflowOrgV1TFJob, KubeflowOrgV1TFJobList = _job_and_list(
    "KubeflowOrgV1TFJob", KubeflowOrgV1TFJobSpec)
KubeflowOrgV1XGBoostJob, KubeflowOrgV1XGBoostJobList = _job_and_list(
    "KubeflowOrgV1XGBoostJob", KubeflowOrgV1XGBoostJobSpec)
KubeflowOrgV1MPIJob, KubeflowOrgV1MPIJobList = _job_and_list(
    "KubeflowOrgV1MPIJob", KubeflowOrgV1MPIJobSpec)
KubeflowOrgV1PaddleJob, KubeflowOrgV1PaddleJobList = _job_and_list(
    "KubeflowOrgV1PaddleJob", KubeflowOrgV1PaddleJobSpec)
KubeflowOrgV1JAXJob, KubeflowOrgV1JAXJobList = _job_and_list(
    "KubeflowOrgV1JAXJob", KubeflowOrgV1JAXJobSpec)
KubeflowOrgV1MXJob, KubeflowOrgV1MXJobList = _job_and_list(
    "KubeflowOrgV1MXJob", KubeflowOrgV1MXJobSpec)

# kind -> job model class, list model class, and the spec attribute holding its replica specs.
KIND_MODELS = {
    "TFJob": KubeflowOrgV1TFJob,
    "PyTorchJob": KubeflowOrgV1PyTorchJob,
    "XGBoostJob": KubeflowOrgV1XGBoostJob,
    "MPIJob": KubeflowOrgV1MPIJob,
    "PaddleJob": KubeflowOrgV1PaddleJob,
    "JAXJob": KubeflowOrgV1JAXJob,
    "MXJob": KubeflowOrgV1MXJob,
}
KIND_LIST_MODELS = {
    "TFJob": KubeflowOrgV1TFJobList,
    "PyTorchJob": KubeflowOrgV1PyTorchJobList,
    "XGBoostJob": KubeflowOrgV1XGBoostJobList,
    "MPIJob": KubeflowOrgV1MPIJobList,
    "PaddleJob": KubeflowOrgV1PaddleJobList,
    "JAXJob": KubeflowOrgV1JAXJobList,
    "MXJob": KubeflowOrgV1MXJobList,
}
REPLICA_SPECS_ATTRIBUTE = {
    "TFJob": "tf_replica_specs",
    "PyTorchJob": "pytorch_replica_specs",
    "XGBoostJob": "xgb_replica_specs",
    "MPIJob": "mpi_replica_specs",
    "PaddleJob": "paddle_replica_specs",
    "JAXJob": "jax_replica_specs",
    "MXJob": "mx_replica_specs",
}

# Every class defined here, by name (deserialize resolves type strings through it).
KUBEFLOW_MODELS = {cls.__name__: cls for cls in list(globals().values())
                   if isinstance(cls, type) and issubclass(cls, Model) and cls is not Model}
