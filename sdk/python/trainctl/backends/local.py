"""The ``local`` backend: jobs (the v1 kinds and TrainJobs) run on this machine through the
``trainctl`` binary.

Mutations go through the CLI (``trainctl run - --detach``, ``delete``, ``patch``); reads through
``trainctl describe/get -o json``, whose documents carry the job, its replicas (as pods: name,
labels, phase, exit code, restarts, log file) and events. Job state lives in the runner's state
folder, so jobs outlive the Python process: a restarted kernel finds them again. Nothing here
re-implements the runner's semantics.

Errors: ``LocalError`` with the CLI's message and exit status; the client turns it into the
upstream exception types. Thread-safe (no shared mutable state besides the shim folder, which
is written atomically).
"""

import contextlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from .. import constants
from .. import models
from .. import trainjob_spec
from .base import BackendError, JobBackend

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class LocalError(BackendError):
    """A trainctl command failed: ``code`` is its exit status, str() its message."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def find_trainctl(explicit=None):
    """The trainctl binary: the argument, $TRAINCTL_BIN, the repository's build, then PATH."""
    candidates = [explicit, os.environ.get("TRAINCTL_BIN")]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(_PACKAGE_DIR)))  # sdk/python/trainctl
    candidates.append(os.path.join(repo, "build", "release", "trainctl"))
    candidates.append(shutil.which("trainctl"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise RuntimeError(
        "the local backend needs the trainctl binary: build it (make build) or set "
        "$TRAINCTL_BIN; looked in " + ", ".join(c for c in candidates if c))


def default_state_dir():
    """The runner's default, as the CLI computes it."""
    if os.environ.get("TRAINCTL_STATE_DIR"):
        return os.environ["TRAINCTL_STATE_DIR"]
    if os.environ.get("XDG_STATE_HOME"):
        return os.path.join(os.environ["XDG_STATE_HOME"], "trainctl")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "trainctl")


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def missing_packages(packages, python=None):
    """The requirement strings of ``packages`` that this interpreter does not satisfy."""
    missing = []
    for spec in packages:
        m = _REQUIREMENT.match(str(spec))
        if not m:
            missing.append(f"{spec} (not a requirement)")
            continue
        name, constraint = m.group(1), m.group(3).strip()
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{spec} (not installed)")
            continue
        if constraint:
            try:
                from packaging.specifiers import SpecifierSet
                if not SpecifierSet(constraint).contains(version, prereleases=True):
                    missing.append(f"{spec} (installed: {version})")
            except ImportError:
                pass  # no packaging module: the name check is all we can do
            except Exception:
                missing.append(f"{spec} (cannot read the version constraint)")
    return missing


class LocalBackend(JobBackend):
    name = "local"

    def __init__(self, state_dir=None, trainctl_bin=None, runtime=None):
        if runtime not in (None, "process", "podman", "docker"):
            raise ValueError(f"runtime must be process, podman or docker, not {runtime!r}")
        # None: the job's trainctl.dev/runtime annotation, else $TRAINCTL_RUNTIME, else process.
        self.runtime = runtime
        self.state_dir = os.path.abspath(state_dir or default_state_dir())
        self.trainctl = find_trainctl(trainctl_bin)
        # A function runs with the caller's interpreter (a notebook's kernel: its packages),
        # unless $TRAINCTL_PYTHON names another (one with the frameworks the job needs).
        self.python = os.environ.get("TRAINCTL_PYTHON") or sys.executable
        self._secrets = {}  # job name → {Secret name: folder} for the next create

    def runs_containers(self, annotations=None):
        """Whether a job created now runs its replicas in their images: the runtime given to
        the client, else the job's trainctl.dev/runtime annotation, else $TRAINCTL_RUNTIME."""
        chosen = (self.runtime or (annotations or {}).get("trainctl.dev/runtime")
                  or os.environ.get("TRAINCTL_RUNTIME") or "process")
        return chosen in ("podman", "docker")

    @contextlib.contextmanager
    def secrets_for(self, job_name, secrets):
        """Within the block, creating ``job_name`` gives ``trainctl run`` these Secrets."""
        self._secrets[job_name] = secrets
        try:
            yield
        finally:
            self._secrets.pop(job_name, None)

    def write_secret(self, namespace, secret_name, data):
        """Writes a Secret as a private folder (a file per key, 0600 in a 0700 folder) that
        ``trainctl run --secret`` reads; returns the folder."""
        folder = os.path.join(self.state_dir, ".sdk", "secrets", namespace, secret_name)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
        for key, value in data.items():
            path = os.path.join(folder, key)
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(value)
            os.replace(path + ".tmp", path)
        return folder

    def remove_secret(self, namespace, secret_name):
        shutil.rmtree(os.path.join(self.state_dir, ".sdk", "secrets", namespace, secret_name),
                      ignore_errors=True)

    # -- plumbing ---------------------------------------------------------------------------

    def _run(self, args, stdin=None, env=None, timeout=None):
        cmd = [self.trainctl, "--backend", "local", "--state-dir", self.state_dir] + args
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env,
                               timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise TimeoutError(f"trainctl {' '.join(args)} did not answer in {timeout}s") from e
        if p.returncode != 0:
            msg = (p.stderr or p.stdout).strip()
            if msg.startswith("error: "):
                msg = msg[len("error: "):]
            raise LocalError(msg or f"trainctl exited with {p.returncode}", p.returncode)
        return p.stdout

    def _json(self, args, timeout=None):
        out = self._run(args + ["-o", "json"], timeout=timeout)
        try:
            return json.loads(out)
        except ValueError as e:
            raise LocalError(f"trainctl printed no JSON for {' '.join(args)}: {out[:200]!r}",
                             1) from e

    def shim_dir(self):
        """A folder whose python, python3 and torchrun run this interpreter (first on PATH)."""
        key = re.sub(r"[^A-Za-z0-9]", "_", self.python)[-80:]
        folder = os.path.join(self.state_dir, ".sdk", "bin", key)
        scripts = {
            "python": f'#!/bin/sh\nexec "{self.python}" "$@"\n',
            "python3": f'#!/bin/sh\nexec "{self.python}" "$@"\n',
            "torchrun": f'#!/bin/sh\nexec "{self.python}" -m torch.distributed.run "$@"\n',
        }
        os.makedirs(folder, exist_ok=True)
        for name, text in scripts.items():
            path = os.path.join(folder, name)
            try:
                with open(path) as f:
                    if f.read() == text:
                        continue
            except OSError:
                pass
            fd, tmp = tempfile.mkstemp(dir=folder)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        return folder

    # -- function jobs ----------------------------------------------------------------------

    def function_container(self, name, namespace, source, entrypoint, packages_to_install,
                           pip_index_url, pip_index_url_given):
        """(command, args, env) that run ``source`` here: the file is written, no heredoc."""
        if packages_to_install and not pip_index_url_given:
            missing = missing_packages(packages_to_install)
            if missing:
                raise ValueError(
                    "packages_to_install: not available to " + self.python + ": " +
                    ", ".join(missing) + ". Install them into this environment, or pass "
                    "pip_index_url to let the job pip-install them")
        folder = os.path.join(self.state_dir, ".sdk", "functions", namespace, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "ephemeral_script.py")
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        run = entrypoint.split() + [path]
        env = {}
        if entrypoint.split()[0] == "torchrun":
            env.update(torchrun_workaround_env())
        if packages_to_install and pip_index_url_given:
            from ..job_builder import pip_install_script
            import shlex
            script = pip_install_script(packages_to_install, pip_index_url)
            script += "exec " + " ".join(shlex.quote(a) for a in run) + "\n"
            return ["bash", "-c"], [script], env
        return run, None, env

    # -- jobs -------------------------------------------------------------------------------

    def create(self, job, kind, namespace, workdir=None):
        env = dict(os.environ)
        env["PATH"] = self.shim_dir() + os.pathsep + env.get("PATH", "")
        args = ["run", "-", "--detach", "--workdir", workdir or os.getcwd()]
        if self.runtime:
            args += ["--runtime", self.runtime]
        name = (job.get("metadata") or {}).get("name")
        for secret, folder in self._secrets.get(name, {}).items():
            args += ["--secret", f"{secret}={folder}"]
        self._run(args, stdin=json.dumps(job), env=env, timeout=120)

    def describe(self, name, namespace, kind=None):
        ref = [kind.lower(), name] if kind else [name]
        return self._json(["-n", namespace, "describe"] + ref)

    def get(self, name, namespace, kind):
        return self.describe(name, namespace, kind)["job"]

    def list(self, namespace, kind):
        doc = self._json(["-n", namespace, "get", kind.lower()])
        return doc.get("items", []) if doc.get("kind") == "List" else [doc]

    def patch(self, name, namespace, kind, body):
        self._run(["-n", namespace, "patch", kind.lower(), name, "-p", json.dumps(body)])

    def delete(self, name, namespace, kind, delete_workspace=False):
        self._run(["-n", namespace, "delete", kind.lower(), name] +
                  (["--delete-workspace"] if delete_workspace else []), timeout=120)

    def metrics(self, name, namespace, kind):
        """``trainctl metrics -o json``: the series of the job's metrics replica."""
        return self._json(["-n", namespace, "metrics", kind.lower(), name], timeout=120)

    def workspaces(self, name, namespace, kind):
        """[{"claim", "path"}]: the folders standing in for the job's PVCs."""
        return self.describe(name, namespace, kind).get("workspaces", [])

    # -- pods, logs, events -----------------------------------------------------------------

    def pods(self, name, namespace, kind, doc=None):
        """The job's replicas as pod JSON (v1 Pod shape), in replica order."""
        if doc is None:
            try:
                doc = self.describe(name, namespace, None)
            except LocalError as e:
                if "names several jobs" not in str(e):
                    raise
                doc = self.describe(name, namespace, kind)
        container = _default_container(doc["job"])
        return [_pod_of(r, namespace, container, doc["job"]) for r in doc.get("replicas", [])]

    def read_log(self, pod):
        path = pod.get("_logFile")
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def follow(self, name, namespace, kind, select, poll=0.2, stop=None):
        """Yields (pod name, line) as replicas write them, waiting for replicas to start,
        until the job has finished and every log is drained. ``select(pods)`` picks pods."""
        offsets, partial = {}, {}
        last_check = 0.0
        finished = False
        pods = []
        while True:
            now = time.monotonic()
            if now - last_check >= 1.0 or not pods:
                doc = self.describe(name, namespace, kind)
                pods = select([_pod_of(r, namespace, "", doc["job"])
                               for r in doc.get("replicas", [])])
                finished = _finished(doc["job"]) and not doc["runner"]["active"]
                last_check = now
            for pod in pods:
                pname = pod["metadata"]["name"]
                for line in _read_new(pod.get("_logFile"), pname, offsets, partial,
                                      flush=finished):
                    yield pname, line
            if finished:
                return
            if stop is not None and stop():
                return
            time.sleep(poll)

    def events(self, name, namespace, kind, doc=None):
        """Events as {kind, name, time (RFC 3339), message}."""
        if doc is None:
            doc = self.describe(name, namespace, kind)
        out = []
        for e in doc.get("events", []):
            obj = e.get("object", "")
            ekind, _, ename = obj.partition("/")
            out.append({"kind": ekind, "name": ename, "time": e.get("time"),
                        "message": e.get("message", ""), "reason": e.get("reason", "")})
        return out

    def failure(self, name, namespace, kind):
        try:
            return self.describe(name, namespace, kind).get("failure")
        except LocalError:
            return None

    # -- the JobBackend protocol (backends/base.py) ------------------------------------------

    def default_namespace(self):
        return constants.DEFAULT_NAMESPACE

    def create_job(self, body, kind, namespace, workdir, timeout):
        self.create(body, kind, namespace, workdir)

    def get_job(self, name, namespace, kind, timeout):
        return self.get(name, namespace, kind)

    def list_jobs(self, namespace, kind, timeout):
        return self.list(namespace, kind)

    def update_job(self, name, namespace, kind, wanted, timeout):
        # The job as the client's models read it, so that only a real change differs.
        model = models.KIND_MODELS[kind]
        current = models.serialize(models.deserialize(self.get(name, namespace, kind), model))
        self.patch(name, namespace, kind, local_patch(current, wanted))

    def delete_job(self, name, namespace, kind, delete_options, delete_workspace, timeout):
        self.delete(name, namespace, kind, delete_workspace)
        if delete_workspace:
            from ..storage_initializer import credentials
            self.remove_secret(namespace, credentials.secret_name(name))

    def job_metrics(self, name, namespace, kind):
        return self.metrics(name, namespace, kind)

    def workspace(self, name, namespace):
        spaces = self.workspaces(name, namespace, constants.PYTORCHJOB_KIND)
        mine = [w["path"] for w in spaces if w.get("claim") == name]
        return mine[0] if mine else (spaces[0]["path"] if spaces else None)

    def job_pods(self, name, namespace, kind, selector, timeout):
        return [pod_model(p) for p in self.pods(name, namespace, kind)
                if labels_match(p["metadata"].get("labels") or {}, selector)]

    def pod_log(self, pod, namespace, container):
        return self.read_log(pod._trainctl_raw)

    def follow_job_logs(self, name, namespace, kind, selector, timeout):
        yield from self.follow(name, namespace, kind, lambda pods: [
            p for p in pods if labels_match(p["metadata"].get("labels") or {}, selector)])

    def job_events(self, name, namespace, kind):
        return self.events(name, namespace, kind)

    def first_failure(self, name, namespace, kind, conditions):
        return self.failure(name, namespace, kind)

    def list_runtimes(self, namespace, timeout):
        """``trainctl runtimes list -o json``: built-in, installed (state folder) runtimes;
        TrainingRuntimes of other namespaces left out."""
        items = self._json(["runtimes", "list"], timeout=timeout)
        return [i["object"] for i in items
                if i.get("object") and i.get("namespace", "") in ("", namespace)]

    def function_command(self, name, namespace, source, entrypoint, packages_to_install,
                         pip_index_url, annotations):
        if self.runs_containers(annotations):  # in its image, as on a cluster
            return super().function_command(name, namespace, source, entrypoint,
                                            packages_to_install, pip_index_url, annotations)
        return self.function_container(name, namespace, source, entrypoint, packages_to_install,
                                       pip_index_url,
                                       pip_index_url != constants.DEFAULT_PIP_INDEX_URL)

    def trainjob_refusals(self, fields):
        return {f: _LOCAL_REFUSALS[f] for f in fields if f in _LOCAL_REFUSALS}

    def builtin_trainer_refusal(self, namespace):
        try:
            tune = [(o.get("metadata") or {}).get("name") for o in
                    self.list_runtimes(namespace, None)
                    if ((o.get("metadata") or {}).get("labels") or {}).get(
                        trainjob_spec.FRAMEWORK_LABEL) == trainjob_spec.TORCH_TUNE]
        except LocalError:
            tune = []
        found = (f"the torchtune runtimes installed here ({', '.join(tune)}) cannot run "
                 "either" if tune else "no torchtune runtime is built in or installed here "
                 "(trainctl runtimes list), and torchtune is not packaged here")
        return ("BuiltinTrainer (TorchTune post-training) does not run on the local backend: "
                "the runner does not complete upstream's `tune run` command (the recipe, its "
                "--config and the rendezvous endpoint, which upstream's controller takes from "
                f"the runtime); {found}. It needs a ClusterTrainingRuntime labelled "
                f"{trainjob_spec.FRAMEWORK_LABEL}: torchtune, such as upstream's "
                "torchtune-llama3.2-1b, on a cluster that runs upstream's Trainer controller "
                "(TrainerClient(backend='kubernetes'))")

    def runtime_packages(self, source, by_trainjob):
        """As processes a function runs with this interpreter (``self.python``): it runs the
        program itself. In containers, a TrainJob in the runtime's image, as on a cluster."""
        if self.runs_containers():
            return by_trainjob()
        try:
            p = subprocess.run([self.python, "-c", source], capture_output=True, text=True,
                               timeout=300)
        except subprocess.TimeoutExpired as e:
            raise TimeoutError(f"{self.python} did not list its packages in 300s") from e
        except OSError as e:
            raise LocalError(f"cannot run {self.python}: {e}", 127) from e
        if p.returncode != 0:
            raise LocalError(f"{self.python} exited with {p.returncode}: "
                             f"{(p.stderr or p.stdout).strip()[-2000:]}", p.returncode)
        return p.stdout

    def check_image_entrypoint(self, annotations):
        if not self.runs_containers(annotations):
            raise NotImplementedError(
                "create_job(base_image=...) without train_func runs the image's entrypoint, "
                "which trainctl runs on this machine only in containers: pass "
                "TrainingClient(..., runtime='podman') (or 'docker'), or train_func, or a "
                "manifest whose containers have a command")

    def fine_tune(self, client, name, namespace, queue_name, trainer_image, initializer_image,
                  **kwargs):
        from ..api import llm
        return llm.train_locally(client, name, namespace, queue_name, **kwargs)


_NO_OBJECTS = ("the local runner makes no JobSet, Job or Pod objects: labels and annotations "
               "on their templates would reach nothing (use Labels or Annotations for the "
               "TrainJob's own)")
_NO_SCHEDULER = ("one machine and no scheduler here: node placement has no meaning "
                 "(docs/compatibility.md)")
_NO_SECURITY_CONTEXT = ("the local runner applies no security context: every replica runs as "
                        "the user who runs trainctl")
_POD = trainjob_spec.POD_SPEC
# TrainJob fields the local runner cannot honour, and why (trainjob_refusals).
_LOCAL_REFUSALS = {
    trainjob_spec.JOBSET_METADATA: _NO_OBJECTS,
    trainjob_spec.JOB_METADATA: _NO_OBJECTS,
    trainjob_spec.POD_METADATA: _NO_OBJECTS,
    _POD + ".nodeSelector": _NO_SCHEDULER,
    _POD + ".affinity": _NO_SCHEDULER,
    _POD + ".tolerations": _NO_SCHEDULER,
    _POD + ".schedulingGates": ("a gated pod waits until its gates are removed, and nothing "
                                "removes them here: no scheduler runs"),
    _POD + ".serviceAccountName": ("replicas here have no service account and no API "
                                   "credentials (fieldRef spec.serviceAccountName reads "
                                   "'default')"),
    _POD + ".imagePullSecrets": ("the runner pulls images with this machine's podman or docker "
                                 "login; it reads no pull Secret"),
    _POD + ".securityContext": _NO_SECURITY_CONTEXT,
    _POD + ".containers[].securityContext": _NO_SECURITY_CONTEXT,
    _POD + ".initContainers[].securityContext": _NO_SECURITY_CONTEXT,
}


def labels_match(labels, selector):
    return all(labels.get(k) == v for k, v in selector.items())


def pod_model(raw):
    """A replica's pod JSON as a V1Pod model; the JSON (log file included) stays with it."""
    data = {k: v for k, v in raw.items() if not k.startswith("_")}
    pod = models.deserialize(data, "V1Pod")
    try:
        pod._trainctl_raw = raw
    except AttributeError:
        pass
    return pod


def local_patch(current, wanted):
    """The metadata merge patch a local job accepts; ValueError when the spec differs."""
    if (current.get("spec") or {}) != (wanted.get("spec") or {}):
        raise ValueError("job: a local job's spec cannot change once it runs (only "
                         "metadata.labels and metadata.annotations can); delete and create it")
    body = {"metadata": {}}
    for field in ("labels", "annotations"):
        have = (current.get("metadata") or {}).get(field) or {}
        want = (wanted.get("metadata") or {}).get(field) or {}
        if have != want:
            change = {k: v for k, v in want.items() if have.get(k) != v}
            change.update({k: None for k in have if k not in want})
            body["metadata"][field] = change
    return body


def torchrun_workaround_env():
    """torchrun of torch 1.x crashes at start on Python >= 3.11 unless --redirects and --tee
    name some local rank (pytorch/pytorch#92319); "9:1" names one that does not exist."""
    try:
        major = int(importlib.metadata.version("torch").split(".")[0])
    except Exception:
        return {}
    if major < 2 and sys.version_info >= (3, 11):
        return {"PET_REDIRECTS": "9:1", "PET_TEE": "9:1"}
    return {}


def _finished(job):
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True":
            return True
    return False


def _default_container(job):
    from .. import constants
    params = constants.JOB_PARAMETERS.get(job.get("kind", ""), {})
    return params.get("container", "")


_TRAINJOB_NODE_GROUPS = ("node", "launcher")


def _pod_of(replica, namespace, container, job=None):
    """A replica as pod JSON. A TrainJob's replica gets JobSet's labels, as its pod has on a
    cluster (replicated job = the replica's group, job index = its index), and the container
    its logs are under there (``node``, or the initializer's name)."""
    labels = dict(replica.get("labels", {}))
    if (job or {}).get("kind") == "TrainJob":
        group = replica.get("type", "")
        labels.update({"jobset.sigs.k8s.io/jobset-name": (job.get("metadata") or {}).get("name"),
                       "jobset.sigs.k8s.io/replicatedjob-name": group,
                       "batch.kubernetes.io/job-completion-index": str(replica.get("index", 0))})
        container = "node" if group in _TRAINJOB_NODE_GROUPS else group
    phase = replica.get("phase", "Pending")
    state = {}
    if replica.get("state") == "Running" or phase == "Running":
        state = {"running": {"startedAt": replica.get("startTime")}}
    if phase in ("Succeeded", "Failed") or replica.get("state") in ("Stopped",):
        state = {"terminated": {"exitCode": replica.get("exitCode", 0),
                                "startedAt": replica.get("startTime"),
                                "finishedAt": replica.get("finishTime"),
                                "reason": "Completed" if phase == "Succeeded" else "Error"}}
    status = {"phase": phase, "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
              "startTime": replica.get("startTime"),
              "containerStatuses": [{"name": container, "ready": phase == "Running",
                                     "restartCount": replica.get("restarts", 0),
                                     "image": "", "imageID": "", "state": state}]}
    if replica.get("message"):
        status["message"] = replica["message"]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": replica.get("name"), "namespace": namespace,
                     "labels": labels,
                     "creationTimestamp": replica.get("startTime")},
        "spec": {"nodeName": "localhost", "containers": [{"name": container}]},
        "status": status,
        "_logFile": replica.get("logFile"),
    }


def _read_new(path, key, offsets, partial, flush):
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(offsets.get(key, 0))
            data = f.read()
            offsets[key] = f.tell()
    except OSError:
        return []
    text = partial.get(key, "") + data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    partial[key] = lines.pop()
    if flush and partial[key]:
        lines.append(partial[key])
        partial[key] = ""
    return lines
