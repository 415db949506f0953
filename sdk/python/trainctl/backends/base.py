"""The one protocol both substrates implement for the SDK's clients (``TrainingClient`` for the
kubeflow.org/v1 kinds, ``TrainerClient`` for TrainJobs): ``JobBackend``. A client does the
argument handling, the models, conditions and waiting, and asks its backend only for what
differs by substrate; it holds no ``if backend`` branch. Two implementations: ``LocalBackend``
(this machine, through the ``trainctl`` binary) and ``KubernetesBackend`` (a cluster's API).

Jobs travel as JSON dicts (camelCase, as the API server stores them); pods as ``V1Pod`` models.
``kind`` is a v1 kind or ``"TrainJob"``; a TrainJob's pods carry JobSet's labels
(``jobset.sigs.k8s.io/jobset-name``, ``…/replicatedjob-name``,
``batch.kubernetes.io/job-completion-index``) on both substrates, and its log container is
``node`` for trainer nodes, the initializer's name for an initializer.
Errors: ``BackendError`` (or a subclass) for a failure the substrate reported; ValueError for a
request it refuses; TimeoutError; the client maps the rest to upstream's exception types.
"""

import abc

from .. import constants
from .. import job_builder


class BackendError(Exception):
    """A substrate reported a failure; str() is its message."""


class JobBackend(abc.ABC):
    name = ""

    @abc.abstractmethod
    def default_namespace(self):
        """The namespace a client uses when none is given."""

    # -- jobs -------------------------------------------------------------------------------

    @abc.abstractmethod
    def create_job(self, body, kind, namespace, workdir, timeout):
        """Creates the job; ``workdir``: where its relative paths resolve (local only)."""

    @abc.abstractmethod
    def get_job(self, name, namespace, kind, timeout):
        """The job as a dict."""

    @abc.abstractmethod
    def list_jobs(self, namespace, kind, timeout):
        """The jobs of a kind in the namespace, as dicts."""

    @abc.abstractmethod
    def update_job(self, name, namespace, kind, wanted, timeout):
        """Makes the job what ``wanted`` (a dict) says, as far as the substrate allows
        (locally only its labels and annotations: ValueError for a changed spec)."""

    @abc.abstractmethod
    def delete_job(self, name, namespace, kind, delete_options, delete_workspace, timeout):
        """Deletes the job; with ``delete_workspace`` also the claims its replicas mount
        (locally their folders) and the credentials Secret ``train()`` made."""

    @abc.abstractmethod
    def job_metrics(self, name, namespace, kind):
        """``trainctl metrics -o json``'s document for the job."""

    @abc.abstractmethod
    def workspace(self, name, namespace):
        """Where ``train(name)`` keeps its files: a folder path, or ``pvc://<ns>/<name>``."""

    @abc.abstractmethod
    def list_runtimes(self, namespace, timeout):
        """The Trainer v2 runtimes a TrainJob in ``namespace`` may name, as dicts: every
        ClusterTrainingRuntime and the namespace's TrainingRuntimes (``kind`` set on each)."""

    def queue_exists(self, queue_name, namespace):
        """Whether Kueue's LocalQueue exists: True, False, or None when unknown."""
        return None

    # -- replicas, logs, events -------------------------------------------------------------

    @abc.abstractmethod
    def job_pods(self, name, namespace, kind, selector, timeout):
        """The job's replicas whose labels match ``selector`` (a dict), as V1Pod models."""

    @abc.abstractmethod
    def pod_log(self, pod, namespace, container):
        """The whole log of ``pod`` (a model from ``job_pods``)."""

    @abc.abstractmethod
    def follow_job_logs(self, name, namespace, kind, selector, timeout):
        """Yields (pod name, line) as the selected replicas write them, until they end;
        replicas not started yet are waited for."""

    @abc.abstractmethod
    def job_events(self, name, namespace, kind):
        """Events as {kind, name, time, message}, of the job and its replicas (and possibly
        others in the namespace: the client selects)."""

    @abc.abstractmethod
    def first_failure(self, name, namespace, kind, conditions):
        """{"name", "exitCode", "lastLogLines"} of the replica that failed first, or None;
        ``conditions``: the job's (their "First failure: <name>" names it where known)."""

    # -- TrainJobs --------------------------------------------------------------------------

    def trainjob_refusals(self, fields):
        """{field: why} for the TrainJob fields in ``fields`` (trainjob_spec's paths, as
        ``train()``'s options set them) that this substrate cannot honour. None by default: the
        API server takes every field, and the controller serving it acts on them."""
        return {}

    def builtin_trainer_refusal(self, namespace):
        """Why a BuiltinTrainer (TorchTune) cannot run here, or None where it can."""
        return None

    def runtime_packages(self, source, by_trainjob):
        """The output of ``source`` (a program printing its interpreter's version, packages
        and GPUs) where a runtime's trainer runs. By default ``by_trainjob()``: one node of a
        TrainJob on the runtime runs it and its log is returned."""
        return by_trainjob()

    # -- functions and fine-tuning ----------------------------------------------------------

    def function_command(self, name, namespace, source, entrypoint, packages_to_install,
                         pip_index_url, annotations):
        """(command, args, extra env) that run a function's ``source`` for the job: by default
        in the job's image, as on a cluster."""
        return (list(constants.DEFAULT_COMMAND),
                [job_builder.container_script(source, entrypoint, packages_to_install,
                                              pip_index_url)], {})

    def check_image_entrypoint(self, annotations):
        """Raises NotImplementedError where a job of an image's own entrypoint cannot run."""

    @abc.abstractmethod
    def fine_tune(self, client, name, namespace, queue_name, trainer_image, initializer_image,
                  **kwargs):
        """``TrainingClient.train()``'s work on this substrate (api/llm.py)."""
