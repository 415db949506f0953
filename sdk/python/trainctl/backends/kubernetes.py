"""The ``kubernetes`` backend: jobs are kubeflow.org/v1 custom objects on a cluster, run by
``trainctl operator`` (or upstream's operator). Uses the ``kubernetes`` package for auth and
REST (kubeconfig, exec plugins, in-cluster), as upstream's SDK does.

Errors: the ``kubernetes`` package's ApiException, ``multiprocessing.TimeoutError`` for request
timeouts; the client maps them to upstream's exception types. Thread-safe as the kubernetes
client is.
"""

import codecs
import datetime
import os
import queue
import socket
import threading
import time

from .. import constants
from .base import JobBackend

GROUP, VERSION = constants.GROUP, constants.VERSION
TRAINER_GROUP, TRAINER_VERSION, TRAINJOB_KIND = "trainer.kubeflow.org", "v1alpha1", "TrainJob"
_RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
_JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _k8s():
    try:
        import kubernetes  # noqa: F401
        from kubernetes import client, config, watch
    except ImportError as e:
        raise RuntimeError(
            "the kubernetes backend needs the 'kubernetes' Python package "
            "(Debian: python3-kubernetes; pip: kubernetes)") from e
    return client, config, watch


def in_cluster():
    return os.path.isdir("/var/run/secrets/kubernetes.io/")


def kubeconfig_exists(config_file=None):
    if config_file:
        return True
    if in_cluster():
        return True
    paths = os.environ.get("KUBECONFIG", "")
    for p in paths.split(os.pathsep) if paths else [os.path.expanduser("~/.kube/config")]:
        if p and os.path.isfile(p):
            return True
    return False


class KubernetesBackend(JobBackend):
    name = "kubernetes"

    def __init__(self, config_file=None, context=None, client_configuration=None):
        client, config, watch = _k8s()
        self._watch = watch
        self._config = config
        if client_configuration is None:
            if config_file or not in_cluster():
                config.load_kube_config(config_file=config_file, context=context)
            else:
                config.load_incluster_config()
        api_client = client.ApiClient(client_configuration)
        self.custom_api = client.CustomObjectsApi(api_client)
        self.core_api = client.CoreV1Api(api_client)
        self._config_file, self._context = config_file, context
        self._client_configuration = client_configuration

    def default_namespace(self):
        if in_cluster():
            try:
                with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
                    return f.readline().strip() or constants.DEFAULT_NAMESPACE
            except OSError:
                return constants.DEFAULT_NAMESPACE
        try:
            _, current = self._config.list_kube_config_contexts(config_file=self._config_file)
            if self._context:
                contexts, _ = self._config.list_kube_config_contexts(config_file=self._config_file)
                current = next((c for c in contexts if c["name"] == self._context), current)
            return current["context"].get("namespace") or constants.DEFAULT_NAMESPACE
        except Exception:
            return constants.DEFAULT_NAMESPACE

    # -- jobs (dicts in, dicts out) ---------------------------------------------------------

    def create(self, job, kind, namespace, timeout):
        group, version, plural = _api(kind)
        thread = self.custom_api.create_namespaced_custom_object(
            group, version, namespace, plural, job, async_req=True)
        return thread.get(timeout)

    def get(self, name, namespace, kind, timeout):
        group, version, plural = _api(kind)
        thread = self.custom_api.get_namespaced_custom_object(
            group, version, namespace, plural, name, async_req=True)
        return thread.get(timeout)

    def list(self, namespace, kind, timeout):
        group, version, plural = _api(kind)
        thread = self.custom_api.list_namespaced_custom_object(
            group, version, namespace, plural, async_req=True)
        return thread.get(timeout).get("items") or []

    def patch(self, name, namespace, kind, body, timeout):
        group, version, plural = _api(kind)
        thread = self.custom_api.patch_namespaced_custom_object(
            group, version, namespace, plural, name, body, async_req=True)
        return thread.get(timeout)

    def delete(self, name, namespace, kind, delete_options, timeout):
        group, version, plural = _api(kind)
        thread = self.custom_api.delete_namespaced_custom_object(
            group, version, namespace, plural, name, body=delete_options, async_req=True)
        return thread.get(timeout)

    def delete_if_present(self, what, name, namespace):
        """Deletes a core object ("persistentvolumeclaim" or "secret"); absent is fine."""
        from kubernetes.client.rest import ApiException
        fn = {"persistentvolumeclaim": self.core_api.delete_namespaced_persistent_volume_claim,
              "secret": self.core_api.delete_namespaced_secret}[what]
        try:
            fn(name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise

    def queue_exists(self, queue_name, namespace):
        """True, False (404), or None (unknown); ConnectionError when Kueue answers 500."""
        from kubernetes.client.rest import ApiException
        try:
            self.custom_api.get_namespaced_custom_object(
                group="kueue.x-k8s.io", version="v1beta1", namespace=namespace,
                plural="localqueues", name=queue_name)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            if e.status == 500:
                raise ConnectionError("Kueue webhook or admission controller is not responding.")
            return None

    def metrics(self, name, namespace, kind, timeout=120):
        """``trainctl metrics -o json`` against the cluster: the trainctl binary reads the
        metrics replica's pod log with the kubeconfig this client loaded (``config_file``, else
        what the binary finds: $KUBECONFIG, in-cluster, ~/.kube/config). The binary takes no
        context and no client_configuration object: ValueError when either would differ."""
        import json
        import subprocess

        from .local import find_trainctl
        if self._client_configuration is not None:
            raise ValueError("get_job_metrics on a cluster runs the trainctl binary, which "
                             "cannot use client_configuration: pass config_file")
        if self._context:
            _, current = self._config.list_kube_config_contexts(config_file=self._config_file)
            if (current or {}).get("name") != self._context:
                raise ValueError(f"get_job_metrics on a cluster runs the trainctl binary, which "
                                 f"uses the kubeconfig's current context, not {self._context!r}")
        try:
            binary = find_trainctl()
        except RuntimeError as e:
            raise RuntimeError("get_job_metrics reads a cluster job through the trainctl "
                               f"binary (docs/metrics.md): {e}") from e
        cmd = [binary, "--backend", "kubernetes"]
        if self._config_file:
            cmd += ["--kubeconfig", self._config_file]
        cmd += ["-n", namespace, "metrics", kind.lower(), name, "-o", "json"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise TimeoutError(f"trainctl metrics did not answer in {timeout}s") from e
        if p.returncode != 0:
            raise RuntimeError((p.stderr or p.stdout).strip().removeprefix("error: ")
                               or f"trainctl exited with {p.returncode}")
        return json.loads(p.stdout)

    # -- pods, logs, events -----------------------------------------------------------------

    def pods(self, namespace, label_selector, timeout):
        thread = self.core_api.list_namespaced_pod(namespace, label_selector=label_selector,
                                                   async_req=True)
        return thread.get(timeout).items

    def read_log(self, pod_name, namespace, container):
        return self.core_api.read_namespaced_pod_log(name=pod_name, namespace=namespace,
                                                     container=container)

    def follow(self, pod_names, namespace, container, pod_phase, wait_start=600, grace=2.0):
        """Yields (pod, line) from every pod's log as lines come, one reader thread per pod.
        A pod still Pending is waited for (up to ``wait_start`` seconds) instead of skipped.
        A pod's stream ends when the kubelet closes it, or once the pod has finished (or is
        gone) and nothing came for ``grace`` seconds: some nodes (kwok, a lost kubelet) never
        close a followed stream."""
        out = queue.Queue(maxsize=1000)
        done = object()
        lock = threading.Lock()
        open_streams = {}  # pod -> the HTTP response being read
        opened_at = {}  # pod -> when its stream opened: the quiet period counts from there
        ended = set()  # pods whose stream this loop ended
        last_line = {p: time.monotonic() for p in pod_names}
        stop = threading.Event()

        def put(item):
            while not stop.is_set():
                try:
                    return out.put(item, timeout=1)
                except queue.Full:
                    continue

        def pump(pod):
            try:
                deadline = time.monotonic() + wait_start
                while pod_phase(pod) in (None, constants.POD_PHASE_PENDING):
                    if time.monotonic() > deadline or stop.is_set():
                        return
                    time.sleep(1)
                resp = self.core_api.read_namespaced_pod_log(
                    name=pod, namespace=namespace, container=container, follow=True,
                    _preload_content=False)
                with lock:
                    open_streams[pod] = resp
                    opened_at[pod] = time.monotonic()
                try:
                    for line in _lines(resp):
                        put((pod, line))
                finally:
                    resp.release_conn()
            except Exception as e:  # the API went away: say so in the stream, end this pod
                with lock:
                    quiet = stop.is_set() or pod in ended
                if not quiet:
                    put((pod, f"(log stream ended: {e})"))
            finally:
                put((pod, done))

        for p in pod_names:
            threading.Thread(target=pump, args=(p,), daemon=True).start()
        remaining = set(pod_names)
        try:
            while remaining:
                try:
                    pod, line = out.get(timeout=1)
                except queue.Empty:
                    pod = None
                if pod is not None:
                    if line is done:
                        remaining.discard(pod)
                    elif pod in remaining:
                        last_line[pod] = time.monotonic()
                        yield pod, line
                    continue
                now = time.monotonic()
                for p in sorted(remaining):
                    with lock:
                        resp = open_streams.get(p)
                        quiet_since = max(last_line[p], opened_at.get(p, 0.0))
                    if resp is None or now - quiet_since < grace:
                        continue
                    if pod_phase(p) in _FINISHED:
                        with lock:
                            ended.add(p)
                        _abort(resp)
                        remaining.discard(p)
        finally:
            stop.set()
            with lock:
                for resp in open_streams.values():
                    _abort(resp)

    def events(self, namespace):
        """Events as {kind, name, time (datetime: when it was made), first_time (its
        firstTimestamp, None when unset), message, reason}."""
        items = self.core_api.list_namespaced_event(namespace=namespace).items
        out = []
        for e in items:
            out.append({"kind": e.involved_object.kind, "name": e.involved_object.name,
                        "time": e.metadata.creation_timestamp,
                        "first_time": getattr(e, "first_timestamp", None),
                        "message": e.message, "reason": e.reason})
        return out

    # -- the JobBackend protocol (backends/base.py) ----------------------------------------------

    def create_job(self, body, kind, namespace, workdir, timeout):
        self.create(body, kind, namespace, timeout)

    def get_job(self, name, namespace, kind, timeout):
        return self.get(name, namespace, kind, timeout)

    def list_jobs(self, namespace, kind, timeout):
        return self.list(namespace, kind, timeout)

    def update_job(self, name, namespace, kind, wanted, timeout):
        self.patch(name, namespace, kind, wanted, timeout)

    def delete_job(self, name, namespace, kind, delete_options, delete_workspace, timeout):
        claims = claim_names(self.get(name, namespace, kind, timeout)) if delete_workspace else []
        self.delete(name, namespace, kind, delete_options, timeout)
        for claim in claims:
            self._delete_named("persistentvolumeclaim", claim, namespace, "PVC")
        if delete_workspace:
            from ..storage_initializer import credentials
            self._delete_named("secret", credentials.secret_name(name), namespace, "Secret")

    def _delete_named(self, what, name, namespace, label):
        try:
            self.delete_if_present(what, name, namespace)
        except Exception as e:
            raise RuntimeError(f"{label} {namespace}/{name}: {e}") from e

    def job_metrics(self, name, namespace, kind):
        return self.metrics(name, namespace, kind)

    def workspace(self, name, namespace):
        return f"pvc://{namespace}/{name}"

    def job_pods(self, name, namespace, kind, selector, timeout):
        return self.pods(namespace, _label_selector(selector), timeout)

    def pod_log(self, pod, namespace, container):
        return self.read_log(pod.metadata.name, namespace, container)

    def follow_job_logs(self, name, namespace, kind, selector, timeout):
        pods = self._wait_for_pods(name, namespace, selector, timeout, kind)
        container = _container(kind, selector)

        def phase(pod_name):
            """The pod's phase; "Gone" once deleted, None when unknown."""
            try:
                p = self.core_api.read_namespaced_pod(pod_name, namespace)
                return p.status.phase if p.status else None
            except Exception as e:
                return "Gone" if getattr(e, "status", None) == 404 else None
        yield from self.follow([p.metadata.name for p in pods], namespace, container, phase)

    def _wait_for_pods(self, name, namespace, selector, timeout, kind, wait=600, settle=30):
        """The selected pods, once the job has as many as its spec asks for (the operator
        creates them in batches), or ``settle`` seconds after the first one appeared, or after
        ``wait`` seconds (a gang not admitted yet has none)."""
        deadline = time.monotonic() + wait
        expected, first_seen = None, None
        while True:
            pods = self.job_pods(name, namespace, kind, selector, timeout)
            if expected is None:
                try:
                    expected = expected_pods(self.get(name, namespace, kind, timeout), selector)
                except Exception:
                    expected = None  # unknown: the pods there are all we follow
            now = time.monotonic()
            if pods and first_seen is None:
                first_seen = now
            if pods and (expected is None or len(pods) >= expected or now - first_seen > settle):
                return sorted(pods, key=lambda p: p.metadata.name)
            if now > deadline:
                return sorted(pods, key=lambda p: p.metadata.name)
            time.sleep(1)

    def job_events(self, name, namespace, kind):
        return self.events(namespace)

    def list_runtimes(self, namespace, timeout):
        """The ClusterTrainingRuntimes and the namespace's TrainingRuntimes (a cluster without
        the TrainingRuntime CRD has none: 404 is an empty list)."""
        from kubernetes.client.rest import ApiException
        cluster = self.custom_api.list_cluster_custom_object(
            TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", async_req=True)
        spaced = self.custom_api.list_namespaced_custom_object(
            TRAINER_GROUP, TRAINER_VERSION, namespace, "trainingruntimes", async_req=True)
        out = []
        for thread, kind in ((spaced, "TrainingRuntime"), (cluster, "ClusterTrainingRuntime")):
            try:
                items = thread.get(timeout).get("items") or []
            except ApiException as e:
                if e.status != 404:
                    raise
                items = []
            for item in items:
                item.setdefault("kind", kind)  # list items may come without it
                out.append(item)
        return out

    def first_failure(self, name, namespace, kind, conditions):
        """The failed pod and its log tail (best effort): the one the operator named in the
        job's condition (the engine's one first-failure rule), else, for an operator that names
        none (upstream's) or a pod gone since, the earliest-terminated failed pod."""
        named = first_failed_name(conditions)
        try:
            label = _JOBSET_NAME_LABEL if kind == TRAINJOB_KIND else constants.JOB_NAME_LABEL
            pods = self.pods(namespace, _label_selector({label: name}),
                             constants.DEFAULT_TIMEOUT)
        except Exception:
            return None
        ends = []  # (finished, pod name, exit code)
        for p in pods:
            for cs in (p.status.container_statuses or []) if p.status else []:
                term = (cs.state.terminated if cs.state else None) or \
                    (cs.last_state.terminated if cs.last_state else None)
                if term and term.exit_code:
                    ends.append((term.finished_at or datetime.datetime.max.replace(
                        tzinfo=datetime.timezone.utc), p.metadata.name, term.exit_code))
        chosen = [e for e in ends if e[1] == named] or ends
        if not chosen:
            return None
        worst = min(chosen, key=lambda e: e[0])
        try:
            text = self.read_log(worst[1], namespace, _container(kind, None))
            lines = text.splitlines()[-20:]
        except Exception:
            lines = []
        return {"name": worst[1], "exitCode": worst[2], "lastLogLines": lines}

    def fine_tune(self, client, name, namespace, queue_name, trainer_image, initializer_image,
                  **kwargs):
        from ..api import llm
        return llm.train_on_cluster(client, name, namespace, queue_name,
                                    trainer_image=trainer_image,
                                    initializer_image=initializer_image, **kwargs)


def _label_selector(selector):
    return ",".join(f"{k}={v}" for k, v in selector.items())


def claim_names(job):
    """The claimName of every persistentVolumeClaim volume in a job dict's templates."""
    names = []
    for spec in ((job.get("spec") or {}).get("pytorchReplicaSpecs") or {}).values():
        for v in (((spec or {}).get("template") or {}).get("spec") or {}).get("volumes") or []:
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and claim not in names:
                names.append(claim)
    return names


def first_failed_name(conditions):
    """The replica named by "First failure: <name> (" in the job's Failed or Restarting
    condition (the operator's and the runner's one rule), or None."""
    for c in reversed(conditions or []):
        if c.type in (constants.JOB_CONDITION_FAILED, constants.JOB_CONDITION_RESTARTING) and \
                c.message and "First failure: " in c.message:
            rest = c.message[c.message.index("First failure: ") + len("First failure: "):]
            return rest.split(" ", 1)[0] or None
    return None


def expected_pods(job, selector):
    """How many pods the job's spec gives the selection (None when the spec cannot say)."""
    spec = (job or {}).get("spec") or {}
    fields = [k for k in spec if k.endswith("ReplicaSpecs") and isinstance(spec[k], dict)]
    if len(fields) != 1:
        return None
    if constants.JOB_ROLE_LABEL in selector:
        return 1
    wanted_type = selector.get(constants.REPLICA_TYPE_LABEL)
    index = selector.get(constants.REPLICA_INDEX_LABEL)
    total = 0
    for rtype, rspec in spec[fields[0]].items():
        if wanted_type is not None and rtype.lower() != wanted_type:
            continue
        replicas = (rspec or {}).get("replicas", 1)
        if not isinstance(replicas, int):
            return None
        total += (1 if int(index) < replicas else 0) if index is not None else replicas
    return total


# Pod phases after which no more log lines come; "Gone": the pod was deleted.
_FINISHED = ("Succeeded", "Failed", "Gone")


def _lines(resp):
    """The response's lines as text, blank lines kept, UTF-8 split across chunks decoded
    whole (invalid bytes replaced)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    for chunk in resp.stream(amt=None, decode_content=False):
        pending += decoder.decode(chunk)
        *lines, pending = pending.split("\n")
        yield from lines
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending


def _abort(resp):
    """Ends a response another thread is reading, without waiting for that thread: shuts the
    socket down (closing the file object would block on the reader's buffer lock)."""
    try:
        sock = resp.connection.sock if resp.connection is not None else None
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:
        pass


def _api(kind):
    """(group, version, plural) of a job kind: the v1 kinds and TrainJob."""
    if kind == TRAINJOB_KIND:
        return TRAINER_GROUP, TRAINER_VERSION, "trainjobs"
    return GROUP, VERSION, constants.JOB_PARAMETERS[kind]["plural"]


def _container(kind, selector):
    """The container whose log a job's replica is: the kind's, for a TrainJob the step's."""
    if kind == TRAINJOB_KIND:
        rjob = (selector or {}).get(_RJOB_LABEL)
        return rjob if rjob and rjob not in ("node", "launcher") else "node"
    return constants.JOB_PARAMETERS[kind]["container"]
