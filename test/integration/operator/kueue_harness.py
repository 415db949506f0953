"""What the Kueue suites share (test_kueue.py on kwok, node/test_kueue_node.py on the real node):
whether Kueue answers (hack/cluster/kueue.sh: its health port is base+68), and a namespace's
queues: a ResourceFlavor, a ClusterQueue with a CPU quota that preempts lower priorities within
itself, the LocalQueue "team", and a low and a high WorkloadPriorityClass, all named after the
namespace so that suites never share them.

Environment: as harness.py; TRAINCTL_PORT_BASE.
"""
import json
import os
import urllib.request

from harness import get_json, kubectl, wait_for

HEALTH_PORT = int(os.environ.get("TRAINCTL_PORT_BASE", "29400")) + 68
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def kueue_ready():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HEALTH_PORT}/readyz", timeout=2) as r:
            return r.read().decode() == "ok"
    except OSError:
        return False


def require_kueue():
    if not kueue_ready():
        raise AssertionError(f"Kueue does not answer on 127.0.0.1:{HEALTH_PORT}/readyz: start it "
                             "with `TRAINCTL_KUEUE=1 hack/cluster/up.sh` (or hack/cluster/kueue.sh "
                             "up on a running cluster)")


def apply(obj):
    kubectl("apply", "--server-side", "-f", "-", input=json.dumps(obj))


class Queues:
    """The queues of namespace `ns` with `cpu` CPUs of quota (made by make(), removed by delete()),
    the ClusterQueue behind `admission_check` when one is named; in the cluster that `run_kubectl`
    and `get` (harness.py's kubectl and get_json by default) reach."""

    def __init__(self, ns, cpu, admission_check=None, run_kubectl=kubectl, get=get_json):
        self.ns, self.cpu, self.admission_check = ns, cpu, admission_check
        self.kubectl, self.get = run_kubectl, get
        self.flavor, self.cq = f"rf-{ns}", f"cq-{ns}"
        self.low, self.high = f"low-{ns}", f"high-{ns}"

    def apply(self, obj):
        self.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(obj))

    def make(self):
        apply = self.apply
        cq_spec = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.ns}},
                   "preemption": {"withinClusterQueue": "LowerPriority"},
                   "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                       {"name": self.flavor,
                        "resources": [{"name": "cpu", "nominalQuota": self.cpu}]}]}]}
        if self.admission_check:
            cq_spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": self.admission_check}]}
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": self.flavor}})
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": self.cq}, "spec": cq_spec})
        apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": "team", "namespace": self.ns},
               "spec": {"clusterQueue": self.cq}})
        for name, value in ((self.low, 100), (self.high, 1000)):
            apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                   "metadata": {"name": name}, "value": value})
        wait_for("the ClusterQueue active", lambda: any(
            c["type"] == "Active" and c["status"] == "True"
            for c in (self.get("clusterqueue", self.cq) or {}).get("status", {}).get("conditions", [])))
        return self

    def delete(self):
        for kind, name in (("clusterqueue", self.cq), ("resourceflavor", self.flavor),
                           ("workloadpriorityclass", self.low), ("workloadpriorityclass", self.high)):
            self.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)
