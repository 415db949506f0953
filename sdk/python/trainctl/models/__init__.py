"""Models of the trainctl SDK: ``kubeflow.org/v1`` job objects and the Kubernetes objects inside
them, name- and field-compatible with upstream ``kubeflow.training.models`` (1.9.4).

Public names:

* ``KubeflowOrgV1*``: every model of upstream 1.9.4 (``kubeflow``) plus the MXJob three and
  ``KubeflowOrgV1TrainerStatus``/``KubeflowOrgV1TrainerMetric`` (``status.trainer_status``);
  ``KIND_MODELS``/``KIND_LIST_MODELS`` (kind -> job / list class, seven kinds) and
  ``REPLICA_SPECS_ATTRIBUTE`` (kind -> spec attribute of its replica-spec map);
* Kubernetes models (``V1ObjectMeta``, ``V1PodTemplateSpec``, ``V1PodSpec``, ``V1Container``,
  ``V1EnvVar``, ``V1Pod``, ``CoreV1Event``, ... all names in ``kube_standins.STANDIN_SPECS``):
  ``kubernetes.client``'s classes when that package imports, else our stand-ins;
  ``USING_KUBERNETES`` tells which, ``TRAINCTL_SDK_NO_KUBERNETES=1`` forces the stand-ins (see
  ``kube_compat``). With kubernetes, any other ``kubernetes.client`` name (``V1Affinity``, ...)
  is reachable as an attribute of this module too, as upstream re-exports them all;
* ``Model`` (the base class), ``serialize(obj)`` and ``deserialize(data, klass)`` (see ``codec``).

Stdlib only; ``kubernetes`` is optional.
"""

from .base import Model
from .codec import deserialize, resolve_model, serialize
from .kube_compat import ENV_NO_KUBERNETES, KUBE_MODELS, USING_KUBERNETES, kubernetes_client
from .kubeflow import (
    KIND_LIST_MODELS,
    KIND_MODELS,
    KUBEFLOW_MODELS,
    REPLICA_SPECS_ATTRIBUTE,
    KubeflowOrgV1ElasticPolicy,
    KubeflowOrgV1JAXJob,
    KubeflowOrgV1JAXJobList,
    KubeflowOrgV1JAXJobSpec,
    KubeflowOrgV1JobCondition,
    KubeflowOrgV1JobStatus,
    KubeflowOrgV1MPIJob,
    KubeflowOrgV1MPIJobList,
    KubeflowOrgV1MPIJobSpec,
    KubeflowOrgV1MXJob,
    KubeflowOrgV1MXJobList,
    KubeflowOrgV1MXJobSpec,
    KubeflowOrgV1PaddleElasticPolicy,
    KubeflowOrgV1PaddleJob,
    KubeflowOrgV1PaddleJobList,
    KubeflowOrgV1PaddleJobSpec,
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobList,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1RDZVConf,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1ReplicaStatus,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1SchedulingPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobList,
    KubeflowOrgV1TFJobSpec,
    KubeflowOrgV1TrainerMetric,
    KubeflowOrgV1TrainerStatus,
    KubeflowOrgV1XGBoostJob,
    KubeflowOrgV1XGBoostJobList,
    KubeflowOrgV1XGBoostJobSpec,
)

globals().update(KUBE_MODELS)  # V1ObjectMeta, V1PodTemplateSpec, V1Pod, CoreV1Event, ...

__all__ = sorted(
    ["Model", "serialize", "deserialize", "resolve_model", "USING_KUBERNETES",
     "ENV_NO_KUBERNETES", "KIND_MODELS", "KIND_LIST_MODELS", "REPLICA_SPECS_ATTRIBUTE"]
    + list(KUBEFLOW_MODELS) + list(KUBE_MODELS))


def __getattr__(name):
    """Other ``kubernetes.client`` models, when kubernetes is in use (upstream's
    ``from kubernetes.client import *``)."""
    if USING_KUBERNETES and not name.startswith("_"):
        value = getattr(kubernetes_client, name, None)
        if isinstance(value, type):
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
