"""trainctl's backends for users who keep the ``kubeflow`` SDK's own ``TrainerClient``: its public
``backend`` attribute takes any ``kubeflow.trainer.backends.base.RuntimeBackend``, and
``runtime_backend()`` makes one that runs through trainctl (kubeflow/sdk#77's pattern)::

    client = kubeflow.trainer.TrainerClient()
    client.backend = trainctl.kubeflow_backend.runtime_backend("local")

Every call of that ``TrainerClient`` then goes to ``trainctl.TrainerClient`` with the same
arguments: on this machine several nodes of any runtime, processes or containers
(``runtime="podman"|"docker"``), jobs kept across kernel restarts (``state_dir``); or a cluster
(``"kubernetes"``). What it returns are trainctl's dataclasses, with the ``kubeflow`` types'
field names; ``train(options=...)`` takes ``kubeflow.trainer.options``' objects (read by class
and field: trainctl decides which of them each backend honours, not the options' own backend
check) and ``get_runtime_packages`` prints as upstream's does. Needs the ``kubeflow`` package
(0.5.x) importable: ImportError saying so otherwise.
"""

from .api.trainer_client import TrainerClient


def runtime_backend(backend="local", **kwargs):
    """A ``kubeflow.trainer`` RuntimeBackend over ``trainctl.TrainerClient(backend=backend,
    **kwargs)`` (``namespace``, ``state_dir``, ``runtime``, ``config_file``, ``context``)."""
    try:
        from kubeflow.trainer.backends.base import RuntimeBackend
    except ImportError as e:
        raise ImportError("trainctl.kubeflow_backend needs the kubeflow SDK (pip install "
                          f"'kubeflow==0.5.*'): {e}") from e
    return _backend_class(RuntimeBackend)(TrainerClient(backend=backend, **kwargs))


_classes = {}


def _backend_class(base):
    """The RuntimeBackend subclass for `base` (made once): each abstract method delegates."""
    if base in _classes:
        return _classes[base]

    class TrainctlRuntimeBackend(base):
        def __init__(self, client):
            self.client = client

        def list_runtimes(self):
            return self.client.list_runtimes()

        def get_runtime(self, name):
            return self.client.get_runtime(name)

        def get_runtime_packages(self, runtime):
            return self.client.get_runtime_packages(runtime)

        def train(self, runtime=None, initializer=None, trainer=None, options=None):
            return self.client.train(runtime=runtime, initializer=initializer, trainer=trainer,
                                     options=options)

        def list_jobs(self, runtime=None):
            return self.client.list_jobs(runtime=runtime)

        def get_job(self, name):
            return self.client.get_job(name)

        def get_job_logs(self, name, follow=False, step="node-0"):
            return self.client.get_job_logs(name, follow=follow, step=step)

        def get_job_events(self, name):
            return self.client.get_job_events(name)

        def wait_for_job_status(self, name, status={"Complete"}, timeout=600, polling_interval=2,
                                callbacks=None):
            return self.client.wait_for_job_status(name, status=status, timeout=timeout,
                                                   polling_interval=polling_interval,
                                                   callbacks=callbacks)

        def delete_job(self, name):
            return self.client.delete_job(name)

    TrainctlRuntimeBackend.__qualname__ = TrainctlRuntimeBackend.__name__
    _classes[base] = TrainctlRuntimeBackend
    return TrainctlRuntimeBackend
