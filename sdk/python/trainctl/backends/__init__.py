"""Backend choice, the same rule as the CLI's ``--backend``: an explicit ``backend`` argument,
else ``$TRAINCTL_BACKEND``, else ``kubernetes`` when a kubeconfig (``config_file``,
``$KUBECONFIG``, ``~/.kube/config``) or an in-cluster service account exists, else ``local``."""

import os

BACKENDS = ("local", "kubernetes")


def choose(backend=None, config_file=None, client_configuration=None):
    """The backend name; ValueError naming the argument (or variable) for an unknown one."""
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
        return backend
    env = os.environ.get("TRAINCTL_BACKEND", "")
    if env:
        if env not in BACKENDS:
            raise ValueError(f"$TRAINCTL_BACKEND must be one of {list(BACKENDS)}, got {env!r}")
        return env
    from .kubernetes import kubeconfig_exists
    if client_configuration is not None or kubeconfig_exists(config_file):
        return "kubernetes"
    return "local"


def make_backend(backend=None, config_file=None, context=None, client_configuration=None,
                 state_dir=None, runtime=None):
    """The JobBackend (backends/base.py) ``choose`` picks, made. ``runtime`` ("process",
    "podman", "docker") applies to the local backend only: ValueError on a cluster, where the
    kubelet runs every replica in its image."""
    name = choose(backend, config_file, client_configuration)
    if name == "local":
        from .local import LocalBackend
        return LocalBackend(state_dir=state_dir, runtime=runtime)
    if runtime not in (None, "process"):
        raise ValueError("runtime applies to the local backend; on a cluster the "
                         "kubelet runs every replica in its image")
    from .kubernetes import KubernetesBackend
    return KubernetesBackend(config_file, context, client_configuration)
