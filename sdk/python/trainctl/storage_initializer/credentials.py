"""Where the storage initializer and the trainer find credentials: environment variables that
a job sets from a Secret (``secretKeyRef``; locally, ``trainctl run --secret`` resolves the same
reference from a private folder), never arguments or plain env values in the job. ``NAME`` or,
when unset, the content of the file ``NAME_FILE``.

``ENV`` maps each credential to its variable; ``SECRET_KEYS`` to its key in the Secret the SDK
makes (``<job name>-credentials``)."""

import os

ENV = {
    "model_token": "TRAINCTL_MODEL_TOKEN",
    "dataset_token": "TRAINCTL_DATASET_TOKEN",
    "hub_token": "TRAINCTL_HUB_TOKEN",
    "s3_access_key": "AWS_ACCESS_KEY_ID",
    "s3_secret_key": "AWS_SECRET_ACCESS_KEY",
}
SECRET_KEYS = {
    "model_token": "model-token",
    "dataset_token": "dataset-token",
    "hub_token": "hub-token",
    "s3_access_key": "s3-access-key",
    "s3_secret_key": "s3-secret-key",
}


# The fields of the parameter classes that hold a credential: never serialised into a job.
PARAMETER_FIELDS = ("access_token", "access_key", "secret_key")


def secret_name(job_name):
    return f"{job_name}-credentials"


def read(what, environ=None):
    """The credential ``what`` (a key of ENV), or None."""
    environ = os.environ if environ is None else environ
    name = ENV[what]
    if environ.get(name):
        return environ[name].strip()
    path = environ.get(name + "_FILE")
    if path:
        try:
            with open(path) as f:
                return f.read().strip() or None
        except OSError:
            return None
    return None
