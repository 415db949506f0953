"""How a TrainJob reads for ``TrainerClient``: its steps (one per pod, from JobSet's labels), its
status (Created, Running, Complete, Failed) and its events, from what a backend returns (the
TrainJob dict, its pods as V1Pod models, event dicts). The same rules on both substrates.

Rules, as upstream's SDK (kubeflow 0.5.0) applies them:

* a pod's step: ``node-<job index>`` for the ``node`` and ``launcher`` replicated jobs (on an MPI
  runtime the launcher is ``node-0`` and the node job's pods count from ``node-1``), the
  replicated job's name for an initializer; the newest pod of a step wins (restarts);
* status: ``Complete`` or ``Failed`` from a True condition of that type (the local runner's
  ``Succeeded`` reads as ``Complete``); else ``Running`` when every trainer node's pod is
  Running or Succeeded; else ``Created``. Upstream gives ``Running`` only to a TrainJob with no
  condition at all; here other conditions (``Suspended`` False after a resume, the local
  runner's ``Created``/``Running``) do not hide it.
* events: those of the TrainJob, its JobSet, Jobs and pods, by time;
* trainer status (ours; Trainer v2.3's runtime status): ``status.trainerStatus`` as a
  ``TrainerStatus``, None when the training has not reported. Read as it is, never refused:
  a field of the wrong type is left None, a metric without a string name is left out.

Pure: no I/O.
"""

import datetime

from . import trainer_types as types
from . import trainjob_spec

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
INITIALIZERS = ("dataset-initializer", "model-initializer")
NODE_JOBS = ("launcher", "node")
_EVENT_KINDS = {"TrainJob", "JobSet", "Job", "Pod"}


def as_datetime(value):
    if value is None or isinstance(value, datetime.datetime):
        return value
    text = str(value)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return None


def _labels(pod):
    return (pod.metadata.labels if pod.metadata else None) or {}


def _container(pod, name):
    containers = (pod.spec.containers if pod.spec else None) or []
    for c in containers:
        if c.name == name:
            return c
    return containers[0] if containers else None


def _limits(container):
    res = getattr(container, "resources", None) if container is not None else None
    limits = getattr(res, "limits", None) if res is not None else None
    return {"limits": {k: str(v) for k, v in (limits or {}).items()}}


def step_of(pod, runtime):
    """The pod's ``Step``, or None when it carries no replicated-job label."""
    labels = _labels(pod)
    rjob = labels.get(RJOB_LABEL)
    if not rjob:
        return None
    phase = pod.status.phase if pod.status else None
    if rjob in NODE_JOBS:
        index = int(labels.get(INDEX_LABEL, "0") or 0)
        if rjob == "node" and trainjob_spec.is_mpi(runtime):
            index += 1
        step = types.Step(name=f"node-{index}", status=phase, pod_name=pod.metadata.name)
        container = _container(pod, "node")
    else:
        step = types.Step(name=rjob, status=phase, pod_name=pod.metadata.name)
        container = _container(pod, rjob)
    found = trainjob_spec.devices(_limits(container))
    if found:
        step.device, step.device_count = found
    for env in (getattr(container, "env", None) or []) if container is not None else []:
        if env.name == "PET_NPROC_PER_NODE" and env.value and str(env.value).isdigit():
            step.device_count = str(env.value)
    return step


def _order(step):
    if step.name.startswith("node-") and step.name[5:].isdigit():
        return (1, int(step.name[5:]), "")
    return (0, 0, step.name)


def steps_of(pods, runtime):
    """One step per replicated job and index, the newest pod of each, initializers first."""
    def created(pod):
        t = as_datetime(pod.metadata.creation_timestamp if pod.metadata else None)
        return t or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    seen, steps = set(), []
    for pod in sorted(pods, key=created, reverse=True):
        step = step_of(pod, runtime)
        if step is None or step.name in seen:
            continue
        seen.add(step.name)
        steps.append(step)
    return sorted(steps, key=_order)


def status_of(job, steps, num_nodes):
    """Created, Running, Complete or Failed (rules in the module docstring)."""
    status = None
    for c in ((job.get("status") or {}).get("conditions")) or []:
        if c.get("status") != "True":
            continue
        if c.get("type") in (types.TRAINJOB_COMPLETE, "Succeeded"):
            status = types.TRAINJOB_COMPLETE
        elif c.get("type") == types.TRAINJOB_FAILED:
            status = types.TRAINJOB_FAILED
    if status:
        return status
    running = sum(1 for s in steps if s.name.startswith("node-")
                  and s.status in ("Running", "Succeeded"))
    return types.TRAINJOB_RUNNING if steps and running >= num_nodes else types.TRAINJOB_CREATED


def num_nodes_of(job, runtime):
    trainer = ((job.get("spec") or {}).get("trainer")) or {}
    return trainer.get("numNodes") or runtime.trainer.num_nodes


def runtime_ref(job):
    return (((job.get("spec") or {}).get("runtimeRef")) or {}).get("name")


def unknown_runtime(job):
    """A ``Runtime`` for a TrainJob whose runtime is gone (it runs on its snapshot)."""
    ref = ((job.get("spec") or {}).get("runtimeRef")) or {}
    kind = ref.get("kind") or types.RuntimeKind.CLUSTER_TRAINING_RUNTIME.value
    trainer = types.RuntimeTrainer(trainer_type=types.TrainerType.CUSTOM_TRAINER,
                                   framework=types.UNKNOWN, image="")
    return types.Runtime(name=ref.get("name") or "", trainer=trainer,
                         kind=types.RuntimeKind(kind))


def _int_or_none(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def trainer_status_of(job):
    """The ``TrainerStatus`` of a job dict (a TrainJob, or a kubeflow.org/v1 job as trainctl
    keeps it), or None when it has none. Metrics by name, the last of a repeated name."""
    reported = (job.get("status") or {}).get("trainerStatus")
    if not isinstance(reported, dict):
        return None
    metrics = {}
    for m in reported.get("metrics") or []:
        if isinstance(m, dict) and isinstance(m.get("name"), str):
            value = m.get("value")
            metrics[m["name"]] = value if isinstance(value, str) or value is None else str(value)
    when = reported.get("lastUpdatedTime")
    return types.TrainerStatus(
        progress_percentage=_int_or_none(reported.get("progressPercentage")),
        estimated_remaining_seconds=_int_or_none(reported.get("estimatedRemainingSeconds")),
        metrics=metrics,
        last_updated_time=as_datetime(when) if isinstance(when, str) else None)


def trainjob_of(job, runtime, pods):
    """The ``TrainJob`` of a TrainJob dict, its runtime and its pods."""
    meta = job.get("metadata") or {}
    steps = steps_of(pods, runtime)
    nodes = num_nodes_of(job, runtime)
    return types.TrainJob(name=meta.get("name"), runtime=runtime, steps=steps, num_nodes=nodes,
                          creation_timestamp=as_datetime(meta.get("creationTimestamp")),
                          status=status_of(job, steps, nodes),
                          trainer_status=trainer_status_of(job))


def events_of(trainjob, events):
    """The ``Event``s of the TrainJob and its parts among ``events`` (backend dicts)."""
    names = {trainjob.name}
    for s in trainjob.steps:
        names.add(s.name)
        names.add(s.pod_name)
    out = []
    for e in events:
        # A cluster's event is timed by its firstTimestamp, as upstream's client does, and left
        # out without one; a local event has its time.
        when = e.get("first_time") if "first_time" in e else e.get("time")
        if e.get("kind") in _EVENT_KINDS and e.get("name") in names and when is not None:
            out.append(types.Event(involved_object_kind=e["kind"],
                                   involved_object_name=e["name"],
                                   message=e.get("message") or "", reason=e.get("reason") or "",
                                   event_time=as_datetime(when)))
    far = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    out.sort(key=lambda ev: ev.event_time or far)
    return out


def selector_for_step(name, step, runtime):
    """The pod labels that select a step (for a step whose pod does not exist yet)."""
    selector = {JOBSET_NAME_LABEL: name}
    if step.startswith("node-") and step[5:].isdigit():
        index = int(step[5:])
        if trainjob_spec.is_mpi(runtime):
            rjob, index = ("launcher", 0) if index == 0 else ("node", index - 1)
        else:
            rjob = "node"
        selector.update({RJOB_LABEL: rjob, INDEX_LABEL: str(index)})
    else:
        selector[RJOB_LABEL] = step
    return selector


def container_for_step(step):
    """The container whose log a step is: ``node`` for trainer nodes, else the step's name."""
    if step.startswith("node-") and step[5:].isdigit():
        return "node"
    return step
