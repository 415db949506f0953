"""``TrainerClient``: the ``kubeflow`` SDK 0.5.0 ``TrainerClient`` API (Kubeflow Trainer v2,
TrainJobs of trainer.kubeflow.org/v1alpha1) over trainctl's two backends, the same protocol as
``TrainingClient`` (``backends/base.py``):

* ``local``: ``trainctl run`` runs the TrainJob on this machine (any node count, the built-in
  and installed runtimes; ``runtime="podman"|"docker"`` for containers);
* ``kubernetes``: TrainJobs on a cluster (``trainctl operator`` or upstream's controller).

Same method names, arguments, defaults, return types and exception types as upstream's; the
argument handling, status rules and waiting live here (``trainjob_spec``, ``trainjob_view``),
so both backends behave the same and this class has no ``if backend`` branch: what differs
(which option fields a substrate honours, whether a BuiltinTrainer runs, where a runtime's
packages are read) the backend says (``backends/base.py``). Trainers, initializers and options
are duck-typed (``kubeflow.trainer``'s classes or ``trainctl.trainer_types``'); results are
``trainctl.trainer_types`` dataclasses.

Exceptions: ValueError for bad arguments, refused before anything starts (a runtime that does
not exist names what exists; a function that cannot be serialised; an unknown option, or one
the backend cannot honour, with why; a BuiltinTrainer locally, with why), TimeoutError,
RuntimeError for substrate failures and a Failed job in ``wait_for_job_status``.
"""

import logging
import multiprocessing
import time

from .. import constants
from .. import runtime_packages
from .. import trainer_types as types
from .. import trainjob_spec
from .. import trainjob_view
from ..backends import make_backend

logger = logging.getLogger(__name__)

KIND = trainjob_spec.KIND
_TIMEOUT = constants.DEFAULT_TIMEOUT


def _backend_args(backend, backend_config):
    """(backend name, config_file, context, client_configuration, namespace) from ours or
    from a ``kubeflow`` backend config object (KubernetesBackendConfig, LocalProcess…)."""
    if backend_config is None:
        return backend, None, None, None, None
    kind = type(backend_config).__name__
    if kind == "KubernetesBackendConfig":
        return ("kubernetes", getattr(backend_config, "config_file", None),
                getattr(backend_config, "context", None),
                getattr(backend_config, "client_configuration", None),
                getattr(backend_config, "namespace", None))
    if kind in ("LocalProcessBackendConfig", "ContainerBackendConfig"):
        return "local", None, None, None, None
    raise ValueError(f"backend_config: {kind} is not supported; pass backend='local' or "
                     "'kubernetes', or a KubernetesBackendConfig")


class TrainerClient:
    def __init__(self, backend_config=None, backend=None, namespace=None, config_file=None,
                 context=None, client_configuration=None, state_dir=None, runtime=None):
        """``backend``: "local" or "kubernetes" (None: the rule of ``TrainingClient``);
        ``backend_config``: upstream's config object instead. ``runtime`` (local only):
        "process", "podman" or "docker". ``state_dir`` (local only): the runner's state."""
        name, cfg_file, cfg_context, cfg_client, cfg_ns = _backend_args(backend, backend_config)
        self._backend = make_backend(name, config_file or cfg_file, context or cfg_context,
                                     client_configuration or cfg_client, state_dir, runtime)
        self.backend_name = self._backend.name
        self.namespace = namespace or cfg_ns or self._backend.default_namespace()

    # ------------------------------------------------------------------------------------
    # helpers

    def _call(self, verb, what, fn, *args, **kwargs):
        """A backend call; its failures as upstream's exception types and messages."""
        try:
            return fn(*args, **kwargs)
        except (multiprocessing.TimeoutError, TimeoutError) as e:
            raise TimeoutError(f"Timeout to {verb} {what}") from e
        except (ValueError, NotImplementedError):
            raise
        except Exception as e:
            raise RuntimeError(f"Failed to {verb} {what}. Error: {e}") from e

    def _runtime_objects(self):
        return self._call("list", f"runtimes in namespace: {self.namespace}",
                          self._backend.list_runtimes, self.namespace, _TIMEOUT)

    def _runtimes(self):
        """{name: Runtime}, a namespace's TrainingRuntime before a ClusterTrainingRuntime of the
        same name; runtimes that do not read as one (no framework label…) are left out."""
        found = {}
        objects = sorted(self._runtime_objects(),
                         key=lambda o: o.get("kind") != "TrainingRuntime")
        for obj in objects:
            try:
                runtime = trainjob_spec.runtime_of(obj)
            except ValueError as e:
                logger.warning("%s", e)
                continue
            found.setdefault(runtime.name, runtime)
        return found

    def _runtime_named(self, name, runtimes=None):
        runtimes = self._runtimes() if runtimes is None else runtimes
        if name not in runtimes:
            raise ValueError(f"runtime {name!r} does not exist in namespace {self.namespace} "
                             f"(backend {self.backend_name}); these do: "
                             f"{', '.join(sorted(runtimes)) or 'none'}")
        return runtimes[name]

    def _view(self, job, runtimes):
        name = job["metadata"]["name"]
        ref = trainjob_view.runtime_ref(job)
        runtime = runtimes.get(ref) or trainjob_view.unknown_runtime(job)
        pods = self._call("list", f"{KIND}'s steps: {self.namespace}/{name}",
                          self._backend.job_pods, name, self.namespace, KIND,
                          {trainjob_view.JOBSET_NAME_LABEL: name}, _TIMEOUT)
        return trainjob_view.trainjob_of(job, runtime, pods)

    # ------------------------------------------------------------------------------------
    # runtimes

    def list_runtimes(self):
        """The runtimes a TrainJob here may name: the namespace's, then the cluster's, each in
        the order the backend lists them (as upstream)."""
        return list(self._runtimes().values())

    def get_runtime(self, name):
        """The runtime ``name``; ValueError naming the ones that exist when it does not."""
        return self._runtime_named(name)

    # ------------------------------------------------------------------------------------
    # train

    def train(self, runtime=None, initializer=None, trainer=None, options=None):
        """Creates a TrainJob and returns its name (generated, or the ``Name`` option's).
        ``runtime``: a name or a ``Runtime`` (default ``torch-distributed``); ``trainer``:
        CustomTrainer (a function, run with ``torchrun`` on a torch runtime, else ``python``),
        CustomTrainerContainer, BuiltinTrainer (TorchTune, on a torchtune runtime), or None for
        the runtime's own command; ``options``: ``kubeflow.trainer.options``' (or
        ``trainctl.trainer_types``') Name, Labels, Annotations, TrainerCommand, TrainerArgs,
        ActiveDeadlineSeconds, RuntimePatch. A trainer passed as the first argument is taken
        as ``trainer``. Everything is checked before the backend is asked to create anything:
        ValueError for an unknown option, or one this backend cannot honour, with why."""
        if trainer is None and runtime is not None and not isinstance(runtime, str) and \
                not hasattr(runtime, "trainer"):
            runtime, trainer = None, runtime  # train(CustomTrainer(...))
        return self._train(runtime, initializer, trainer, options)

    def _train(self, runtime, initializer, trainer, options, launcher=None):
        """train()'s work; ``launcher``: what starts a function instead of the runtime's."""
        kind = trainjob_spec.trainer_kind(trainer) if trainer is not None else None
        opts = trainjob_spec.read_options(options, kind)
        self._check_refusals(opts)
        if kind == "builtin":
            reason = self._backend.builtin_trainer_refusal(self.namespace)
            if reason:
                raise ValueError(reason)
        source = None
        if kind == "custom":  # refused before anything is asked of the backend
            source = trainjob_spec.function_source(trainer.func, trainer.func_args)
        if kind in ("custom", "container"):
            trainjob_spec.check_num_nodes(trainer)
        init = trainjob_spec.initializer_section(initializer)

        wanted = runtime if isinstance(runtime, str) else getattr(runtime, "name", None)
        if runtime is not None and not wanted:
            raise ValueError(f"runtime must be a name or a Runtime, got {runtime!r}")
        resolved = self._runtime_named(wanted or types.DEFAULT_TRAINING_RUNTIME)
        needed = (types.TrainerType.BUILTIN_TRAINER if kind == "builtin"
                  else types.TrainerType.CUSTOM_TRAINER)
        if kind and resolved.trainer.trainer_type != needed:
            raise ValueError(f"a {type(trainer).__name__} cannot run on runtime "
                             f"{resolved.name}, whose trainer is "
                             f"{resolved.trainer.trainer_type.value} (framework "
                             f"{resolved.trainer.framework}): a BuiltinTrainer runs on a "
                             "torchtune runtime only, the other trainers on any other")
        section = None
        if kind == "builtin":
            section = trainjob_spec.builtin_trainer_section(trainer, resolved, initializer)

        name = opts.name or trainjob_spec.new_name()
        if opts.name:
            self._check_free(name)
        command, extra_env = None, {}
        if source is not None:
            entrypoint = trainjob_spec.entrypoint_for(resolved)
            urls = list(getattr(trainer, "pip_index_urls", None) or
                        types.DEFAULT_PIP_INDEX_URLS)
            cmd, args, extra_env = self._backend.function_command(
                name, self.namespace, source, entrypoint,
                getattr(trainer, "packages_to_install", None), urls[0], opts.annotations)
            command = (trainjob_spec.launcher_for(resolved) if launcher is None
                       else list(launcher)) + list(cmd) + list(args or [])
        if kind in ("custom", "container"):
            section = trainjob_spec.trainer_section(trainer, command, extra_env)
        body = trainjob_spec.apply_options(
            trainjob_spec.trainjob(name, resolved, section, init), opts)
        self._call("create", f"{KIND}: {self.namespace}/{name}", self._backend.create_job,
                   body, KIND, self.namespace, None, _TIMEOUT)
        logger.debug("%s %s/%s has been created", KIND, self.namespace, name)
        return name

    def _check_refusals(self, opts):
        """ValueError naming each option that sets a field this backend cannot honour."""
        refused = self._backend.trainjob_refusals([f for _, f in opts.fields])
        if not refused:
            return
        notes = [f"{label} sets {f}, which the {self.backend_name} backend cannot honour: "
                 f"{refused[f]}" for label, f in opts.fields if f in refused]
        raise ValueError("; ".join(dict.fromkeys(notes)))

    def _check_free(self, name):
        """ValueError when a TrainJob of the ``Name`` option's name exists (locally its
        function file would be overwritten before the runner refused the name)."""
        jobs = self._call("list", f"{KIND}s in namespace: {self.namespace}",
                          self._backend.list_jobs, self.namespace, KIND, _TIMEOUT)
        if any((j.get("metadata") or {}).get("name") == name for j in jobs):
            raise ValueError(f"Name option: TrainJob {self.namespace}/{name} already exists "
                             f"(backend {self.backend_name})")

    def get_runtime_packages(self, runtime):
        """Prints the Python version, the installed packages (as ``pip list`` prints them) and,
        where ``nvidia-smi`` exists, the GPUs of where the runtime's trainer runs (``runtime``:
        a Runtime or a name). On a cluster (and locally in containers) one node of a TrainJob
        on the runtime prints them and is deleted; locally as processes, the interpreter that
        runs functions does (``$TRAINCTL_PYTHON``, else this one). ValueError for a torchtune
        runtime (BuiltinTrainer), as upstream."""
        wanted = runtime if isinstance(runtime, str) else getattr(runtime, "name", None)
        if not wanted:
            raise ValueError(f"runtime must be a name or a Runtime, got {runtime!r}")
        resolved = self._runtime_named(wanted)
        if resolved.trainer.trainer_type == types.TrainerType.BUILTIN_TRAINER:
            raise ValueError(f"runtime {resolved.name} runs a BuiltinTrainer: its packages "
                             "cannot be listed (no function runs on it)")
        source = trainjob_spec.function_source(runtime_packages.print_packages, None)
        text = self._call("get", f"packages of runtime {resolved.name}",
                          self._backend.runtime_packages, source,
                          lambda: self._packages_by_trainjob(resolved))
        print(text.rstrip("\n"))

    def _packages_by_trainjob(self, runtime):
        """One node of a TrainJob on ``runtime`` runs print_packages (with one CPU unless the
        runtime's trainer has GPUs; on an MPI runtime as one rank); returns its log."""
        trainer = types.CustomTrainer(
            func=runtime_packages.print_packages, num_nodes=1,
            resources_per_node=None if runtime.trainer.device == "gpu" else {"cpu": 1})
        launcher = ["mpirun", "-np", "1"] if trainjob_spec.is_mpi(runtime) else None
        name = self._train(runtime, None, trainer, None, launcher=launcher)
        try:
            self.wait_for_job_status(name)
            return "\n".join(self.get_job_logs(name))
        finally:
            try:
                self.delete_job(name)
            except Exception:
                logger.exception("could not delete TrainJob %s/%s that get_runtime_packages "
                                 "made", self.namespace, name)

    # ------------------------------------------------------------------------------------
    # read

    def list_jobs(self, runtime=None):
        """The TrainJobs of the namespace; with ``runtime`` (a Runtime or a name) only those
        that name it."""
        wanted = runtime if isinstance(runtime, str) or runtime is None else runtime.name
        jobs = self._call("list", f"{KIND}s in namespace: {self.namespace}",
                          self._backend.list_jobs, self.namespace, KIND, _TIMEOUT)
        runtimes = self._runtimes() if jobs else {}
        return [self._view(j, runtimes) for j in jobs
                if wanted is None or trainjob_view.runtime_ref(j) == wanted]

    def _get_dict(self, name):
        return self._call("get", f"{KIND}: {self.namespace}/{name}", self._backend.get_job,
                          name, self.namespace, KIND, _TIMEOUT)

    def get_job(self, name):
        """The TrainJob ``name`` with its steps and status."""
        return self._view(self._get_dict(name), self._runtimes())

    def get_job_logs(self, name, step="node-0", follow=False):
        """An iterator of the log lines of one step (``node-0``, ``node-1``,
        ``dataset-initializer``…). Without ``follow``: what the step's pod has written (nothing
        while it is Pending); with it, lines as they come until the step ends, waiting for a
        pod not started yet."""
        job = self.get_job(name)
        pod = next((s for s in job.steps if s.name == step and s.status != "Pending"), None)
        container = trainjob_view.container_for_step(step)
        if follow:
            selector = trainjob_view.selector_for_step(name, step, job.runtime)
            return self._follow(name, selector, pod.pod_name if pod is not None else None)
        if pod is None:
            return iter(())
        return self._read(name, pod.pod_name, container)

    def _read(self, name, pod_name, container):
        pods = self._call("list", f"{KIND}'s steps: {self.namespace}/{name}",
                          self._backend.job_pods, name, self.namespace, KIND,
                          {trainjob_view.JOBSET_NAME_LABEL: name}, _TIMEOUT)
        pod = next((p for p in pods if p.metadata.name == pod_name), None)
        if pod is None:
            return iter(())
        text = self._call("read", f"logs for the pod {self.namespace}/{pod_name}",
                          self._backend.pod_log, pod, self.namespace, container)
        return iter((text or "").splitlines())

    def _follow(self, name, selector, pod_name):
        stream = self._backend.follow_job_logs(name, self.namespace, KIND, selector, _TIMEOUT)
        for pod, line in stream:
            if pod_name is None or pod == pod_name:
                yield line

    def get_job_events(self, name):
        """The events of the TrainJob, its JobSet, Jobs and pods, oldest first."""
        job = self.get_job(name)
        events = self._call("get", f"{KIND} events: {self.namespace}/{name}",
                            self._backend.job_events, name, self.namespace, KIND)
        return trainjob_view.events_of(job, events)

    # ------------------------------------------------------------------------------------
    # wait, delete

    def wait_for_job_status(self, name, status={types.TRAINJOB_COMPLETE}, timeout=600,
                            polling_interval=2, callbacks=None):
        """Polls until the TrainJob's status is in ``status`` and returns it. RuntimeError
        when it is Failed and Failed is not expected (naming the first failed node where the
        backend knows it); TimeoutError saying the status it has."""
        status = set(status)
        if not status <= types.TRAINJOB_STATUSES:
            raise ValueError(f"Expected status {status} must be a subset of "
                             f"{set(types.TRAINJOB_STATUSES)}")
        if timeout <= 0:
            raise ValueError(f"Timeout must be a positive number, got timeout={timeout}")
        if polling_interval <= 0:
            raise ValueError("Polling interval must be a positive number, got "
                             f"polling_interval={polling_interval}")
        if polling_interval >= timeout:
            raise ValueError("Polling interval must be strictly less than timeout. Received "
                             f"polling_interval={polling_interval}, timeout={timeout}")
        deadline = time.monotonic() + timeout
        job = None
        while True:
            job = self.get_job(name)
            for callback in callbacks or []:
                callback(job)
            if job.status == types.TRAINJOB_FAILED and types.TRAINJOB_FAILED not in status:
                raise RuntimeError(f"TrainJob {name} is Failed{self._failure_note(name)}")
            if job.status in status:
                return job
            if time.monotonic() + polling_interval > deadline:
                break
            time.sleep(polling_interval)
        raise TimeoutError(f"Timeout waiting for TrainJob {name} to reach status: {status} "
                           f"status (it is {job.status})")

    def _failure_note(self, name):
        """": <node> exited with code N; last lines: …" where the backend can say."""
        try:
            job = self._get_dict(name)
            conditions = [_Condition(c) for c in
                          ((job.get("status") or {}).get("conditions")) or []]
            failure = self._backend.first_failure(name, self.namespace, KIND, conditions)
        except Exception:
            return ""
        if not failure:
            return ""
        lines = "\n".join(failure.get("lastLogLines") or [])
        note = f": {failure.get('name')} exited with code {failure.get('exitCode')}"
        return note + (f"; its last lines:\n{lines}" if lines else "")

    def delete_job(self, name):
        """Deletes the TrainJob (its pods go with it)."""
        self._call("delete", f"{KIND}: {self.namespace}/{name}", self._backend.delete_job,
                   name, self.namespace, KIND, None, False, _TIMEOUT)


class _Condition:
    """A condition dict read as the attribute object ``first_failure`` takes."""

    def __init__(self, c):
        self.type, self.status = c.get("type"), c.get("status")
        self.reason, self.message = c.get("reason"), c.get("message")
