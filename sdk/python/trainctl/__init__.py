"""trainctl's Python SDK: ``TrainingClient`` (upstream kubeflow-training 1.9.4's surface, the
kubeflow.org/v1 kinds) and ``TrainerClient`` (the ``kubeflow`` SDK 0.5.0's, Trainer v2
TrainJobs), each with a ``local`` backend (jobs run on this machine by the trainctl binary) and a
``kubernetes`` backend (jobs on a cluster). Models (``KubeflowOrgV1*``) and ``constants`` keep
upstream's names; ``trainer_types`` holds TrainerClient's (``CustomTrainer``, ``TrainJob``…).

The names here are loaded when first used (PEP 562), so a training process that imports only
``trainctl.progress`` or ``trainctl.checkpoint`` loads neither the clients nor ``kubernetes``.
``from trainctl import X``, ``trainctl.X`` and ``from trainctl import *`` read as before."""

import importlib
import importlib.util

__version__ = "0.1.0"

# Public name -> the module (relative to this package) that defines it.
_LAZY = {
    "TrainerClient": ".api.trainer_client",
    "TrainingClient": ".api.training_client",
}
_LAZY.update({name: ".trainer_types" for name in (
    "CustomTrainer", "CustomTrainerContainer", "BuiltinTrainer", "Initializer",
    "HuggingFaceDatasetInitializer", "HuggingFaceModelInitializer", "S3DatasetInitializer",
    "S3ModelInitializer", "TorchTuneConfig", "LoraConfig", "TorchTuneInstructDataset",
    "DataType", "DataFormat", "Loss")})
# Submodules that ``import trainctl`` used to load, and so that ``import *`` gives.
_SUBMODULES = ("constants", "models", "trainer_types")


def _public_names():
    from . import models
    return sorted(set(_LAZY) | set(_SUBMODULES) | set(models.__all__))


def __getattr__(name):
    if name == "__all__":
        return _public_names()
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f".{name}", __name__)
    else:
        models = importlib.import_module(".models", __name__)
        if name not in models.__all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(models, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
