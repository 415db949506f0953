"""``TrainingClient``: upstream's (kubeflow-training 1.9.4) client surface — same method names,
keyword arguments, defaults, return types and exception types — over two backends:

* ``kubernetes``: kubeflow.org/v1 custom objects on a cluster (``trainctl operator`` or
  upstream's operator run them);
* ``local``: the same objects run on this machine by ``trainctl run`` (no cluster).

All argument handling, templates, condition logic and waiting live here, so both backends
behave the same; a backend (one protocol, ``backends/base.py``) only moves JSON and holds no
logic of this class. Exceptions: ValueError for bad arguments (naming
the argument), TimeoutError, RuntimeError for API failures and failed jobs. Upstream bugs fixed
here are listed in docs/sdk.md. Not thread-safe across concurrent calls that mutate the same job.
"""

import datetime
import inspect
import json
import logging
import multiprocessing
import os
import time

from .. import constants
from .. import job_builder
from .. import models
from ..backends import make_backend
from ..backends.base import BackendError

# Where `trainctl operator` keeps a kubeflow.org/v1 job's last progress report.
TRAINER_STATUS_KEY = "trainctl.dev/trainer-status"

logger = logging.getLogger(__name__)

_UNSET = object()


class TrainingClient:
    def __init__(self, config_file=None, context=None, client_configuration=None,
                 namespace=None, job_kind=constants.PYTORCHJOB_KIND, backend=None,
                 state_dir=None, runtime=None):
        if job_kind not in constants.JOB_PARAMETERS:
            raise ValueError(
                f"Job kind must be one of these: {list(constants.JOB_PARAMETERS.keys())}")
        self.job_kind = job_kind
        # runtime (local): "podman" or "docker" runs each replica as a container of its image.
        self._backend = make_backend(backend, config_file, context, client_configuration,
                                     state_dir, runtime)
        self.backend_name = self._backend.name
        # Computed now, not at import time as upstream does.
        self.namespace = namespace or self._backend.default_namespace()
        # Upstream's attributes, on a cluster (None locally).
        self.custom_api = getattr(self._backend, "custom_api", None)
        self.core_api = getattr(self._backend, "core_api", None)

    @property
    def backend(self):
        return self.backend_name

    # ------------------------------------------------------------------------------------
    # helpers

    def _kind(self, job_kind):
        job_kind = job_kind or self.job_kind
        if job_kind not in constants.JOB_PARAMETERS:
            raise ValueError(f"Job kind must be one of these: {list(constants.JOB_PARAMETERS)}")
        return job_kind

    def _call(self, verb, what, fn, *args):
        """Runs a backend call; maps failures to upstream's exception types and messages."""
        try:
            return fn(*args)
        except (multiprocessing.TimeoutError, TimeoutError) as e:
            raise TimeoutError(f"Timeout to {verb} {what}") from e
        except (ValueError, ConnectionError, NotImplementedError):
            raise
        except Exception as e:
            raise RuntimeError(f"Failed to {verb} {what}. Error: {e}") from e

    @staticmethod
    def _model(data, kind):
        # On a cluster a v1 job's progress report is kept in an annotation (its CRD has no
        # trainerStatus); the job's status shows it where a TrainJob has it.
        kept = ((data.get("metadata") or {}).get("annotations") or {}).get(TRAINER_STATUS_KEY)
        if isinstance(kept, str) and isinstance(data.get("status", {}), dict):
            try:
                report = json.loads(kept)
            except ValueError:
                report = None
            if isinstance(report, dict):
                data = dict(data, status=dict(data.get("status") or {}, trainerStatus=report))
        return models.deserialize(data, models.KIND_MODELS[kind])

    # ------------------------------------------------------------------------------------
    # train (LLM fine-tuning)

    def train(self, name=None, namespace=None, labels=None, annotations=None, num_workers=1,
              num_procs_per_worker=1, resources_per_worker=None, model_provider_parameters=None,
              dataset_provider_parameters=None, trainer_parameters=None, init_env_vars=None,
              env_vars=None, storage_config=None, queue_name=None, trainer_image=None,
              initializer_image=None):
        """Fine-tunes a Hugging Face model (LoRA, or the full model without ``lora_config``) on
        a dataset: a workspace (a PVC named ``name``; locally a folder, see
        ``get_job_workspace``), a storage-initializer step that fetches the model and dataset
        into it once, then a PyTorchJob of ``num_workers`` replicas (Master + Workers) of
        ``num_procs_per_worker`` torchrun processes each. Returns None, as upstream.

        ``trainer_image``/``initializer_image`` (cluster only; ours) select other images than
        upstream's (also ``TRAINER_TRANSFORMER_IMAGE``/``STORAGE_INITIALIZER_IMAGE``)."""
        namespace = namespace or self.namespace
        kwargs = dict(labels=labels, annotations=annotations, num_workers=num_workers,
                      num_procs_per_worker=num_procs_per_worker,
                      resources_per_worker=resources_per_worker,
                      model_provider_parameters=model_provider_parameters,
                      dataset_provider_parameters=dataset_provider_parameters,
                      trainer_parameters=trainer_parameters, init_env_vars=init_env_vars,
                      env_vars=env_vars, storage_config=storage_config)
        return self._backend.fine_tune(self, name, namespace, queue_name, trainer_image,
                                       initializer_image, **kwargs)

    def get_job_workspace(self, name, namespace=None):
        """Where ``train(name)`` keeps its model, dataset and output: locally the folder (a
        path), on a cluster ``"pvc://<namespace>/<name>"``. Kept after the job, as a PVC;
        ``delete_job(name, delete_workspace=True)`` removes it."""
        namespace = namespace or self.namespace
        return self._call("get", f"the workspace of {namespace}/{name}",
                          self._backend.workspace, name, namespace)

    def get_job_metrics(self, name, namespace=None, job_kind=None):
        """The metrics rank 0 printed, as ``trainctl metrics`` reads them (docs/metrics.md: JSON
        lines and Python dicts, also after a progress bar on the same line, ``name=value``,
        ``name: value``; the trainer of ``train()`` prints one JSON line per logging step): a
        list of dicts in step order, one per step, ``{"step": 10, "loss": 2.3, "epoch": ...}``.
        After a resume, a step logged twice keeps the last value of each name. A value that is
        not finite is None; a line without a step counts as the ordinal of its record; a series
        of more than 20,000 points keeps every k-th point and the last. On a cluster this runs
        the trainctl binary with the client's kubeconfig."""
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        series = self._call("get", f"the metrics of {job_kind} {namespace}/{name}",
                            self._backend.job_metrics, name, namespace, job_kind)
        return records_by_step(series)

    # ------------------------------------------------------------------------------------
    # create

    def create_job(self, job=None, name=None, namespace=None, labels=None, annotations=None,
                   job_kind=None, base_image=None, train_func=None, parameters=None,
                   num_workers=1, num_procs_per_worker=None, resources_per_worker=None,
                   num_chief_replicas=None, num_ps_replicas=None, packages_to_install=None,
                   pip_index_url=constants.DEFAULT_PIP_INDEX_URL, env_vars=None,
                   queue_name=None, volumes=None, volume_mounts=None):
        """Creates a job from a model object, a dict, a YAML/JSON path, a function, or an
        image. Returns None, as upstream."""
        if job is not None:
            given = dict(name=name, job_kind=job_kind, base_image=base_image,
                         train_func=train_func, parameters=parameters,
                         num_procs_per_worker=num_procs_per_worker,
                         resources_per_worker=resources_per_worker,
                         num_chief_replicas=num_chief_replicas, num_ps_replicas=num_ps_replicas,
                         packages_to_install=packages_to_install, env_vars=env_vars,
                         volumes=volumes, volume_mounts=volume_mounts)
            for key, value in given.items():
                if value is not None:
                    raise ValueError(
                        "If `job` is set only `namespace`, `labels`, and `annotations` "
                        f"arguments are allowed. Argument `{key}` must be None.")
        namespace = namespace or self.namespace
        workdir = None
        if job is not None:
            job, workdir = self._job_object(job)
            job_kind = str(job.kind)
        else:
            job_kind = job_kind or self.job_kind
        if job_kind not in constants.JOB_PARAMETERS:
            raise ValueError(f"Job kind must be one of these: {list(constants.JOB_PARAMETERS)}")
        if len(volumes or []) != len(volume_mounts or []):
            raise ValueError("Volumes and VolumeMounts must be the same length: "
                             f"{len(volumes or [])} vs. {len(volume_mounts or [])}")

        if job is None:
            if train_func is None and base_image is None:
                raise ValueError("create_job needs one of job, train_func or base_image")
            if name is None:
                raise ValueError("Job name must be set to configure Job from function or image")
            if not isinstance(num_workers, int) or isinstance(num_workers, bool) or \
                    num_workers < 1:
                raise ValueError(f"At least one Worker for {job_kind} must be set "
                                 f"(num_workers={num_workers!r})")
            if num_procs_per_worker is not None and not (
                    (isinstance(num_procs_per_worker, int) and num_procs_per_worker >= 1) or
                    num_procs_per_worker in ("auto", "cpu", "gpu")):
                raise ValueError("num_procs_per_worker must be a positive int or 'auto', got "
                                 f"{num_procs_per_worker!r}")
            if job_kind not in (constants.PYTORCHJOB_KIND, constants.TFJOB_KIND,
                                constants.XGBOOSTJOB_KIND):
                raise ValueError(f"Job kind {job_kind} can't be created using function or "
                                 "image. Number of Workers must be set.")
            job = self._job_from_function(
                job_kind, name, namespace, labels, annotations, base_image, train_func,
                parameters, num_workers, num_procs_per_worker, resources_per_worker,
                num_chief_replicas, num_ps_replicas, packages_to_install, pip_index_url,
                env_vars, volumes, volume_mounts)
            labels = annotations = None  # already in the object

        if not isinstance(job, models.KIND_MODELS[job_kind]):
            raise ValueError(f"Job must be one of these types: {constants.JOB_MODELS}, "
                             f"but Job is: {type(job)}")
        if job.metadata is None:
            job.metadata = models.V1ObjectMeta()
        if labels:
            job.metadata.labels = {**(job.metadata.labels or {}), **labels}
        if annotations:
            job.metadata.annotations = {**(job.metadata.annotations or {}), **annotations}
        if job.metadata.namespace is None or namespace != self.namespace:
            job.metadata.namespace = namespace
        namespace = job.metadata.namespace
        if queue_name is not None and str(queue_name).strip():
            if self._backend.queue_exists(queue_name, namespace) is False:
                logger.warning("Queue '%s' does not exist in namespace '%s'. The job will "
                               "be created but may not be managed by Kueue.",
                               queue_name, namespace)
            job.metadata.labels = {**(job.metadata.labels or {}),
                                   constants.LOCAL_QUEUE_LABEL: queue_name}
        what = f"{job_kind}: {namespace}/{job.metadata.name}"
        body = models.serialize(job)
        self._call("create", what, self._backend.create_job, body, job_kind, namespace, workdir,
                   constants.DEFAULT_TIMEOUT)
        logger.debug("%s %s/%s has been created", job_kind, namespace, job.metadata.name)

    def _job_object(self, job):
        """A model object from a model, a dict (camelCase or snake_case) or a YAML/JSON path;
        also the folder relative paths resolve in (a file's own folder)."""
        if isinstance(job, (str, os.PathLike)):
            path = os.fspath(job)
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as e:
                raise ValueError(f"job: cannot read {path}: {e.strerror}") from e
            data = _load_document(text, path)
            return self._job_object(data)[0], os.path.dirname(os.path.abspath(path))
        if isinstance(job, dict):
            kind = job.get("kind")
            if kind not in constants.JOB_PARAMETERS:
                raise ValueError(f"job: kind must be one of {list(constants.JOB_PARAMETERS)}, "
                                 f"got {kind!r}")
            return models.deserialize(_camel_keys(job), models.KIND_MODELS[kind]), None
        if not isinstance(job, tuple(models.KIND_MODELS.values())):
            raise ValueError(f"Job must be one of these types: {constants.JOB_MODELS}, "
                             f"but Job is: {type(job)}")
        return job, None

    def _job_from_function(self, job_kind, name, namespace, labels, annotations, base_image,
                           train_func, parameters, num_workers, num_procs_per_worker,
                           resources_per_worker, num_chief_replicas, num_ps_replicas,
                           packages_to_install, pip_index_url, env_vars, volumes,
                           volume_mounts):
        if base_image is None:
            base_image = constants.JOB_PARAMETERS[job_kind]["base_image"]
        command = args = None
        extra_env = {}
        if train_func is not None:
            if packages_to_install is not None and not isinstance(packages_to_install, list):
                raise ValueError("packages_to_install must be a list of requirement strings")
            source = job_builder.function_source(train_func, parameters)
            entrypoint = job_builder.entrypoint_for(job_kind, num_workers, num_procs_per_worker)
            command, args, extra_env = self._backend.function_command(
                name, namespace, source, entrypoint, packages_to_install, pip_index_url,
                annotations)
        else:
            self._backend.check_image_entrypoint(annotations)
        if extra_env:
            merged = job_builder.env_list(env_vars) or []
            have = {e.name for e in merged}
            merged += [models.V1EnvVar(name=k, value=v) for k, v in extra_env.items()
                       if k not in have]
            env_vars = merged
        template = job_builder.pod_template(
            constants.JOB_PARAMETERS[job_kind]["container"], base_image, command, args,
            resources_per_worker, env_vars, volumes, volume_mounts)
        return job_builder.job_from_template(
            job_kind, name, namespace, template, num_workers, labels, annotations,
            num_procs_per_worker, num_chief_replicas, num_ps_replicas)

    # ------------------------------------------------------------------------------------
    # read

    def get_job(self, name, namespace=None, job_kind=None, timeout=constants.DEFAULT_TIMEOUT):
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        what = f"{job_kind}: {namespace}/{name}"
        data = self._call("get", what, self._backend.get_job, name, namespace, job_kind, timeout)
        return self._model(data, job_kind)

    def list_jobs(self, namespace=None, job_kind=None, timeout=constants.DEFAULT_TIMEOUT):
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        what = f"{job_kind}s in namespace: {namespace}"
        items = self._call("list", what, self._backend.list_jobs, namespace, job_kind, timeout)
        return [self._model(i, job_kind) for i in items]

    def get_job_conditions(self, name=None, namespace=None, job_kind=None, job=None,
                           timeout=constants.DEFAULT_TIMEOUT):
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        if job is not None and not isinstance(job, models.KIND_MODELS[job_kind]):
            raise ValueError(f"Job must be one of these types: {constants.JOB_MODELS}")
        if job is None:
            if name is None:
                raise ValueError("Job name must be set to configure Job from function or image")
            job = self.get_job(name=name, namespace=namespace, job_kind=job_kind,
                               timeout=timeout)
        if job.status and job.status.conditions:
            return job.status.conditions
        return []

    def _has(self, condition, name, namespace, job_kind, job, timeout):
        return _has_condition(
            self.get_job_conditions(name, namespace, job_kind, job, timeout), condition)

    def is_job_created(self, name=None, namespace=None, job_kind=None, job=None,
                       timeout=constants.DEFAULT_TIMEOUT):
        return self._has(constants.JOB_CONDITION_CREATED, name, namespace, job_kind, job, timeout)

    def is_job_running(self, name=None, namespace=None, job_kind=None, job=None,
                       timeout=constants.DEFAULT_TIMEOUT):
        return self._has(constants.JOB_CONDITION_RUNNING, name, namespace, job_kind, job, timeout)

    def is_job_restarting(self, name=None, namespace=None, job_kind=None, job=None,
                          timeout=constants.DEFAULT_TIMEOUT):
        return self._has(constants.JOB_CONDITION_RESTARTING, name, namespace, job_kind, job,
                         timeout)

    def is_job_succeeded(self, name=None, namespace=None, job_kind=None, job=None,
                         timeout=constants.DEFAULT_TIMEOUT):
        return self._has(constants.JOB_CONDITION_SUCCEEDED, name, namespace, job_kind, job,
                         timeout)

    def is_job_failed(self, name=None, namespace=None, job_kind=None, job=None,
                      timeout=constants.DEFAULT_TIMEOUT):
        return self._has(constants.JOB_CONDITION_FAILED, name, namespace, job_kind, job, timeout)

    def get_job_why(self, name=None, namespace=None, job_kind=None, job=None,
                    timeout=constants.DEFAULT_TIMEOUT):
        """Why the job is where it is (trainctl's addition; docs/status-machine.md, "Why"), from
        its conditions, the same for both backends: a dict with ``reason`` and ``message`` (the
        ``ReplicasReady`` condition while some replica is not running, e.g. ``Unschedulable``,
        ``ImagePullBackOff``, ``CrashLoopBackOff``, ``ProgressTimeout``; else None), ``since`` (when
        that reason was set) and ``first_failure`` (the "First failure: …" text of the Failed or
        Restarting condition: the replica that failed first, its exit code and last output;
        else None)."""
        return _why(self.get_job_conditions(name, namespace, job_kind, job, timeout))

    def get_job_restarts(self, name=None, namespace=None, job_kind=None, job=None,
                         timeout=constants.DEFAULT_TIMEOUT):
        """How the job restarts (trainctl's addition; docs/status-machine.md, "Gang restart"), the
        same for both backends: a dict with ``scope`` ("Gang" when the job has the annotation
        ``trainctl.dev/restart-scope: Gang``, else "Replica"), ``attempt`` (a Gang job's current
        attempt, 0 before its first gang restart), ``backoff_limit`` (None when unset) and
        ``restarts_left`` (gang restarts before backoffLimit fails the job; None without a
        limit or for a Replica job)."""
        if job is None:
            if name is None:
                raise ValueError("Job name must be set to read its restarts")
            job = self.get_job(name=name, namespace=namespace, job_kind=job_kind, timeout=timeout)
        annotations = (job.metadata.annotations if job.metadata else None) or {}
        scope = "Gang" if annotations.get(constants.RESTART_SCOPE_ANNOTATION) == "Gang" else "Replica"
        try:
            attempt = int(annotations.get(constants.RESTART_ATTEMPT_ANNOTATION, "0"))
        except ValueError:
            attempt = 0
        run_policy = job.spec.run_policy if job.spec else None
        limit = run_policy.backoff_limit if run_policy else None
        left = None
        if scope == "Gang" and limit is not None:
            left = max(0, limit - attempt)
        return {"scope": scope, "attempt": attempt if scope == "Gang" else 0,
                "backoff_limit": limit, "restarts_left": left}

    def get_job_notice(self, name=None, namespace=None, job_kind=None, job=None,
                       timeout=constants.DEFAULT_TIMEOUT):
        """The job's checkpoint notice (trainctl's addition; docs/status-machine.md,
        "Checkpoint notice"), the same for both backends: a dict with ``seconds`` (the
        annotation ``trainctl.dev/checkpoint-notice-seconds``; None without one), ``signal``
        (``trainctl.dev/checkpoint-signal`` or None) and ``given`` (the notice trainctl gave its
        replicas, as they read it: ``reason``, ``stopAt``, ``attempt``, ``seconds``; None while
        there is none)."""
        if job is None:
            if name is None:
                raise ValueError("Job name must be set to read its checkpoint notice")
            job = self.get_job(name=name, namespace=namespace, job_kind=job_kind, timeout=timeout)
        annotations = (job.metadata.annotations if job.metadata else None) or {}
        try:
            seconds = int(annotations[constants.NOTICE_SECONDS_ANNOTATION])
        except (KeyError, ValueError):
            seconds = None
        given = None
        try:
            given = json.loads(annotations.get(constants.NOTICE_ANNOTATION) or "null")
        except ValueError:
            pass
        return {"seconds": seconds, "signal": annotations.get(constants.NOTICE_SIGNAL_ANNOTATION),
                "given": given if isinstance(given, dict) else None}

    def wait_for_job_conditions(self, name, namespace=None, job_kind=None,
                                expected_conditions={constants.JOB_CONDITION_SUCCEEDED},
                                wait_timeout=600, polling_interval=15, callback=None,
                                timeout=constants.DEFAULT_TIMEOUT):
        """Polls until one of ``expected_conditions`` is True. RuntimeError when the job fails
        (naming the first failed replica, its exit code and last log lines where known),
        TimeoutError after ``wait_timeout`` seconds, saying where the job is and why (its
        ReplicasReady reason: the failing replica, its exit code and last output; the first
        failure). Upstream's loop count semantics are kept
        (``round(wait_timeout / polling_interval)`` polls)."""
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        expected = set(expected_conditions)
        if not expected.issubset(constants.JOB_CONDITIONS):
            raise ValueError(f"Expected conditions: {expected} must be subset of "
                             f"{constants.JOB_CONDITIONS}")
        if polling_interval is None or polling_interval <= 0:
            raise ValueError(f"polling_interval must be > 0, got {polling_interval!r}")
        job = None
        for _ in range(round(wait_timeout / polling_interval)):
            job = self.get_job(name=name, namespace=namespace, job_kind=job_kind,
                               timeout=timeout)
            conditions = self.get_job_conditions(job=job, timeout=timeout, job_kind=job_kind)
            if conditions:
                logger.debug("%s %s %s", name, conditions[-1].type,
                             conditions[-1].last_transition_time)
            if callback:
                callback(job)
            if constants.JOB_CONDITION_FAILED not in expected and \
                    _has_condition(conditions, constants.JOB_CONDITION_FAILED):
                raise RuntimeError(self._failure_message(job, job_kind, namespace, name))
            for condition in expected:
                if _has_condition(conditions, condition):
                    return job
            time.sleep(polling_interval)
        raise TimeoutError(f"Timeout waiting for {job_kind}: {namespace}/{name} to reach "
                           f"expected conditions: {expected}" + _timeout_why(job))

    def _failure_message(self, job, job_kind, namespace, name):
        failed = [c for c in job.status.conditions if c.type == constants.JOB_CONDITION_FAILED]
        reason = f"{failed[-1].reason}: {failed[-1].message}" if failed else ""
        text = f"{job_kind} {namespace}/{name} is Failed. {reason}"
        failure = self._backend.first_failure(name, namespace, job_kind, job.status.conditions)
        if failure:
            text += (f"\nFirst failed replica: {failure.get('name')} "
                     f"(exit code {failure.get('exitCode', '?')})")
            lines = failure.get("lastLogLines") or []
            if lines:
                text += f"; its last {len(lines)} log lines:\n" + "\n".join(
                    "    " + line for line in lines)
        text += f"\n{job_kind} conditions: {job.status.conditions}"
        return text

    # ------------------------------------------------------------------------------------
    # pods and logs

    def get_job_pods(self, name, namespace=None, is_master=False, replica_type=None,
                     replica_index=None, timeout=constants.DEFAULT_TIMEOUT):
        namespace = namespace or self.namespace
        selector = _pod_selector(name, is_master, replica_type, replica_index)
        what = f"pods for Job: {namespace}/{name}"
        return self._call("list", what, self._backend.job_pods, name, namespace, self.job_kind,
                          selector, timeout)

    def get_job_pod_names(self, name, namespace=None, is_master=False, replica_type=None,
                          replica_index=None, timeout=constants.DEFAULT_TIMEOUT):
        pods = self.get_job_pods(name=name, namespace=namespace, is_master=is_master,
                                 replica_type=replica_type, replica_index=replica_index,
                                 timeout=timeout)
        return [p.metadata.name for p in pods]

    def get_job_logs(self, name, namespace=None, job_kind=None, is_master=True,
                     replica_type=None, replica_index=None, follow=False,
                     timeout=constants.DEFAULT_TIMEOUT, verbose=False):
        """Returns ``(logs, events)``: ``{pod name: text}`` and, with ``verbose``,
        ``{"<kind>/<name>": ["<time> <message>", ...]}``. With ``follow`` every line is also
        printed as ``[Pod <name>]: <line>`` while the job runs (pods not started yet are
        waited for)."""
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        logs = {}
        if follow:
            for pod, line in self.stream_job_logs(
                    name, namespace=namespace, job_kind=job_kind, is_master=is_master,
                    replica_type=replica_type, replica_index=replica_index, timeout=timeout):
                print(f"[Pod {pod}]: {line}", flush=True)
                logs[pod] = logs.get(pod, "") + line + "\n"
        else:
            pods = self.get_job_pods(name, namespace, is_master, replica_type, replica_index,
                                     timeout)
            container = constants.JOB_PARAMETERS[job_kind]["container"]
            for pod in pods:
                if pod.status is None or pod.status.phase == constants.POD_PHASE_PENDING:
                    continue
                try:
                    logs[pod.metadata.name] = self._backend.pod_log(pod, namespace, container)
                except Exception as e:
                    raise RuntimeError(f"Failed to read logs for pod "
                                       f"{namespace}/{pod.metadata.name}") from e
        events = {}
        if verbose:
            events = self._events(name, namespace, job_kind, is_master, replica_type,
                                  replica_index, timeout)
        return logs, events

    def stream_job_logs(self, name, namespace=None, job_kind=None, is_master=False,
                        replica_type=None, replica_index=None,
                        timeout=constants.DEFAULT_TIMEOUT):
        """Yields ``(pod name, line)`` as the selected pods write them, until they end; pods
        that have not started are waited for. For notebooks: ``for pod, line in ...``."""
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        selector = _pod_selector(name, is_master, replica_type, replica_index)
        try:
            yield from self._backend.follow_job_logs(name, namespace, job_kind, selector,
                                                     timeout)
        except BackendError as e:
            raise RuntimeError(f"Failed to read logs of {job_kind}: {namespace}/{name}. "
                               f"Error: {e}") from e

    def _events(self, name, namespace, job_kind, is_master, replica_type, replica_index,
                timeout):
        pods = self.get_job_pods(name, namespace, is_master, replica_type, replica_index,
                                 timeout)
        # Fixed: upstream reads the job here without job_kind (always the client's kind).
        job = self.get_job(name=name, namespace=namespace, job_kind=job_kind, timeout=timeout)
        events = self._backend.job_events(name, namespace, job_kind)
        wanted = {(job_kind, name): job.metadata.creation_timestamp}
        for p in pods:
            wanted[(constants.POD_KIND, p.metadata.name)] = p.metadata.creation_timestamp
        out = {}
        for e in events:
            when = _as_datetime(e["time"])
            key = (e["kind"], e["name"])
            if key not in wanted or when is None:
                continue
            since = _as_datetime(wanted[key])
            if since is not None and when < since:
                continue
            entry = f"{when.strftime('%Y-%m-%d %H:%M:%S')} {e['message']}"
            out.setdefault(f"{key[0].lower()}/{key[1]}", []).append(entry)
        return out

    # ------------------------------------------------------------------------------------
    # update and delete

    def update_job(self, job, name, namespace=None, job_kind=None):
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)
        what = f"{job_kind}: {namespace}/{name}"
        wanted = models.serialize(job) if not isinstance(job, dict) else _camel_keys(job)
        self._call("update", what, self._backend.update_job, name, namespace, job_kind, wanted,
                   constants.DEFAULT_TIMEOUT)
        logger.debug("%s %s/%s has been updated", job_kind, namespace, name)

    def delete_job(self, name, namespace=None, job_kind=None, delete_options=None,
                   delete_workspace=False):
        """Deletes the job. ``delete_workspace`` (ours): also the PVCs its replicas mount
        (locally their folders) and the credentials Secret ``train()`` made."""
        namespace = namespace or self.namespace
        job_kind = self._kind(job_kind)  # fixed: upstream did not validate the kind
        what = f"{job_kind}: {namespace}/{name}"
        body = models.serialize(delete_options) if delete_options is not None else None
        self._call("delete", what, self._backend.delete_job, name, namespace, job_kind, body,
                   delete_workspace, constants.DEFAULT_TIMEOUT)
        logger.debug("%s %s/%s has been deleted", job_kind, namespace, name)


# ----------------------------------------------------------------------------------------
# module helpers


def records_by_step(series):
    """``trainctl metrics -o json``'s document (``{"series": {name: {"step": [...], "value":
    [...]}}}``) as one dict per step, in step order: ``{"step": N, name: value, ...}``, each
    name's last value at that step. Whole steps are ints."""
    steps = {}
    for name, column in (series.get("series") or {}).items():
        for step, value in zip(column.get("step") or [], column.get("value") or []):
            steps.setdefault(step, {})[name] = value
    records = []
    for step in sorted(steps):
        record = {"step": int(step) if float(step).is_integer() else step}
        record.update(steps[step])
        records.append(record)
    return records






def _why(conditions):
    out = {"reason": None, "message": None, "since": None, "first_failure": None}
    for c in conditions:
        if c.type == "ReplicasReady" and c.status == "False":
            out.update(reason=c.reason, message=c.message, since=c.last_transition_time)
        if c.type in (constants.JOB_CONDITION_FAILED, constants.JOB_CONDITION_RESTARTING) and \
                c.status == constants.CONDITION_STATUS_TRUE and c.message:
            at = c.message.find("First failure: ")
            if at >= 0:
                out["first_failure"] = c.message[at:]
    return out


def _timeout_why(job):
    """What a TimeoutError adds: the job's last state and, when it says why, its reason with the
    failing replica, its exit code and last output, and the first failure; "" when the job was
    never read."""
    status = getattr(job, "status", None) if job is not None else None
    conditions = (getattr(status, "conditions", None) or []) if status is not None else []
    if not conditions:
        return ""
    text = f". It is {conditions[-1].type}"
    why = _why(conditions)
    if why["reason"]:
        text += f".\n{why['reason']} (since {why['since']}): {why['message']}"
    if why["first_failure"]:
        text += f"\n{why['first_failure']}"
    return text


def _has_condition(conditions, condition_type):
    return any(c.type == condition_type and c.status == constants.CONDITION_STATUS_TRUE
               for c in conditions)


def _pod_selector(name, is_master, replica_type, replica_index):
    """The operator's pod labels to select; ValueError for an unknown replica type."""
    if replica_type is not None and replica_type not in constants.ALL_REPLICA_TYPES:
        raise ValueError("replica_type must be one of "
                         f"{sorted(constants.ALL_REPLICA_TYPES)} (lower case), got "
                         f"{replica_type!r}")
    selector = {constants.JOB_NAME_LABEL: name}
    if is_master:
        selector[constants.JOB_ROLE_LABEL] = constants.JOB_ROLE_MASTER
    if replica_type:
        selector[constants.REPLICA_TYPE_LABEL] = replica_type.lower()
    if replica_index is not None:
        selector[constants.REPLICA_INDEX_LABEL] = str(replica_index)
    return selector








def _as_datetime(value):
    if value is None or isinstance(value, datetime.datetime):
        return value
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _snake_to_camel(key):
    head, *rest = key.split("_")
    return head + "".join(r[:1].upper() + r[1:] for r in rest)


_VERBATIM_MAPS = {"labels", "annotations", "nodeSelector", "limits", "requests",
                  "matchLabels", "data", "stringData"}
_REPLICA_MAPS = {"pytorchReplicaSpecs", "tfReplicaSpecs", "xgbReplicaSpecs", "mpiReplicaSpecs",
                 "paddleReplicaSpecs", "jaxReplicaSpecs", "mxReplicaSpecs", "replicaStatuses"}


def _camel_keys(value, parent=None):
    """snake_case dict keys → camelCase (field names only, never map keys like labels)."""
    if isinstance(value, list):
        return [_camel_keys(v, parent) for v in value]
    if not isinstance(value, dict):
        return value
    if parent in _VERBATIM_MAPS:
        return dict(value)
    out = {}
    for k, v in value.items():
        key = k if parent in _REPLICA_MAPS else _snake_to_camel(k) if "_" in k else k
        out[key] = _camel_keys(v, key if parent not in _REPLICA_MAPS else None)
    return out


def _load_document(text, path):
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml
    except ImportError as e:
        raise ValueError(f"job: {path} is not JSON, and PyYAML is not installed to read "
                         "YAML") from e
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        raise ValueError(f"job: {path}: not valid YAML: {e}") from e
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ValueError(f"job: {path} must hold exactly one job object, found {len(docs)} "
                         "documents")
    return docs[0]


