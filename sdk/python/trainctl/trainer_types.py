"""The value types of ``TrainerClient`` (the ``kubeflow`` SDK 0.5.0 TrainerClient API), written
here: same class names, field names, defaults and enum values as ``kubeflow.trainer``'s, so a
notebook written for either reads both. Inputs are duck-typed: ``train()`` accepts these or
``kubeflow.trainer``'s own classes (it reads fields by name, never checks ``isinstance``
against this module). Outputs (``Runtime``, ``TrainJob``, ``Step``, ``Event``) are these.

Plain dataclasses; no I/O. ``RuntimeTrainer.command`` is the entrypoint a function runs under
on that runtime (``("torchrun",)``, ``("mpirun", ...)``, ``("python",)``), not upstream's
bash template. ``TrainJob.trainer_status`` (a ``TrainerStatus``: what the training reported
last, from the TrainJob's ``status.trainerStatus``) is ours; 0.5.0's TrainJob has no such field.
"""

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Optional

UNKNOWN = "Unknown"

# TrainJob statuses, as upstream derives them (trainjob_view.py).
TRAINJOB_CREATED = "Created"
TRAINJOB_RUNNING = "Running"
TRAINJOB_COMPLETE = "Complete"
TRAINJOB_FAILED = "Failed"
TRAINJOB_STATUSES = frozenset(
    {TRAINJOB_CREATED, TRAINJOB_RUNNING, TRAINJOB_COMPLETE, TRAINJOB_FAILED})

DEFAULT_TRAINING_RUNTIME = "torch-distributed"
DEFAULT_PIP_INDEX_URLS = ["https://pypi.org/simple"]


class RuntimeKind(enum.Enum):
    CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
    TRAINING_RUNTIME = "TrainingRuntime"


class TrainerType(enum.Enum):
    CUSTOM_TRAINER = "CustomTrainer"
    BUILTIN_TRAINER = "BuiltinTrainer"


# -- inputs -----------------------------------------------------------------------------------

@dataclass
class CustomTrainer:
    """A self-contained training function; ``func_args`` are passed as keyword arguments."""
    func: Callable
    func_args: Optional[dict] = None
    image: Optional[str] = None
    packages_to_install: Optional[list] = None
    pip_index_urls: list = field(default_factory=lambda: list(DEFAULT_PIP_INDEX_URLS))
    num_nodes: Optional[int] = None
    resources_per_node: Optional[dict] = None
    env: Optional[dict] = None


@dataclass
class CustomTrainerContainer:
    """An image whose entrypoint is the whole training."""
    image: str
    num_nodes: Optional[int] = None
    resources_per_node: Optional[dict] = None
    env: Optional[dict] = None


@dataclass
class BuiltinTrainer:
    """A runtime's built-in post-training (TorchTune upstream); ``config`` its parameters."""
    config: object


@dataclass
class HuggingFaceDatasetInitializer:
    storage_uri: str
    ignore_patterns: Optional[list] = None
    access_token: Optional[str] = None


@dataclass
class S3DatasetInitializer:
    storage_uri: str
    ignore_patterns: Optional[list] = None
    endpoint: Optional[str] = None
    access_key_id: Optional[str] = None
    secret_access_key: Optional[str] = None
    region: Optional[str] = None
    role_arn: Optional[str] = None


@dataclass
class HuggingFaceModelInitializer:
    storage_uri: str
    ignore_patterns: Optional[list] = field(
        default_factory=lambda: ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"])
    access_token: Optional[str] = None


@dataclass
class S3ModelInitializer:
    storage_uri: str
    ignore_patterns: Optional[list] = field(
        default_factory=lambda: ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"])
    endpoint: Optional[str] = None
    access_key_id: Optional[str] = None
    secret_access_key: Optional[str] = None
    region: Optional[str] = None
    role_arn: Optional[str] = None


@dataclass
class Initializer:
    """The dataset and model a TrainJob's initializer steps fetch before its trainer runs."""
    dataset: Optional[object] = None
    model: Optional[object] = None


# -- outputs ----------------------------------------------------------------------------------

@dataclass
class RuntimeTrainer:
    trainer_type: TrainerType
    framework: str
    image: str
    num_nodes: int = 1
    device: str = UNKNOWN
    device_count: str = UNKNOWN
    _command: tuple = field(default=(), repr=False, compare=False)

    @property
    def command(self):
        return self._command

    def set_command(self, command):
        self._command = tuple(command)


@dataclass
class Runtime:
    name: str
    trainer: RuntimeTrainer
    kind: RuntimeKind
    pretrained_model: Optional[str] = None


@dataclass
class Step:
    """One pod of a TrainJob: ``node-<i>`` for trainer nodes, the initializer's name for one."""
    name: str
    status: Optional[str]
    pod_name: str
    device: str = UNKNOWN
    device_count: str = UNKNOWN


@dataclass(frozen=True)
class TrainerStatus:
    """The training's last progress report (Trainer v2.3's ``status.trainerStatus``):
    ``metrics`` maps each reported name to its value, a text as reported (``"0.25"``)."""
    progress_percentage: Optional[int] = None
    estimated_remaining_seconds: Optional[int] = None
    metrics: dict = field(default_factory=dict)
    last_updated_time: Optional[datetime] = None


@dataclass
class TrainJob:
    name: str
    runtime: Runtime
    steps: list
    num_nodes: int
    creation_timestamp: Optional[datetime]
    status: str = UNKNOWN
    trainer_status: Optional[TrainerStatus] = None  # ours: None until the training reports


@dataclass
class Event:
    involved_object_kind: str
    involved_object_name: str
    message: str
    reason: str
    event_time: Optional[datetime]
