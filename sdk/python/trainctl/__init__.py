"""trainctl's Python SDK: ``TrainingClient`` (upstream kubeflow-training 1.9.4's surface, the
kubeflow.org/v1 kinds) and ``TrainerClient`` (the ``kubeflow`` SDK 0.5.0's, Trainer v2
TrainJobs), each with a ``local`` backend (jobs run on this machine by the trainctl binary) and a
``kubernetes`` backend (jobs on a cluster). Models (``KubeflowOrgV1*``) and ``constants`` keep
upstream's names; ``trainer_types`` holds TrainerClient's (``CustomTrainer``, ``TrainJob``…)."""

from . import constants  # noqa: F401
from . import models  # noqa: F401
from . import trainer_types  # noqa: F401
from .api.trainer_client import TrainerClient  # noqa: F401
from .api.training_client import TrainingClient  # noqa: F401
from .trainer_types import (  # noqa: F401
    CustomTrainer, CustomTrainerContainer, BuiltinTrainer, Initializer,
    HuggingFaceDatasetInitializer, HuggingFaceModelInitializer, S3DatasetInitializer,
    S3ModelInitializer)
from .models import *  # noqa: F401,F403

__version__ = "0.1.0"
