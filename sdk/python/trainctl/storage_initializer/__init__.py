"""Parameter objects for ``TrainingClient.train()`` (LLM fine-tuning on a cluster), with the
fields of upstream's ``kubeflow.storage_initializer`` classes. Plain dataclasses: building the
job needs neither transformers nor peft."""

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class HuggingFaceModelParams:
    model_uri: str
    transformer_type: Any  # a transformers Auto* class, or its name
    access_token: Optional[str] = None
    num_labels: Optional[int] = None


@dataclass
class HuggingFaceDatasetParams:
    repo_id: str
    access_token: Optional[str] = None
    split: Optional[str] = None


@dataclass
class S3DatasetParams:
    endpoint_url: str
    bucket_name: str
    file_key: str
    region_name: Optional[str] = None
    access_key: Optional[str] = None
    secret_key: Optional[str] = None


@dataclass
class HuggingFaceTrainerParams:
    training_parameters: Any = None  # transformers.TrainingArguments (needs to_dict())
    lora_config: Any = None  # peft.LoraConfig (needs to_dict())
    extra: dict = field(default_factory=dict)
