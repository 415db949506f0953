"""Parameter objects for ``TrainingClient.train()`` (LLM fine-tuning), with the fields of
upstream's ``kubeflow.storage_initializer`` classes (kubeflow-training 1.9.4), and the storage
initializer that fetches the model and the dataset into the job's workspace before training
(``python -m trainctl.storage_initializer``, see ``storage.py``).

The classes are plain dataclasses: building a job needs neither transformers nor peft. Upstream's
classes work too (``train()`` duck-types them). Checks as upstream's, plus the transformer type
(``ValueError`` naming the allowed ones)."""

from dataclasses import dataclass, field
from typing import Any, Optional

# The transformers Auto classes the trainer can load (upstream's list).
TRANSFORMER_TYPES = (
    "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification",
    "AutoModelForQuestionAnswering",
    "AutoModelForCausalLM",
    "AutoModelForMaskedLM",
    "AutoModelForImageClassification",
)


def transformer_type_name(transformer_type):
    """The class name of ``transformer_type`` (a transformers Auto class or its name);
    ValueError for anything else."""
    name = getattr(transformer_type, "__name__", transformer_type)
    if not isinstance(name, str) or name not in TRANSFORMER_TYPES:
        raise ValueError(
            f"transformer_type: {transformer_type!r} is not one of the supported types: "
            + ", ".join(TRANSFORMER_TYPES))
    return name


@dataclass
class HuggingFaceModelParams:
    model_uri: str  # hf://org/name, file:///abs/folder or /abs/folder
    transformer_type: Any  # a transformers Auto* class, or its name
    access_token: Optional[str] = None
    num_labels: Optional[int] = None

    def __post_init__(self):
        if not self.model_uri:
            raise ValueError("model_uri cannot be empty.")
        transformer_type_name(self.transformer_type)


@dataclass
class HuggingFaceDatasetParams:
    repo_id: str  # a Hub dataset id, a local folder, or a json/jsonl/csv/parquet file
    access_token: Optional[str] = None
    split: Optional[str] = None

    def __post_init__(self):
        if not self.repo_id:
            raise ValueError("repo_id is None")


@dataclass
class S3DatasetParams:
    endpoint_url: str
    bucket_name: str
    file_key: str
    region_name: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None

    def __post_init__(self):
        for name in ("bucket_name", "endpoint_url", "file_key"):
            if getattr(self, name) is None:
                raise ValueError(f"{name} cannot be None")


@dataclass
class HuggingFaceTrainerParams:
    training_parameters: Any = None  # transformers.TrainingArguments (needs to_dict())
    lora_config: Any = None  # peft.LoraConfig (needs to_dict()); None: full fine-tuning
    extra: dict = field(default_factory=dict)
