"""Shared fixtures for the operator integration tests: the real control plane started by the
CTest fixture `cluster.up`, kubectl from the project's Go build cache, the CRDs from manifests/,
and the real `trainctl operator` binary as a child process.

Environment (set by test/CMakeLists.txt): TRAINCTL_BIN, TRAINCTL_CLUSTER_DIR (its kubeconfig),
TRAINCTL_REPO. Pods are driven by kwok stages through annotations (hack/cluster/kwok).
"""
import json
import os
import socket
import subprocess
import time
import unittest
import urllib.request
import uuid

REPO = os.environ.get("TRAINCTL_REPO", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
TRAINCTL = os.environ.get("TRAINCTL_BIN", os.path.join(REPO, "build/release/trainctl"))
CLUSTER_DIR = os.environ.get("TRAINCTL_CLUSTER_DIR", os.path.join(REPO, "build/release/test-cluster"))
KUBECONFIG = os.path.join(CLUSTER_DIR, "kubeconfig")


def kubectl_path():
    out = subprocess.run(["bash", "-c", f"source {REPO}/hack/cluster/lib.sh; cluster_bin_dir"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(out, "kubectl")


KUBECTL = kubectl_path()


def kubectl(*args, input=None, check=True, timeout=120):
    proc = subprocess.run([KUBECTL, "--kubeconfig", KUBECONFIG, *args], input=input,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc


def get_json(*args):
    out = kubectl("get", *args, "-o", "json", check=False)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def wait_for(what, predicate, timeout=60, interval=0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def json_stream(lines):
    """The JSON documents of a `kubectl get --watch -o json` output, each as soon as it is whole
    (`lines`: the output's lines as they arrive)."""
    decoder, buffer = json.JSONDecoder(), ""
    for chunk in lines:
        buffer += chunk
        while buffer.strip():
            try:
                obj, end = decoder.raw_decode(buffer.lstrip())
            except ValueError:
                break
            buffer = buffer.lstrip()[end:]
            yield obj


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def install_crds():
    kubectl("apply", "--server-side", "--force-conflicts", "-f",
            os.environ.get("TRAINCTL_CRD_DIR", os.path.join(REPO, "manifests/crds")))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")


def run_example_notebook(name, namespace, timeout=600):
    """Executes examples/notebooks/`name` headless (run_notebook.py, this interpreter as its
    kernel) with its cluster cells on: TRAINCTL_NOTEBOOK_KUBECONFIG is a copy of the test
    cluster's kubeconfig whose current context names `namespace`, as a user's would. Returns
    (exit status, its output, the text every code cell printed)."""
    import sys
    import tempfile
    with tempfile.TemporaryDirectory(prefix="trainctl-nb-") as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(KUBECONFIG) as src, open(kubeconfig, "w") as dst:
            dst.write(src.read())
        kubectl("--kubeconfig", kubeconfig, "config", "set-context", "--current",
                f"--namespace={namespace}")
        env = dict(os.environ, TRAINCTL_NOTEBOOK_KUBECONFIG=kubeconfig,
                   TRAINCTL_STATE_DIR=os.path.join(tmp, "state"), TRAINCTL_BIN=TRAINCTL)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        notebooks = os.path.join(REPO, "examples", "notebooks")
        saved = os.path.join(tmp, "executed.ipynb")
        run = subprocess.run(
            [sys.executable, os.path.join(notebooks, "run_notebook.py"),
             os.path.join(notebooks, name), "--save", saved], cwd=notebooks, env=env,
            capture_output=True, text=True, timeout=timeout)
        cells = []
        if run.returncode == 0:
            with open(saved) as f:
                cells = json.load(f)["cells"]
    printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                      for o in c.get("outputs", []))
    return run.returncode, run.stdout + run.stderr, printed


class Operator:
    """The real `trainctl operator` binary against the test cluster."""

    def __init__(self, namespace, *extra, kubeconfig=None, env=None):
        self.namespace = namespace
        self.extra = list(extra)
        self.kubeconfig = kubeconfig or KUBECONFIG
        self.env = env
        self.proc = None
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.log_path = os.path.join(CLUSTER_DIR, f"operator-{namespace}.log")

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [TRAINCTL, "operator", "--kubeconfig", self.kubeconfig, "--namespace", self.namespace,
             "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
             "--health-probe-bind-address", f"127.0.0.1:{self.health_port}", *self.extra],
            stdout=log, stderr=subprocess.STDOUT, env=None if self.env is None else {**os.environ, **self.env})
        log.close()
        wait_for("operator readiness", lambda: self.http(self.health_port, "/readyz") == "ok\n"
                 or self.proc.poll() is not None, timeout=60)
        if self.proc.poll() is not None:
            raise AssertionError(f"operator exited with {self.proc.returncode}:\n{self.log()}")

    def http(self, port, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                return r.read().decode()
        except Exception:
            return None

    def metrics(self):
        return self.http(self.metrics_port, "/metrics") or ""

    def counter(self, name, **labels):
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith(f"{name}{{{want}}} "):
                return float(line.split()[-1])
        return 0.0

    def gauge(self, name):
        """An unlabelled metric's value (0 when absent)."""
        for line in self.metrics().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[-1])
        return 0.0

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def log(self, tail=4000):
        try:
            with open(self.log_path) as f:
                text = f.read()
                return text[-tail:] if tail else text
        except OSError:
            return ""


KIND_INFO = {
    # kind: (plural, replica map field, default container, port name, port)
    "PyTorchJob": ("pytorchjobs", "pytorchReplicaSpecs", "pytorch", "pytorchjob-port", 23456),
    "TFJob": ("tfjobs", "tfReplicaSpecs", "tensorflow", "tfjob-port", 2222),
    "XGBoostJob": ("xgboostjobs", "xgbReplicaSpecs", "xgboost", "xgboostjob-port", 9999),
    "PaddleJob": ("paddlejobs", "paddleReplicaSpecs", "paddle", "master", 36543),
    "JAXJob": ("jaxjobs", "jaxReplicaSpecs", "jax", "jaxjob-port", 6666),
    "MXJob": ("mxjobs", "mxReplicaSpecs", "mxnet", "mxjob-port", 9091),
    "MPIJob": ("mpijobs", "mpiReplicaSpecs", "mpi", None, None),
}


def make_job(kind, name, namespace, replicas, run_policy=None, restart_policy="Never", extra_spec=None):
    """replicas: {type: (count, annotations)}; annotations drive kwok (run/exit seconds/codes)."""
    plural, field, container, port_name, port = KIND_INFO[kind]
    specs = {}
    for rtype, (count, annotations) in replicas.items():
        c = {"name": container, "image": "example.invalid/train:1", "command": ["python3", "train.py"]}
        if port_name:
            c["ports"] = [{"name": port_name, "containerPort": port}]
        specs[rtype] = {
            "replicas": count,
            "restartPolicy": restart_policy,
            "template": {"metadata": {"labels": {"team": "ml"}, "annotations": dict(annotations)},
                         "spec": {"containers": [c]}},
        }
    spec = {field: specs}
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    if extra_spec:
        spec.update(extra_spec)
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def elastic_pytorch_job(name, namespace, workers=2):
    """An elastic PyTorchJob (1–3 Workers) whose elasticPolicy.metrics gives it an HPA."""
    job = make_job("PyTorchJob", name, namespace, {"Worker": (workers, FOREVER)})
    job["spec"]["elasticPolicy"] = {
        "minReplicas": 1, "maxReplicas": 3, "rdzvBackend": "c10d",
        "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}
    return job


def run_for(seconds, exit_code=0):
    return {"trainctl.dev/kwok-run-seconds": str(seconds), "trainctl.dev/kwok-exit-code": str(exit_code)}


FOREVER = {"trainctl.dev/kwok-run-forever": "true"}


class OperatorTestCase(unittest.TestCase):
    """One namespace and one operator per test class."""

    operator_args = ()

    @classmethod
    def setUpClass(cls):
        install_crds()
        cls.ns = "op-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.op = Operator(cls.ns, *cls.operator_args)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def create(self, job):
        kubectl("create", "-f", "-", input=json.dumps(job))
        return job

    def job(self, kind, name):
        return get_json(KIND_INFO[kind][0], name, "-n", self.ns)

    def conditions(self, kind, name):
        j = self.job(kind, name) or {}
        return [(c["type"], c["status"]) for c in j.get("status", {}).get("conditions", [])]

    def wait_condition(self, kind, name, ctype, timeout=60):
        def ok():
            return (ctype, "True") in self.conditions(kind, name)
        try:
            wait_for(f"{kind} {name} {ctype}", ok, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\nconditions: {self.conditions(kind, name)}\n"
                                 f"operator log:\n{self.op.log()}")
        return self.job(kind, name)

    def wait_reason(self, kind, name, reason, timeout=60, explain=lambda: ""):
        """Until the job's ReplicasReady is False with `reason`; returns the condition. On a
        time-out the error has the condition, `explain()` and the operator's log."""
        def ok():
            c = ready_condition(self.job(kind, name))
            return c if c and c["status"] == "False" and c["reason"] == reason else None
        try:
            return wait_for(f"{kind} {name}: ReplicasReady reason {reason}", ok, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\ncondition: {ready_condition(self.job(kind, name))}\n"
                                 f"{explain()}operator log:\n{self.op.log()}")

    def pods(self, job_name):
        out = get_json("pods", "-n", self.ns, "-l", f"training.kubeflow.org/job-name={job_name}")
        return (out or {}).get("items", [])

    def live_pods(self, job_name):
        return [p for p in self.pods(job_name) if not p["metadata"].get("deletionTimestamp")]

    def services(self, job_name):
        out = get_json("services", "-n", self.ns, "-l", f"training.kubeflow.org/job-name={job_name}")
        return (out or {}).get("items", [])

    def events(self, name):
        out = get_json("events", "-n", self.ns, "--field-selector", f"involvedObject.name={name}")
        return [(e["type"], e["reason"], e["message"]) for e in (out or {}).get("items", [])]


def ready_condition(job):
    """A job's ReplicasReady condition (trainctl's why), or None."""
    for c in (job or {}).get("status", {}).get("conditions", []):
        if c["type"] == "ReplicasReady":
            return c
    return None


def cluster_cli(namespace, *args):
    """The trainctl CLI against the test cluster through --kubeconfig only."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINCTL_BACKEND")}
    return subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", namespace, *args],
                          capture_output=True, text=True, timeout=60, env=env)


def env_of(pod, container=0):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in
            pod["spec"]["containers"][container].get("env", [])}
