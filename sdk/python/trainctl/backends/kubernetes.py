"""The ``kubernetes`` backend: jobs are kubeflow.org/v1 custom objects on a cluster, run by
``trainctl operator`` (or upstream's operator). Uses the ``kubernetes`` package for auth and
REST (kubeconfig, exec plugins, in-cluster), as upstream's SDK does.

Errors: the ``kubernetes`` package's ApiException, ``multiprocessing.TimeoutError`` for request
timeouts; the client maps them to upstream's exception types. Thread-safe as the kubernetes
client is.
"""

import codecs
import os
import queue
import socket
import threading
import time

from .. import constants

GROUP, VERSION = constants.GROUP, constants.VERSION


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


class KubernetesBackend:
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
        thread = self.custom_api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, _plural(kind), job, async_req=True)
        return thread.get(timeout)

    def get(self, name, namespace, kind, timeout):
        thread = self.custom_api.get_namespaced_custom_object(
            GROUP, VERSION, namespace, _plural(kind), name, async_req=True)
        return thread.get(timeout)

    def list(self, namespace, kind, timeout):
        thread = self.custom_api.list_namespaced_custom_object(
            GROUP, VERSION, namespace, _plural(kind), async_req=True)
        return thread.get(timeout).get("items") or []

    def patch(self, name, namespace, kind, body, timeout):
        thread = self.custom_api.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, _plural(kind), name, body, async_req=True)
        return thread.get(timeout)

    def delete(self, name, namespace, kind, delete_options, timeout):
        thread = self.custom_api.delete_namespaced_custom_object(
            GROUP, VERSION, namespace, _plural(kind), name, body=delete_options, async_req=True)
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
        """Events as {kind, name, time (datetime), message}."""
        items = self.core_api.list_namespaced_event(namespace=namespace).items
        out = []
        for e in items:
            out.append({"kind": e.involved_object.kind, "name": e.involved_object.name,
                        "time": e.metadata.creation_timestamp, "message": e.message})
        return out


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


def _plural(kind):
    return constants.JOB_PARAMETERS[kind]["plural"]
