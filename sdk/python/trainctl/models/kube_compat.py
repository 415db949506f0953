"""Which Kubernetes model classes the SDK uses: ``kubernetes.client``'s when that package can be
imported, else our stand-ins (``kube_standins``).

Set ``TRAINCTL_SDK_NO_KUBERNETES=1`` (also ``true``/``yes``/``on``) before the first import of
``trainctl`` to use the stand-ins even where kubernetes is installed; it is read once, at import.

* ``USING_KUBERNETES``: True when the classes are kubernetes'.
* ``KUBE_MODELS``: name -> class for every stand-in name; with kubernetes, its class of that name
  (or the stand-in where that kubernetes version lacks the class, e.g.
  ``V1VolumeResourceRequirements`` before kubernetes 29).
* ``kube_model(name)``: the class for a kubernetes type name, or None; with kubernetes this
  reaches every model of ``kubernetes.client``, not only the listed ones.
"""

import os

from .kube_standins import STANDINS

ENV_NO_KUBERNETES = "TRAINCTL_SDK_NO_KUBERNETES"

# Upstream type strings that name no class; the value is the kubernetes class meant, if any.
TYPE_ALIASES = {"K8sIoApiAutoscalingV2MetricSpec": "V2MetricSpec"}


def kubernetes_disabled(environ=os.environ):
    """True when the environment asks for the stand-ins."""
    return environ.get(ENV_NO_KUBERNETES, "").strip().lower() in {"1", "true", "yes", "on"}


kubernetes_client = None
if not kubernetes_disabled():
    try:
        import kubernetes.client as kubernetes_client
    except Exception:  # absent, or installed without its dependencies
        kubernetes_client = None

USING_KUBERNETES = kubernetes_client is not None


def _from_kubernetes(name):
    cls = getattr(kubernetes_client, name, None) if USING_KUBERNETES else None
    if isinstance(cls, type) and isinstance(getattr(cls, "openapi_types", None), dict):
        return cls
    return None


KUBE_MODELS = {name: _from_kubernetes(name) or standin for name, standin in STANDINS.items()}


def kube_model(name):
    """The model class for a kubernetes type name such as ``'V1Pod'``, or None if unknown."""
    name = TYPE_ALIASES.get(name, name)
    return KUBE_MODELS.get(name) or _from_kubernetes(name)
