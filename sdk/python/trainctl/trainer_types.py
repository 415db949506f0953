"""The value types of ``TrainerClient`` (the ``kubeflow`` SDK 0.5.0 TrainerClient API), written
here: same class names, field names, defaults and enum values as ``kubeflow.trainer``'s, so a
notebook written for either reads both. Inputs are duck-typed: ``train()`` accepts these or
``kubeflow.trainer``'s own classes (it reads fields by name, never checks ``isinstance``
against this module). Outputs (``Runtime``, ``TrainJob``, ``Step``, ``Event``) are these.

The options of ``kubeflow.trainer.options`` (``Name``, ``Labels``, ``RuntimePatch``...) are
here too, under the same names and fields, and read the same way.

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


class Loss(enum.Enum):
    """The loss a TorchTune recipe trains with."""
    CEWithChunkedOutputLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss"


class DataType(enum.Enum):
    """The dtype of the model and optimizer parameters in a TorchTune recipe."""
    BF16 = "bf16"
    FP32 = "fp32"


class DataFormat(enum.Enum):
    """The file type of a TorchTune instruct dataset."""
    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"
    ARROW = "arrow"
    TEXT = "text"
    XML = "xml"


@dataclass
class TorchTuneInstructDataset:
    """An instruct dataset (prompt and response columns) for a TorchTune recipe."""
    source: Optional[DataFormat] = None
    split: Optional[str] = None
    train_on_input: Optional[bool] = None
    new_system_prompt: Optional[str] = None
    column_map: Optional[dict] = None


@dataclass
class LoraConfig:
    """LoRA, QLoRA (``quantize_base``) or DoRA (``use_dora``) settings of a TorchTune recipe."""
    apply_lora_to_mlp: Optional[bool] = None
    apply_lora_to_output: Optional[bool] = None
    lora_attn_modules: list = field(default_factory=lambda: ["q_proj", "v_proj", "output_proj"])
    lora_rank: Optional[int] = None
    lora_alpha: Optional[int] = None
    lora_dropout: Optional[float] = None
    quantize_base: Optional[bool] = None
    use_dora: Optional[bool] = None


@dataclass
class TorchTuneConfig:
    """What a BuiltinTrainer changes in a torchtune runtime's recipe config (each set field
    becomes a ``key=value`` override of ``tune run``)."""
    dtype: Optional[DataType] = None
    batch_size: Optional[int] = None
    epochs: Optional[int] = None
    loss: Optional[Loss] = None
    num_nodes: Optional[int] = None
    peft_config: Optional[LoraConfig] = None
    dataset_preprocess_config: Optional[TorchTuneInstructDataset] = None
    resources_per_node: Optional[dict] = None


@dataclass
class BuiltinTrainer:
    """A torchtune runtime's built-in post-training; ``config`` a ``TorchTuneConfig``."""
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


# -- train() options --------------------------------------------------------------------------
# The names and fields of ``kubeflow.trainer.options``; ``train(options=[...])`` takes these or
# kubeflow's own (read by class name and field, trainjob_spec.read_options). Validation happens
# there, when train() reads them, for both kinds alike.

SDK_PATCH_MANAGER = "trainer.kubeflow.org/kubeflow-sdk"


@dataclass
class Name:
    """The TrainJob's name (``metadata.name``) instead of a generated one."""
    name: str


@dataclass
class Labels:
    """The TrainJob's ``metadata.labels`` (a later Labels option replaces an earlier one)."""
    labels: dict


@dataclass
class Annotations:
    """The TrainJob's ``metadata.annotations`` (a later one replaces an earlier one)."""
    annotations: dict


@dataclass
class TrainerCommand:
    """``spec.trainer.command``; with a CustomTrainerContainer or no trainer only."""
    command: list


@dataclass
class TrainerArgs:
    """``spec.trainer.args``; with a CustomTrainerContainer or no trainer only."""
    args: list


@dataclass
class ActiveDeadlineSeconds:
    """``spec.activeDeadlineSeconds``: how long the TrainJob may be active (>= 1)."""
    seconds: int


@dataclass
class ContainerPatch:
    """A runtime container's additions: env (``name`` and ``value`` or ``valueFrom``), volume
    mounts (``name``, absolute ``mountPath``) and security context."""
    name: str
    env: Optional[list] = None
    volume_mounts: Optional[list] = None
    security_context: Optional[dict] = None


@dataclass
class PodSpecPatch:
    service_account_name: Optional[str] = None
    volumes: Optional[list] = None
    init_containers: Optional[list] = None  # of ContainerPatch
    containers: Optional[list] = None  # of ContainerPatch
    image_pull_secrets: Optional[list] = None
    security_context: Optional[dict] = None
    node_selector: Optional[dict] = None
    affinity: Optional[dict] = None
    tolerations: Optional[list] = None
    scheduling_gates: Optional[list] = None


@dataclass
class PodTemplatePatch:
    metadata: Optional[dict] = None  # labels, annotations
    spec: Optional[PodSpecPatch] = None


@dataclass
class JobSpecPatch:
    template: Optional[PodTemplatePatch] = None


@dataclass
class JobTemplatePatch:
    metadata: Optional[dict] = None
    spec: Optional[JobSpecPatch] = None


@dataclass
class ReplicatedJobPatch:
    """The patch of one replicated job of the runtime (``node``, ``launcher``, ...)."""
    name: str
    template: Optional[JobTemplatePatch] = None


@dataclass
class JobSetSpecPatch:
    replicated_jobs: Optional[list] = None  # of ReplicatedJobPatch


@dataclass
class JobSetTemplatePatch:
    metadata: Optional[dict] = None
    spec: Optional[JobSetSpecPatch] = None


@dataclass
class TrainingRuntimeSpecPatch:
    template: Optional[JobSetTemplatePatch] = None


@dataclass
class RuntimePatch:
    """One ``spec.runtimePatches`` entry, under the SDK's manager name."""
    training_runtime_spec: Optional[TrainingRuntimeSpecPatch] = None
    manager: str = field(default=SDK_PATCH_MANAGER, init=False, repr=False)


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
