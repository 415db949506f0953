"""What ``TrainerClient.train()`` sends: a TrainJob (trainer.kubeflow.org/v1alpha1) as a JSON
dict, from a runtime object and the user's trainer and initializer, which are duck-typed (read
by field name, so ``kubeflow.trainer``'s classes and ours both work). Also how a runtime object
(ClusterTrainingRuntime or TrainingRuntime dict) reads as a ``Runtime``.

Pure: no I/O. Raises ValueError, naming the argument, for input that cannot become a TrainJob
(an unknown trainer type, a function whose source cannot be read, a bad ``num_nodes``), and
NotImplementedError for what this SDK does not do yet (BuiltinTrainer). The function's command
itself comes from the backend (``function_command``), as for ``TrainingClient``; on an MPI
runtime ``mpirun`` starts it on every rank (``launcher_for``).
"""

import random
import string
import uuid

from . import job_builder
from . import trainer_types as types

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "TrainJob"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
TORCH_TUNE = "torchtune"

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


def resources(resources_per_node):
    """``{"requests": r, "limits": r}`` with upstream's aliases (gpu, storage, mig-<profile>)."""
    if not isinstance(resources_per_node, dict):
        raise ValueError("trainer.resources_per_node must be a dict, got "
                         f"{type(resources_per_node).__name__}")
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
        raise ValueError(f"trainer.resources_per_node: one MIG profile at most, got {mig}")
    if mig and "nvidia.com/gpu" in out:
        raise ValueError("trainer.resources_per_node: gpu and a MIG profile cannot both be set")
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
