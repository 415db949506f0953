"""trainctl's Python SDK: ``TrainingClient`` (upstream kubeflow-training 1.9.4's surface) with a
``local`` backend (jobs run on this machine by the trainctl binary) and a ``kubernetes`` backend
(jobs on a cluster). Models (``KubeflowOrgV1*``) and ``constants`` keep upstream's names."""

from . import constants  # noqa: F401
from . import models  # noqa: F401
from .api.training_client import TrainingClient  # noqa: F401
from .models import *  # noqa: F401,F403

__version__ = "0.1.0"
