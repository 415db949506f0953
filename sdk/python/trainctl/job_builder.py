"""Building a job from a Python function: the script, the container, the replica layout.

Pure (no I/O): the caller decides where the script goes. Shapes follow upstream's SDK
(kubeflow-training 1.9.4): PyTorchJob is one Master plus ``num_workers - 1`` Workers with the same
template and ``nprocPerNode = str(num_procs_per_worker)``; TFJob has optional Chief and PS
replicas; the entrypoint is ``torchrun`` for a PyTorchJob with more than one worker or
``num_procs_per_worker`` set, else ``python -u``. Deliberate fixes:

* the script travels in a *quoted* heredoc with a unique delimiter (upstream's unquoted one lets
  bash expand ``$VAR``, ``$5`` and backticks inside the Python source);
* package specs are shell-quoted (upstream's ``torch>=2.0`` redirected pip's output to a file);
* XGBoostJob can be made from a function too (Master + Workers, like PyTorchJob);
* ``parameters`` go to the function as one positional dict when it takes one parameter (as
  upstream), or as keyword arguments when its signature names them (as the newer SDK).
"""

import hashlib
import inspect
import shlex
import textwrap

from . import constants
from . import models

SCRIPT_NAME = "ephemeral_script.py"


def function_source(train_func, parameters=None):
    """The Python program that defines ``train_func`` and calls it with ``parameters``."""
    if not callable(train_func):
        raise ValueError(
            f"Training function must be callable, got function type: {type(train_func)}")
    try:
        code = textwrap.dedent(inspect.getsource(train_func))
    except (OSError, TypeError) as e:
        raise ValueError(
            f"train_func: cannot read the source of {getattr(train_func, '__name__', train_func)!r}"
            f" ({e}); define it in a file or a notebook cell, not at an interactive prompt") from e
    name = train_func.__name__
    if parameters is None:
        call = f"{name}()"
    elif _takes_keywords(train_func, parameters):
        call = f"{name}(**{parameters!r})"
    else:
        call = f"{name}({parameters!r})"
    return f"{code}\n{call}\n"


def _takes_keywords(func, parameters):
    """True when the function's parameters are the dict's keys (not one dict argument)."""
    if not isinstance(parameters, dict):
        return False
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) == 1 and len(positional) == 1 and positional[0].name not in parameters:
        return False
    names = {p.name for p in params}
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    return bool(parameters) and (has_var_kw or set(parameters) <= names)


def entrypoint_for(job_kind, num_workers, num_procs_per_worker):
    if job_kind == constants.PYTORCHJOB_KIND and (
            num_workers > 1 or num_procs_per_worker is not None):
        return constants.ENTRYPOINT_TORCH
    return constants.ENTRYPOINT_PYTHON


def pip_install_script(packages_to_install, pip_index_url):
    quoted = " ".join(shlex.quote(str(p)) for p in packages_to_install)
    return (
        'if ! [ -x "$(command -v pip)" ]; then\n'
        "    python -m ensurepip || python -m ensurepip --user || apt-get install python-pip\n"
        "fi\n"
        "PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet --no-warn-script-location "
        f"--index-url {shlex.quote(pip_index_url)} {quoted}\n")


def container_script(source, entrypoint, packages_to_install=None,
                     pip_index_url=constants.DEFAULT_PIP_INDEX_URL):
    """The ``bash -c`` argument a cluster container runs: write the source, run it."""
    delimiter = "TRAINCTL_EOF_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    script = ""
    if packages_to_install:
        script += pip_install_script(packages_to_install, pip_index_url)
    script += (
        'program_path=$(mktemp -d)\n'
        f"cat > \"$program_path/{SCRIPT_NAME}\" << '{delimiter}'\n"
        f"{source}"
        f"{'' if source.endswith(chr(10)) else chr(10)}{delimiter}\n"
        f'{entrypoint} "$program_path/{SCRIPT_NAME}"\n')
    return script


def env_list(env_vars):
    if not env_vars:
        return None
    if isinstance(env_vars, dict):
        return [models.V1EnvVar(name=k, value=v) for k, v in env_vars.items()]
    if isinstance(env_vars, list):
        out = []
        for v in env_vars:
            if isinstance(v, dict):
                out.append(models.V1EnvVar(**v))
            elif hasattr(v, "name"):
                out.append(v)
            else:
                raise ValueError(f"env_vars: {v!r} is neither a V1EnvVar nor a dict")
        return out
    raise ValueError(f"env_vars must be a dict or a list, got {type(env_vars).__name__}")


def resources_of(resources):
    if resources is None or not isinstance(resources, dict):
        return resources
    lowered = {str(k).lower(): v for k, v in resources.items()}
    if "gpu" in lowered:
        lowered["nvidia.com/gpu"] = lowered.pop("gpu")
    return models.V1ResourceRequirements(requests=dict(lowered), limits=dict(lowered))


def pod_template(container_name, image, command, args, resources=None, env_vars=None,
                 volumes=None, volume_mounts=None):
    if container_name is None or image is None:
        raise ValueError("Container name or base image cannot be none")
    container = models.V1Container(name=container_name, image=image, command=command, args=args,
                                   volume_mounts=volume_mounts, env=env_list(env_vars))
    container.resources = resources_of(resources)
    return models.V1PodTemplateSpec(
        metadata=models.V1ObjectMeta(annotations={constants.ISTIO_SIDECAR_INJECTION: "false"}),
        spec=models.V1PodSpec(containers=[container], volumes=volumes))


def job_from_template(job_kind, name, namespace, template, num_workers, labels=None,
                      annotations=None, num_procs_per_worker=None, num_chief_replicas=None,
                      num_ps_replicas=None):
    """The job object for a function or image job (PyTorchJob and TFJob, as upstream)."""
    meta = models.V1ObjectMeta(name=name, namespace=namespace, labels=labels,
                               annotations=annotations)
    run_policy = models.KubeflowOrgV1RunPolicy(clean_pod_policy=None)
    if job_kind == constants.TFJOB_KIND:
        if num_procs_per_worker is not None:
            raise ValueError(f"num_procs_per_worker can't be set for {constants.TFJOB_KIND}")
        specs = {}
        if num_chief_replicas is not None:
            specs[constants.REPLICA_TYPE_CHIEF] = models.KubeflowOrgV1ReplicaSpec(
                replicas=num_chief_replicas, template=template)
        if num_ps_replicas is not None:
            specs[constants.REPLICA_TYPE_PS] = models.KubeflowOrgV1ReplicaSpec(
                replicas=num_ps_replicas, template=template)
        specs[constants.REPLICA_TYPE_WORKER] = models.KubeflowOrgV1ReplicaSpec(
            replicas=num_workers, template=template)
        return models.KubeflowOrgV1TFJob(
            api_version=constants.API_VERSION, kind=constants.TFJOB_KIND, metadata=meta,
            spec=models.KubeflowOrgV1TFJobSpec(run_policy=run_policy, tf_replica_specs=specs))
    if job_kind == constants.PYTORCHJOB_KIND:
        if num_chief_replicas is not None or num_ps_replicas is not None:
            raise ValueError("num_chief_replicas and num_ps_replicas can't be set for "
                             f"{constants.PYTORCHJOB_KIND}")
        specs = {constants.REPLICA_TYPE_MASTER: models.KubeflowOrgV1ReplicaSpec(
            replicas=1, template=template)}
        if num_workers > 1:
            specs[constants.REPLICA_TYPE_WORKER] = models.KubeflowOrgV1ReplicaSpec(
                replicas=num_workers - 1, template=template)
        spec = models.KubeflowOrgV1PyTorchJobSpec(run_policy=run_policy,
                                                  pytorch_replica_specs=specs)
        if num_procs_per_worker is not None:
            spec.nproc_per_node = str(num_procs_per_worker)
        return models.KubeflowOrgV1PyTorchJob(
            api_version=constants.API_VERSION, kind=constants.PYTORCHJOB_KIND, metadata=meta,
            spec=spec)
    if job_kind == constants.XGBOOSTJOB_KIND:
        # Ours (upstream has no XGBoost template): Master + num_workers - 1 Workers, like PyTorch.
        if num_procs_per_worker is not None or num_chief_replicas is not None or \
                num_ps_replicas is not None:
            raise ValueError("num_procs_per_worker, num_chief_replicas and num_ps_replicas can't "
                             f"be set for {constants.XGBOOSTJOB_KIND}")
        specs = {constants.REPLICA_TYPE_MASTER: models.KubeflowOrgV1ReplicaSpec(
            replicas=1, template=template)}
        if num_workers > 1:
            specs[constants.REPLICA_TYPE_WORKER] = models.KubeflowOrgV1ReplicaSpec(
                replicas=num_workers - 1, template=template)
        return models.KubeflowOrgV1XGBoostJob(
            api_version=constants.API_VERSION, kind=constants.XGBOOSTJOB_KIND, metadata=meta,
            spec=models.KubeflowOrgV1XGBoostJobSpec(run_policy=run_policy,
                                                    xgb_replica_specs=specs))
    raise ValueError(f"Job kind {job_kind} can't be created using function or image. "
                     "Number of Workers must be set.")
