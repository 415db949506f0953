"""Shared by the real node's tests (hack/cluster/node.sh): the node's settings read from
hack/cluster/lib.sh, pod and registry helpers, and the operator deployed in the cluster from
manifests/ in its own image.

Environment (set by test/CMakeLists.txt): TRAINCTL_CLUSTER_DIR, TRAINCTL_PORT_BASE,
TRAINCTL_REPO, TRAINCTL_BIN (the binary the operator's image carries).
"""
import ipaddress
import json
import os
import signal
import subprocess
import sys
import unittest
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "operator"))
from harness import CLUSTER_DIR, REPO, get_json, kubectl, wait_for  # noqa: E402,F401

CLUSTER_DIR_FOR_LOGS = CLUSTER_DIR


def node_settings():
    """NODE_NAME, NODE_CIDR, NODE_IP, registry port, tags: read from hack/cluster/lib.sh."""
    script = (f"source {REPO}/hack/cluster/lib.sh; echo $NODE_NAME $NODE_CIDR $NODE_IP "
              "$(node_port registry) $BUSYBOX_TAG $(port_base)")
    out = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True)
    name, cidr, ip, registry, busybox, base = out.stdout.split()
    return {"name": name, "cidr": ipaddress.ip_network(cidr), "ip": ip, "registry": int(registry),
            "busybox": f"docker.io/library/busybox:{busybox}", "egress_chain": f"TC-EGRESS-{base}"}


NODE = node_settings()


def pod(name, command, image=None, restart="Never", labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"restartPolicy": restart, "nodeName": NODE["name"],
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": image or NODE["busybox"],
                                     "command": command}], **spec}}


def registry_digest(repository, tag):
    request = urllib.request.Request(
        f"http://127.0.0.1:{NODE['registry']}/v2/{repository}/manifests/{tag}", method="HEAD",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                           "application/vnd.docker.distribution.manifest.v2+json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Docker-Content-Digest"]


def egress_drops():
    out = subprocess.run(["iptables", "-L", NODE["egress_chain"], "-v", "-x", "-n"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "DROP":
            return int(fields[0])
    raise AssertionError(f"no DROP rule in {NODE['egress_chain']}:\n{out}")


def new_namespace(prefix):
    """A namespace of its own (PREFIX-<random>), once its default service account exists."""
    ns = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", ns)
    wait_for("the default service account", lambda: get_json("serviceaccount", "default", "-n", ns))
    return ns


def run_script(*args, timeout=900):
    """Runs a hack/cluster script in a process group of its own; its output is in the error
    when it fails; on a timeout the whole group (buildah, pip…) is killed, not only the script."""
    proc = subprocess.Popen([os.path.join(REPO, "hack/cluster", args[0]), *args[1:]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(args)} did not finish in {timeout}s:\n{out}{err}")
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{out}{err}")
    return out


def upstream_module_dir(module):
    """MODULE@VERSION's folder in the project's Go module cache (downloaded once from the
    proxy): upstream's own manifests, applied unchanged."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    cache = subprocess.run(["bash", "-c", f"source {REPO}/hack/cluster/lib.sh; "
                            "echo ${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"],
                           capture_output=True, text=True, check=True).stdout.strip()
    env["GOMODCACHE"] = cache
    out = subprocess.run(["go", "mod", "download", "-json", module], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise AssertionError(f"go mod download {module}: {out.stdout}{out.stderr}")
    return json.loads(out.stdout)["Dir"]


OPERATOR_NS = "trainctl-system"
OPERATOR_DEPLOYMENT = "trainctl-operator"


def operator_pods():
    pods = get_json("pods", "-n", OPERATOR_NS, "-l", f"app.kubernetes.io/name={OPERATOR_DEPLOYMENT}") or {}
    return [p for p in pods.get("items", []) if not p["metadata"].get("deletionTimestamp")]


def ready(pod_json):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod_json.get("status", {}).get("conditions", []))


_deployed = []


def deploy_operator():
    """The operator as a platform team installs it: its image built from the repository's
    Dockerfile (hack/cluster/images.sh operator, with TRAINCTL_BIN) into the loopback registry,
    then `kubectl apply --server-side -k manifests/` unchanged. Returns the running pod once
    it is Ready and runs the image just built (a rebuilt image replaces an older one)."""
    if _deployed:
        return _deployed[0]
    run_script("images.sh", "operator")
    run_script("node.sh", "forget-stale")
    kubectl("apply", "--server-side", "--force-conflicts", "-k", os.path.join(REPO, "manifests"))
    digest = registry_digest("library/trainctl", "latest")

    def current():
        pods = operator_pods()
        good = [p for p in pods if ready(p) and
                p["status"]["containerStatuses"][0].get("imageID", "").endswith("@" + digest)]
        return good[0] if len(pods) == 1 and good else None

    try:
        kubectl("rollout", "status", "-n", OPERATOR_NS, f"deployment/{OPERATOR_DEPLOYMENT}",
                "--timeout=180s", timeout=200)
    except (AssertionError, subprocess.TimeoutExpired):
        dump_node_state(OPERATOR_NS, "the operator's rollout")
        raise
    if not current():
        kubectl("rollout", "restart", "-n", OPERATOR_NS, f"deployment/{OPERATOR_DEPLOYMENT}")
    pod = wait_for("the operator running the image just built", current, timeout=180, interval=1)
    wait_for_webhooks()
    _deployed.append(pod)
    return pod


# A PyTorchJob that only a server-side dry run creates: the operator's validating webhook
# answers it, or the create fails.
_WEBHOOK_PROBE = json.dumps({
    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
    "metadata": {"name": "webhook-probe", "namespace": "default"},
    "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
        "containers": [{"name": "pytorch", "image": "registry.k8s.io/pause:3.9"}]}}}}}})


def wait_for_webhooks(in_a_row=3, timeout=120):
    """Returns once the operator's webhooks admitted `in_a_row` dry-run creates one after the
    other. A pod Ready is not yet reachable through its Service: right after a rollout restart
    kube-proxy may still send the API server's webhook calls to the old pod's address ("no
    route to host")."""
    answered = []

    def admitted():
        proc = kubectl("create", "--dry-run=server", "-f", "-", input=_WEBHOOK_PROBE, check=False)
        answered[:] = answered + [1] if proc.returncode == 0 else []
        return len(answered) >= in_a_row or None

    wait_for("the operator's webhooks answering through its Service", admitted,
             timeout=timeout, interval=1)


_dumped = []


def dump_node_state(namespace=None, why=""):
    """Prints, once per test process and briefly (CI shows only the tail of the output), what
    a failure on the real node needs to be understood: the node's conditions and taints, every
    pod that is not Running or Succeeded with its reason, the namespace's warning events and
    the last lines of the kubelet's and containerd's logs."""
    if _dumped:
        return
    _dumped.append(why)
    out = [f"==== the real node after: {why} ===="]
    node = get_json("node", NODE["name"]) or {}
    for c in node.get("status", {}).get("conditions", []):
        if (c["type"] == "Ready") != (c["status"] == "True"):
            out.append(f"node condition {c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}")
    for t in node.get("spec", {}).get("taints", []):
        out.append(f"node taint {t.get('key')}={t.get('value', '')}:{t.get('effect')}")
    pods = get_json("pods", "-A") or {}
    for p in pods.get("items", []):
        status = p.get("status", {})
        if status.get("phase") in ("Running", "Succeeded"):
            continue
        # A container's waiting reason, else the state it is in (running, terminated).
        waiting = [f"{s['name']}:{(s.get('state', {}).get('waiting') or {}).get('reason') or ','.join(s.get('state', {}))}"
                   for s in status.get("containerStatuses", []) + status.get("initContainerStatuses", [])]
        out.append(f"pod {p['metadata']['namespace']}/{p['metadata']['name']} {status.get('phase')} "
                   f"{status.get('reason', '')} {status.get('message', '')[:200]} {' '.join(waiting)}")
    if namespace:
        events = get_json("events", "-n", namespace, "--field-selector", "type=Warning") or {}
        for e in events.get("items", [])[-12:]:
            out.append(f"event {e['involvedObject'].get('name')} {e.get('reason')}: {e.get('message', '')[:240]}")
    for name in ("kubelet", "containerd"):
        path = os.path.join(CLUSTER_DIR_FOR_LOGS, "logs", f"node-{name}.log")
        try:
            with open(path, errors="replace") as f:
                # klog's error lines start "E1127 …"; containerd's say level=error.
                lines = [l for l in f.read().splitlines()
                         if (l[:1] == "E" and l[1:5].isdigit()) or "level=error" in l]
        except OSError as e:
            lines = [f"(cannot read {path}: {e})"]
        out.append(f"-- last errors in {path}:")
        out.extend(l[:300] for l in lines[-15:])
    print("\n".join(out), file=sys.stderr, flush=True)


class NodeTestCase(unittest.TestCase):
    """A test on the real node: the node's state goes to stderr after the first failure."""
    namespace = None

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        outcome = super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            dump_node_state(getattr(self, "ns", None) or self.namespace, self.id())
        return outcome


class UpstreamRuntimeTestCase(NodeTestCase):
    """A node test of TrainJobs on one of Trainer v2.3.0's own ClusterTrainingRuntimes, applied
    unchanged from the Go module, with its images' stand-ins (images.sh trainer-runtimes), the
    Trainer CRDs and `trainctl operator` for a namespace of the class's own."""
    TRAINER_MODULE = "github.com/kubeflow/trainer/v2@v2.3.0"
    runtime = None         # its name, e.g. "torch-distributed"
    runtime_file = None    # under the module's manifests/base/runtimes/
    namespace_prefix = "tj"

    @classmethod
    def setUpClass(cls):
        from harness import Operator, install_crds
        run_script("images.sh", "trainer-runtimes")
        install_crds()
        module = upstream_module_dir(cls.TRAINER_MODULE)
        kubectl("apply", "--server-side", "--force-conflicts", "-f",
                os.path.join(module, "manifests/base/runtimes", cls.runtime_file))
        cls.ns = f"{cls.namespace_prefix}-{uuid.uuid4().hex[:8]}"
        kubectl("create", "namespace", cls.ns)
        cls.op = Operator(cls.ns)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        kubectl("delete", "clustertrainingruntime", cls.runtime, "--wait=false", check=False)

    def explain(self, name):
        """TrainJob `name`, the tails of its pods' logs and of the operator's, for a failure."""
        pods = (get_json("pods", "-n", self.ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
                or {}).get("items", [])
        logs = "".join(f"\n--- {p['metadata']['name']}:\n" + kubectl(
            "logs", "-n", self.ns, p["metadata"]["name"], check=False).stdout[-3000:]
            for p in pods)
        return (f"TrainJob: {json.dumps(get_json('trainjob', name, '-n', self.ns))}"
                f"\npods:{logs}\noperator log:\n{self.op.log()[-4000:]}")
