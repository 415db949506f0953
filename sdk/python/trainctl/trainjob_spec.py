"""What ``TrainerClient.train()`` sends: a TrainJob (trainer.kubeflow.org/v1alpha1) as a JSON
dict, from a runtime object and the user's trainer, initializer and options, which are
duck-typed (read by class and field name, so ``kubeflow.trainer``'s classes and ours both work).
Also how a runtime object (ClusterTrainingRuntime or TrainingRuntime dict) reads as a ``Runtime``.

Pure: no I/O. Raises ValueError, naming the argument, for input that cannot become a TrainJob
(an unknown trainer type or option, a function whose source cannot be read, a bad ``num_nodes``,
a TorchTune setting of the wrong type). The function's command itself comes from the backend
(``function_command``), as for ``TrainingClient``; on an MPI runtime ``mpirun`` starts it on
every rank (``launcher_for``). A BuiltinTrainer becomes upstream's ``tune run`` trainer: the
runtime's command and the TorchTune overrides as args, which upstream's controller completes
with the runtime's recipe and config. Which fields a backend cannot honour is the backend's to
say (``JobBackend.trainjob_refusals``): ``read_options`` lists the fields each option sets.
"""

import copy
import dataclasses
import enum
import posixpath
import random
import re
import string
import urllib.parse
import uuid

from . import job_builder
from . import trainer_types as types

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainJob"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
TORCH_TUNE = "torchtune"
# A torchtune runtime's trainer command: upstream's controller recognises it and adds the
# recipe, the config and the rendezvous endpoint from the runtime.
TORCH_TUNE_COMMAND = ("tune", "run")
TORCH_TUNE_INSTRUCT_DATASET = "torchtune.datasets.instruct_dataset"
DATASET_PATH = "/workspace/dataset"  # where the dataset initializer puts the dataset

ENTRYPOINT_TORCH = "torchrun"
ENTRYPOINT_PYTHON = "python -u"
# mpirun finds its hosts through OMPI_MCA_orte_default_hostfile, which the MPI policy sets on a
# cluster (operator or upstream's controller) and on this machine alike: no --hostfile path.
MPI_COMMAND = ("mpirun",)

_RESOURCE_ALIASES = {"gpu": "nvidia.com/gpu", "storage": "ephemeral-storage"}
_STANDARD_RESOURCES = {"cpu", "memory", "gpu", "storage", "ephemeral-storage"}


def new_name():
    """A TrainJob name as upstream makes one: a letter and 11 hex digits."""
    return random.choice(string.ascii_lowercase) + uuid.uuid4().hex[:11]


# -- runtimes ---------------------------------------------------------------------------------

def policy_of(runtime_obj):
    """The runtime's ML policy name (torch, mpi, jax, xgboost, ...), or "plain"."""
    ml = ((runtime_obj.get("spec") or {}).get("mlPolicy")) or {}
    for key in ml:
        if key != "numNodes" and ml[key] is not None:
            return key
    return "plain"


def trainer_container(runtime_obj):
    """The ``node`` container of the replicated job labelled as the trainer step, or None."""
    template = ((runtime_obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    for rjob in template.get("replicatedJobs") or []:
        labels = (((rjob.get("template") or {}).get("metadata") or {}).get("labels")) or {}
        if ANCESTOR_LABEL not in labels:
            continue
        pod = ((((rjob.get("template") or {}).get("spec") or {}).get("template") or {})
               .get("spec") or {})
        for c in pod.get("containers") or []:
            if c.get("name") == "node":
                return c
    return None


def devices(resources):
    """(device, count) from a container's resource limits, as upstream reads them, or None."""
    limits = (resources or {}).get("limits") or {}
    if not limits:
        return None
    for key, device in (("nvidia.com/gpu", "gpu"), ("google.com/tpu", "tpu")):
        if key in limits:
            return device, str(limits[key])
    mig = [k for k in limits if k.startswith("nvidia.com/mig-")]
    if mig:
        return mig[0].split("/", 1)[1], str(limits[mig[0]])
    if "huawei.com/Ascend910" in limits:
        return "npu", str(limits["huawei.com/Ascend910"])
    if "cpu" in limits:
        return "cpu", str(limits["cpu"])
    return None


def runtime_of(obj):
    """A ClusterTrainingRuntime/TrainingRuntime dict as a ``Runtime``; ValueError when it has
    no name, no framework label or no trainer container."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    framework = (meta.get("labels") or {}).get(FRAMEWORK_LABEL)
    container = trainer_container(obj)
    if not name or not framework or not container:
        raise ValueError(f"runtime {name!r}: needs a name, the {FRAMEWORK_LABEL} label and a "
                         f"trainer step with a node container")
    ml = (obj.get("spec") or {}).get("mlPolicy") or {}
    trainer = types.RuntimeTrainer(
        trainer_type=(types.TrainerType.BUILTIN_TRAINER if framework == TORCH_TUNE
                      else types.TrainerType.CUSTOM_TRAINER),
        framework=framework, image=container.get("image") or "")
    found = devices(container.get("resources"))
    if found:
        trainer.device, trainer.device_count = found
    policy = policy_of(obj)
    if policy == "mpi" and (ml.get("mpi") or {}).get("numProcPerNode"):
        trainer.device_count = str(ml["mpi"]["numProcPerNode"])
    if ml.get("numNodes"):
        trainer.num_nodes = int(ml["numNodes"])
        if trainer.device_count.isdigit():
            trainer.device_count = str(int(trainer.device_count) * trainer.num_nodes)
    if framework == TORCH_TUNE:
        trainer.set_command(TORCH_TUNE_COMMAND)
    else:
        trainer.set_command({"torch": (ENTRYPOINT_TORCH,), "mpi": MPI_COMMAND}.get(
            policy, ("python",)))
    kind = obj.get("kind") or types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value
    return types.Runtime(name=name, trainer=trainer, kind=types.RuntimeKind(kind))


def is_mpi(runtime):
    return bool(runtime.trainer.command) and runtime.trainer.command[0] == "mpirun"


# -- trainers ---------------------------------------------------------------------------------

def trainer_kind(trainer):
    """"custom", "container" or "builtin" for a trainer of ours or kubeflow's (by class name,
    then by fields); ValueError for anything else."""
    name = type(trainer).__name__
    if name in ("CustomTrainer", "CustomTrainerContainer", "BuiltinTrainer"):
        return {"CustomTrainer": "custom", "CustomTrainerContainer": "container",
                "BuiltinTrainer": "builtin"}[name]
    if hasattr(trainer, "func"):
        return "custom"
    if hasattr(trainer, "config"):
        return "builtin"
    if hasattr(trainer, "image"):
        return "container"
    raise ValueError(f"trainer: {name} is not supported; pass a CustomTrainer, "
                     "CustomTrainerContainer or BuiltinTrainer")


def function_source(func, func_args):
    """The program that defines ``func`` and calls it with ``func_args`` (as keywords);
    ValueError when the function cannot travel (not callable, a lambda, no readable source)."""
    if not callable(func):
        raise ValueError(f"trainer.func must be callable, got {type(func).__name__}")
    label = getattr(func, "__name__", repr(func))
    if label == "<lambda>":
        raise ValueError("trainer.func: a lambda cannot be serialised (its source is not a "
                         "definition); define the function with def")
    if func_args is not None and not isinstance(func_args, dict):
        raise ValueError(f"trainer.func_args must be a dict, got {type(func_args).__name__}")
    try:
        return job_builder.function_source(func, func_args)
    except ValueError as e:
        raise ValueError("trainer.func cannot be serialised: "
                         f"{str(e).split(': ', 1)[-1]}") from e


def entrypoint_for(runtime):
    """How a function runs on the runtime's trainer nodes: torchrun on a torch runtime, else
    python (on an MPI runtime, on every rank, under ``launcher_for``)."""
    if is_mpi(runtime):
        return ENTRYPOINT_PYTHON
    if runtime.trainer.command and runtime.trainer.command[0] == ENTRYPOINT_TORCH:
        return ENTRYPOINT_TORCH
    return ENTRYPOINT_PYTHON


def launcher_for(runtime):
    """What starts the function's command: ``mpirun`` on an MPI runtime (the launcher node's
    mpirun runs it on every slot of every node; each rank writes the function's file itself on
    a cluster), nothing on the others."""
    return list(MPI_COMMAND) if is_mpi(runtime) else []


def check_num_nodes(trainer):
    n = getattr(trainer, "num_nodes", None)
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise ValueError(f"trainer.num_nodes must be a positive int, got {n!r}")


def resources(resources_per_node, what="trainer.resources_per_node"):
    """``{"requests": r, "limits": r}`` with upstream's aliases (gpu, storage, mig-<profile>)."""
    if not isinstance(resources_per_node, dict):
        raise ValueError(f"{what} must be a dict, got {type(resources_per_node).__name__}")
    out = {}
    for key, value in resources_per_node.items():
        k = str(key)
        if k.lower() in _STANDARD_RESOURCES or k.lower().startswith("mig-"):
            k = k.lower()
        k = _RESOURCE_ALIASES.get(k, k)
        if k.startswith("mig-"):
            k = "nvidia.com/" + k
        out[k] = value if isinstance(value, str) else str(value)
    mig = [k for k in out if k.startswith("nvidia.com/mig-")]
    if len(mig) > 1:
        raise ValueError(f"{what}: one MIG profile at most, got {mig}")
    if mig and "nvidia.com/gpu" in out:
        raise ValueError(f"{what}: gpu and a MIG profile cannot both be set")
    return {"requests": dict(out), "limits": dict(out)}


def trainer_section(trainer, command=None, extra_env=None):
    """The TrainJob's ``spec.trainer`` for a custom trainer (None when nothing is set).
    ``command``: the function's command (from the backend); ``extra_env``: env it needs."""
    section = {}
    check_num_nodes(trainer)
    if getattr(trainer, "num_nodes", None):
        section["numNodes"] = trainer.num_nodes
    if getattr(trainer, "resources_per_node", None):
        section["resourcesPerNode"] = resources(trainer.resources_per_node)
    if command:
        section["command"] = list(command)
    if getattr(trainer, "image", None):
        section["image"] = trainer.image
    env = dict(getattr(trainer, "env", None) or {})
    if not isinstance(env, dict):
        raise ValueError("trainer.env must be a dict")
    for k, v in (extra_env or {}).items():
        env.setdefault(k, v)
    if env:
        section["env"] = [{"name": str(k), "value": str(v)} for k, v in env.items()]
    return section or None


# -- initializers -----------------------------------------------------------------------------

def _initializer_env(config, skip):
    env = []
    fields = getattr(config, "__dataclass_fields__", None) or vars(config)
    for name in fields:
        if name in skip or name.startswith("_"):
            continue
        value = getattr(config, name, None)
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        env.append({"name": name.upper(), "value": str(value)})
    return env


def initializer_section(initializer):
    """The TrainJob's ``spec.initializer`` (None when neither dataset nor model is set)."""
    if initializer is None:
        return None
    out = {}
    for part in ("dataset", "model"):
        config = getattr(initializer, part, None)
        if config is None:
            continue
        uri = getattr(config, "storage_uri", None)
        if not uri:
            raise ValueError(f"initializer.{part}: storage_uri must be set")
        item = {"storageUri": uri}
        if type(config).__name__ == "DataCacheInitializer":
            env = [{"name": "CLUSTER_SIZE", "value": str(config.num_data_nodes + 1)},
                   {"name": "METADATA_LOC", "value": str(config.metadata_loc)}]
            env += _initializer_env(config, {"storage_uri", "metadata_loc", "num_data_nodes"})
        else:
            env = _initializer_env(config, {"storage_uri"})
        if env:
            item["env"] = env
        out[part] = item
    return out or None


def trainjob(name, runtime, trainer=None, initializer=None):
    """The TrainJob dict: ``runtime`` a ``Runtime``; ``trainer`` a spec.trainer dict or None;
    ``initializer`` a spec.initializer dict or None."""
    spec = {"runtimeRef": {"name": runtime.name, "kind": runtime.kind.value,
                           "apiGroup": GROUP}}
    if trainer:
        spec["trainer"] = trainer
    if initializer:
        spec["initializer"] = initializer
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


# -- BuiltinTrainer (TorchTune) ---------------------------------------------------------------

def _check_enum(value, enum_class, what):
    """The value of an enum member of ``enum_class`` (ours or kubeflow's, by class name and
    value); ValueError otherwise."""
    allowed = [m.value for m in enum_class]
    if type(value).__name__ != enum_class.__name__ or getattr(value, "value", None) not in allowed:
        raise ValueError(f"{what} must be a {enum_class.__name__} ({', '.join(allowed)}), "
                         f"got {value!r}")
    return value.value


def _dataset_arg(storage_uri):
    """Where the recipe reads a Hugging Face dataset the dataset initializer fetched: a file of
    the repository (``data_files``) or a folder (``data_dir``) under /workspace/dataset."""
    uri = storage_uri if storage_uri.startswith("hf://") else "hf://" + storage_uri
    parts = urllib.parse.urlparse(uri).path.strip("/").split("/")
    relative = "/".join(parts[1:]) if len(parts) > 1 else "."
    key = "data_files" if relative != "." and "." in relative else "data_dir"
    return f"dataset.{key}={posixpath.join(DATASET_PATH, relative)}"


_LORA_ARGS = (("apply_lora_to_mlp", "model.apply_lora_to_mlp"),
              ("apply_lora_to_output", "model.apply_lora_to_output"),
              ("lora_rank", "model.lora_rank"), ("lora_alpha", "model.lora_alpha"),
              ("lora_dropout", "model.lora_dropout"), ("quantize_base", "model.quantize_base"),
              ("use_dora", "model.use_dora"))


def _lora_args(peft):
    if type(peft).__name__ != "LoraConfig":
        raise ValueError("TorchTuneConfig.peft_config must be a LoraConfig, got "
                         f"{type(peft).__name__}")
    args = [f"{arg}={getattr(peft, name)}" for name, arg in _LORA_ARGS
            if getattr(peft, name, None) is not None]
    modules = getattr(peft, "lora_attn_modules", None)
    if modules:
        args.append(f"model.lora_attn_modules=[{','.join(modules)}]")
    return args


def _instruct_dataset_args(dataset):
    if type(dataset).__name__ != "TorchTuneInstructDataset":
        raise ValueError("TorchTuneConfig.dataset_preprocess_config must be a "
                         f"TorchTuneInstructDataset, got {type(dataset).__name__}")
    args = [f"dataset={TORCH_TUNE_INSTRUCT_DATASET}"]
    if dataset.source:
        source = _check_enum(dataset.source, types.DataFormat,
                             "TorchTuneInstructDataset.source")
        args.append(f"dataset.source={source}")
    if dataset.split:
        args.append(f"dataset.split={dataset.split}")
    if dataset.train_on_input is not None:
        args.append(f"dataset.train_on_input={dataset.train_on_input}")
    if dataset.new_system_prompt:
        args.append(f"dataset.new_system_prompt={dataset.new_system_prompt}")
    if dataset.column_map:
        args.append(f"dataset.column_map={dataset.column_map}")
    return args


def torchtune_args(config, initializer=None):
    """The ``key=value`` recipe overrides a TorchTuneConfig gives ``tune run``, in upstream's
    order: dtype, batch_size, epochs, loss, the dataset's place (a Hugging Face dataset
    initializer's), LoRA, the instruct dataset."""
    args = []
    if config.dtype:
        args.append("dtype=" + _check_enum(config.dtype, types.DataType, "TorchTuneConfig.dtype"))
    if config.batch_size:
        args.append(f"batch_size={config.batch_size}")
    if config.epochs:
        args.append(f"epochs={config.epochs}")
    if config.loss:
        args.append(f"loss={getattr(config.loss, 'value', config.loss)}")
    dataset = getattr(initializer, "dataset", None) if initializer is not None else None
    if type(dataset).__name__ == "HuggingFaceDatasetInitializer":
        args.append(_dataset_arg(dataset.storage_uri))
    if config.peft_config:
        args += _lora_args(config.peft_config)
    if config.dataset_preprocess_config:
        args += _instruct_dataset_args(config.dataset_preprocess_config)
    return args


def builtin_trainer_section(trainer, runtime, initializer=None):
    """The TrainJob's ``spec.trainer`` for a BuiltinTrainer on a torchtune ``runtime``: its
    nodes and resources, the runtime's command (``tune run``) and the overrides as args."""
    config = getattr(trainer, "config", None)
    if type(config).__name__ != "TorchTuneConfig":
        raise ValueError("BuiltinTrainer.config must be a TorchTuneConfig, got "
                         f"{type(config).__name__}")
    n = config.num_nodes
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise ValueError(f"TorchTuneConfig.num_nodes must be a positive int, got {n!r}")
    section = {}
    if n:
        section["numNodes"] = n
    if config.resources_per_node:
        section["resourcesPerNode"] = resources(config.resources_per_node,
                                                "TorchTuneConfig.resources_per_node")
    section["command"] = list(runtime.trainer.command)
    section["args"] = torchtune_args(config, initializer)
    return section


# -- options ----------------------------------------------------------------------------------

# The fields an option sets, as a backend's trainjob_refusals() names them. A RuntimePatch's
# are its paths under spec.runtimePatches[] ("[]": any entry).
RUNTIME_PATCH_TEMPLATE = "spec.runtimePatches[].trainingRuntimeSpec.template"
JOBSET_METADATA = RUNTIME_PATCH_TEMPLATE + ".metadata"
REPLICATED_JOB = RUNTIME_PATCH_TEMPLATE + ".spec.replicatedJobs[]"
JOB_METADATA = REPLICATED_JOB + ".template.metadata"
POD_METADATA = REPLICATED_JOB + ".template.spec.template.metadata"
POD_SPEC = REPLICATED_JOB + ".template.spec.template.spec"

OPTION_KINDS = ("Name", "Labels", "Annotations", "TrainerCommand", "TrainerArgs",
                "ActiveDeadlineSeconds", "RuntimePatch")

_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_ENV_SOURCES = ("configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef")


class TrainJobOptions:
    """What ``train(options=...)`` asks for: the TrainJob's name, labels, annotations, trainer
    command and args, runtime patches (API dicts) and deadline (None: not set), and ``fields``,
    (option, field path) for each field an option sets."""

    def __init__(self):
        self.name = self.labels = self.annotations = None
        self.command = self.args = self.deadline = None
        self.patches = []
        self.fields = []


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def _is_record(value):
    """A patch object (a dataclass or any object with fields), not a plain value."""
    if isinstance(value, (type, enum.Enum, dict, list, tuple, str, int, float)):
        return False
    return dataclasses.is_dataclass(value) or hasattr(value, "__dict__")


def api_dict(value):
    """A patch object as the API spells it: each set field under its camelCase name, unset
    (None) fields and empty nested objects or lists left out; dicts, strings and numbers as
    given (a volume or toleration is the API's own dict)."""
    if isinstance(value, (list, tuple)):
        return [api_dict(v) for v in value]
    if not _is_record(value):
        return value
    if dataclasses.is_dataclass(value):
        names = [f.name for f in dataclasses.fields(value)]
    else:
        names = [k for k in vars(value) if not k.startswith("_")]
    out = {}
    for name in names:
        v = getattr(value, name)
        if v is None:
            continue
        converted = api_dict(v)
        if (isinstance(v, (list, tuple)) or _is_record(v)) and not converted:
            continue
        out[_camel(name)] = converted
    return out


def _string_map(value, what):
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict of strings, got {type(value).__name__}")
    bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise ValueError(f"{what}: keys and values must be strings ({bad[0]!r} is not)")
    return dict(value)


def _string_list(value, what):
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings, got {value!r}")
    return list(value)


def _obj(value):
    return value if isinstance(value, dict) else {}


def _check_container(c, where):
    if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"].strip():
        raise ValueError(f"{where}: a ContainerPatch needs a non-empty name")
    where = f"{where} ({c['name']})"
    env = c.get("env")
    if env is not None:
        if not isinstance(env, list):
            raise ValueError(f"{where}.env must be a list of dicts")
        for e in env:
            if not isinstance(e, dict) or not e.get("name"):
                raise ValueError(f"{where}.env: each entry needs a non-empty name, got {e!r}")
            if "value" not in e and "valueFrom" not in e:
                raise ValueError(f"{where}.env {e['name']}: needs value or valueFrom")
            if "valueFrom" in e and not (isinstance(e["valueFrom"], dict) and
                                         any(k in e["valueFrom"] for k in _ENV_SOURCES)):
                raise ValueError(f"{where}.env {e['name']}: valueFrom must hold one of "
                                 f"{', '.join(_ENV_SOURCES)}")
    mounts = c.get("volumeMounts")
    if mounts is not None:
        if not isinstance(mounts, list):
            raise ValueError(f"{where}.volume_mounts must be a list of dicts")
        for m in mounts:
            if not isinstance(m, dict) or not m.get("name"):
                raise ValueError(f"{where}.volume_mounts: each entry needs a non-empty name, "
                                 f"got {m!r}")
            path = m.get("mountPath")
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(f"{where}.volume_mounts {m['name']}: mountPath must be an "
                                 f"absolute path, got {path!r}")


def _patch_fields(patch, label):
    """Checks a runtime patch dict and lists the field paths it sets."""
    fields = []
    template = _obj(_obj(patch.get("trainingRuntimeSpec")).get("template"))
    if template.get("metadata"):
        fields.append(JOBSET_METADATA)
    for j, rjob in enumerate(_obj(template.get("spec")).get("replicatedJobs") or []):
        where = f"{label}: replicated_jobs[{j}]"
        if not isinstance(rjob, dict) or not isinstance(rjob.get("name"), str) or \
                not rjob["name"]:
            raise ValueError(f"{where} needs the name of a replicated job of the runtime")
        job_template = _obj(rjob.get("template"))
        if job_template.get("metadata"):
            fields.append(JOB_METADATA)
        pod = _obj(_obj(job_template.get("spec")).get("template"))
        if pod.get("metadata"):
            fields.append(POD_METADATA)
        for key, value in _obj(pod.get("spec")).items():
            if key not in ("containers", "initContainers"):
                fields.append(f"{POD_SPEC}.{key}")
                continue
            for c, container in enumerate(value or []):
                _check_container(container, f"{where}.{key}[{c}]")
                fields += [f"{POD_SPEC}.{key}[].{k}" for k in container if k != "name"]
    return list(dict.fromkeys(fields))


def _read_option(kind, option, label, trainer_kind, out):
    if kind == "Name":
        name = getattr(option, "name", None)
        if not isinstance(name, str) or len(name) > 63 or not _RFC1035.match(name):
            raise ValueError(f"{label}: the TrainJob name must be an RFC 1035 label (lower-case "
                             f"letters, digits and '-', a letter first, at most 63), got "
                             f"{name!r}")
        out.name = name
        return ["metadata.name"]
    if kind in ("Labels", "Annotations"):
        attr = kind.lower()
        setattr(out, attr, _string_map(getattr(option, attr, None), f"{label}.{attr}"))
        return [f"metadata.{attr}"]
    if kind in ("TrainerCommand", "TrainerArgs"):
        if trainer_kind not in (None, "container"):
            raise ValueError(f"{label}: {kind} goes with a CustomTrainerContainer (or no "
                             "trainer): a CustomTrainer's command runs its function, a "
                             "BuiltinTrainer's is the runtime's")
        attr = "command" if kind == "TrainerCommand" else "args"
        setattr(out, attr, _string_list(getattr(option, attr, None), f"{label}.{attr}"))
        return [f"spec.trainer.{attr}"]
    if kind == "ActiveDeadlineSeconds":
        seconds = getattr(option, "seconds", None)
        if type(seconds) is not int or seconds < 1:
            raise ValueError(f"{label}: seconds must be an int >= 1, got {seconds!r}")
        out.deadline = seconds
        return ["spec.activeDeadlineSeconds"]
    # RuntimePatch
    patch = api_dict(option)
    if not isinstance(patch, dict):
        raise ValueError(f"{label}: not a RuntimePatch object")
    patch.setdefault("manager", getattr(option, "manager", None) or types.SDK_PATCH_MANAGER)
    if any(p["manager"] == patch["manager"] for p in out.patches):
        raise ValueError(f"{label}: a second RuntimePatch of manager {patch['manager']}; each "
                         "manager may appear once in spec.runtimePatches: put both in one")
    fields = _patch_fields(patch, label)
    out.patches.append(patch)
    return ["spec.runtimePatches"] + fields


def read_options(options, trainer_kind):
    """``train(options=...)`` read and checked: a ``TrainJobOptions``. ``trainer_kind`` is
    ``trainer_kind(trainer)`` or None. ValueError for what is not one of upstream's options (by
    class name: ``OPTION_KINDS``) or does not hold what that option holds."""
    out = TrainJobOptions()
    if options is None:
        return out
    if not isinstance(options, (list, tuple)):
        raise ValueError(f"options must be a list, got {type(options).__name__}")
    for i, option in enumerate(options):
        kind = type(option).__name__
        label = f"options[{i}] {kind}"
        if kind not in OPTION_KINDS:
            raise ValueError(f"options[{i}]: {kind} is not a TrainJob option trainctl knows; "
                             f"the options are {', '.join(OPTION_KINDS)} (kubeflow.trainer."
                             "options' or trainctl.trainer_types')")
        for field_path in _read_option(kind, option, label, trainer_kind, out):
            out.fields.append((label, field_path))
    return out


def apply_options(body, options):
    """Sets what ``options`` (a ``TrainJobOptions``) asks on the TrainJob dict ``body`` (its
    name is the caller's to pick) and returns it."""
    meta, spec = body.setdefault("metadata", {}), body.setdefault("spec", {})
    if options.labels is not None:
        meta["labels"] = dict(options.labels)
    if options.annotations is not None:
        meta["annotations"] = dict(options.annotations)
    for attr in ("command", "args"):
        if getattr(options, attr) is not None:
            spec.setdefault("trainer", {})[attr] = list(getattr(options, attr))
    if options.patches:
        spec["runtimePatches"] = copy.deepcopy(options.patches)
    if options.deadline is not None:
        spec["activeDeadlineSeconds"] = options.deadline
    return body
