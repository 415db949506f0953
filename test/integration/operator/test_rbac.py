"""`trainctl operator` under the RBAC it ships (manifests/rbac), not as system:masters.

The operator authenticates as the ServiceAccount trainctl-system/trainctl-operator with a token
from the TokenRequest API, the shipped ClusterRoles, Roles and bindings applied unchanged, the
lease and webhook names of manifests/operator. It then does everything a cluster asks of it: every
child kind (pods, services, events, the MPIJob launcher's ConfigMap, ServiceAccount, Role and
RoleBinding, an elastic job's HPA), restarts after retryable failures, deadlines, TTL deletion,
suspend/resume, leader election and the webhook's certificate Secret and configuration. Any
permission the manifests lack shows up as a job that never converges or a "forbidden" in the
operator's log. The second half checks the claims of docs/security.md: what the identity may not
do (no Secrets beyond its own, no pod patch, no writes to the jobs' spec)."""
import base64
import json
import subprocess
import os
import tempfile
import time
import unittest
import uuid

from harness import (TRAINCTL, FOREVER, REPO, Operator, OperatorTestCase, elastic_pytorch_job, free_port, get_json,
                     install_crds, kubectl, make_job, run_for, wait_for)

SYSTEM_NS = "trainctl-system"
SA = f"system:serviceaccount:{SYSTEM_NS}:trainctl-operator"
LEASE = "1ca428e5.training-operator.kubeflow.org"
WEBHOOK_CONFIG = "validator.trainctl.kubeflow.org"
WEBHOOK_SECRET = "trainctl-operator-webhook-cert"
RBAC_FILES = ["service-account.yaml", "cluster-role.yaml", "cluster-role-binding.yaml", "mpijob-launcher.yaml",
              "webhook-role.yaml", "leader-election-role.yaml"]


def shipped_identity_kubeconfig(path):
    """A kubeconfig for the operator's ServiceAccount: the test cluster's server and CA, a token."""
    admin = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]["cluster"]
    token = kubectl("create", "token", "trainctl-operator", "-n", SYSTEM_NS, "--duration", "2h").stdout.strip()
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "operator",
        "clusters": [{"name": "test", "cluster": {
            "server": cluster["server"],
            "certificate-authority-data": cluster.get("certificate-authority-data") or base64.b64encode(
                open(cluster["certificate-authority"], "rb").read()).decode()}}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "test", "user": "operator"}}],
    }
    with open(path, "w") as f:
        json.dump(config, f)
    os.chmod(path, 0o600)


def can_i(verb, resource, namespace=None, name=None, subresource=None):
    args = ["auth", "can-i", verb, resource if not name else f"{resource}/{name}", "--as", SA]
    args += ["-n", namespace] if namespace else ["-A"]
    args += ["--subresource", subresource] if subresource else []
    return kubectl(*args, check=False).stdout.strip() == "yes"


def may(verb, group, resource, namespace):
    """The API server's answer for the operator's ServiceAccount, whatever is installed."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": SA, "groups": ["system:serviceaccounts",
                                              f"system:serviceaccounts:{SYSTEM_NS}"],
                       "resourceAttributes": {"verb": verb, "group": group,
                                              "resource": resource, "namespace": namespace}}}
    out = kubectl("create", "-o", "json", "-f", "-", input=json.dumps(review))
    return json.loads(out.stdout)["status"].get("allowed", False)


class ShippedRbac(OperatorTestCase):

    @classmethod
    def setUpClass(cls):
        install_crds()
        if get_json("namespace", SYSTEM_NS) is None:
            kubectl("create", "namespace", SYSTEM_NS)
        for f in RBAC_FILES:
            kubectl("apply", "-f", os.path.join(REPO, "manifests/rbac", f))
        # Start from nothing the operator would otherwise find: it creates both itself.
        kubectl("delete", "secret", WEBHOOK_SECRET, "-n", SYSTEM_NS, "--ignore-not-found")
        kubectl("delete", "lease", LEASE, "-n", SYSTEM_NS, "--ignore-not-found")
        cls.ns = "rbac-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.port = free_port()
        # The shipped configuration's name (its ClusterRole names it), pointed at this process and
        # limited to the test namespace so that no other test depends on this operator.
        hooks = [{
            "name": f"validator.{kind}.trainctl.kubeflow.org",
            "clientConfig": {"url": f"https://127.0.0.1:{cls.port}/validate-kubeflow-org-v1-{kind}"},
            "rules": [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                       "resources": [f"{kind}s"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cls.ns}},
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
        } for kind in ("pytorchjob", "mpijob")]
        kubectl("delete", "validatingwebhookconfiguration", WEBHOOK_CONFIG, "--ignore-not-found")
        kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_CONFIG}, "webhooks": hooks}))
        cls.tmp = tempfile.TemporaryDirectory()
        cls.kubeconfig = os.path.join(cls.tmp.name, "operator.kubeconfig")
        shipped_identity_kubeconfig(cls.kubeconfig)
        cls.history = os.path.join(cls.tmp.name, "history.db")
        cls.op = Operator(cls.ns, "--leader-elect", "--webhook-server-port", str(cls.port),
                          "--webhook-bind-host", "127.0.0.1", "--webhook-host", "127.0.0.1",
                          "--history", "sqlite:" + cls.history,
                          kubeconfig=cls.kubeconfig, env={"MY_POD_NAMESPACE": SYSTEM_NS})
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "validatingwebhookconfiguration", WEBHOOK_CONFIG, "--ignore-not-found", check=False)
        super().tearDownClass()
        cls.tmp.cleanup()

    def assert_no_forbidden(self):
        denied = [line for line in self.op.log(tail=0).splitlines() if "forbidden" in line.lower()]
        self.assertEqual(denied, [], "the shipped RBAC lacks a permission the operator used")

    def test_everything_an_operator_does_is_allowed(self):
        # Leader election: the Lease of the manifests, in the operator's namespace.
        lease = wait_for("the lease", lambda: get_json("lease", LEASE, "-n", SYSTEM_NS))
        self.assertTrue(lease["spec"]["holderIdentity"])
        # Webhook: the Secret created by name, the configuration's caBundle written.
        wait_for("caBundle injected", lambda: all(
            w["clientConfig"].get("caBundle") for w in get_json("validatingwebhookconfiguration",
                                                                WEBHOOK_CONFIG)["webhooks"]))
        secret = get_json("secret", WEBHOOK_SECRET, "-n", SYSTEM_NS)
        self.assertIsNotNone(secret)
        # The MPIJob CRD's conversion webhook (v1 <-> v2beta1) gets the same CA.
        wait_for("caBundle in the MPIJob CRD", lambda: get_json("crd", "mpijobs.kubeflow.org")[
            "spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle") == secret["data"]["ca.crt"])
        bad = make_job("PyTorchJob", "bad", self.ns, {"Master": (2, run_for(1))})
        out = kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
        self.assertIn("spec.pytorchReplicaSpecs[Master].replicas", out.stderr)

        # Pods, services and events; a retryable failure (pod deleted and created again); TTL.
        self.create(make_job("PyTorchJob", "ok", self.ns, {"Master": (1, run_for(2)), "Worker": (2, run_for(2))},
                             run_policy={"ttlSecondsAfterFinished": 3}))
        self.create(make_job("PyTorchJob", "retry", self.ns, {"Master": (1, run_for(1, exit_code=137))},
                             run_policy={"backoffLimit": 1}, restart_policy="ExitCode"))
        # A deadline, and suspend while running (pods and services deleted).
        self.create(make_job("PyTorchJob", "late", self.ns, {"Master": (1, FOREVER)},
                             run_policy={"activeDeadlineSeconds": 3}))
        self.create(make_job("TFJob", "sus", self.ns, {"PS": (1, FOREVER), "Worker": (1, FOREVER)}))
        # MPIJob: ConfigMap (created, then patched when the workers run), ServiceAccount, Role,
        # RoleBinding for the launcher.
        self.create(make_job("MPIJob", "mpi", self.ns, {"Launcher": (1, run_for(2)), "Worker": (2, run_for(4))}))
        # MPIJob v2beta1 (stored as v1 with its v2beta1 fields' annotation, as the conversion
        # webhook stores one): the key Secret (created, never read) and the launcher's batch Job.
        v2 = make_job("MPIJob", "mpiv2", self.ns, {"Launcher": (1, run_for(2)), "Worker": (2, run_for(4))})
        v2["metadata"].setdefault("annotations", {})["mpi.trainctl.dev/v2beta1-fields"] = "{}"
        self.create(v2)
        # Elastic PyTorchJob: its HPA.
        self.create(elastic_pytorch_job("elastic", self.ns))
        # A gang restart (the attempt patched on the job) with a checkpoint notice (the job and
        # its pods patched): the patches a Gang or notice job needs.
        gang = make_job("PyTorchJob", "gang", self.ns, {"Master": (1, FOREVER), "Worker": (1, run_for(1, exit_code=1))},
                        run_policy={"backoffLimit": 1}, restart_policy="OnFailure")
        gang["metadata"]["annotations"] = {"trainctl.dev/restart-scope": "Gang",
                                           "trainctl.dev/checkpoint-notice-seconds": "2"}
        self.create(gang)

        self.wait_condition("PyTorchJob", "ok", "Succeeded", timeout=60)
        self.assertIn("SuccessfulCreatePod", {e[1] for e in self.events("ok")})
        wait_for("TTL deleted the job", lambda: self.job("PyTorchJob", "ok") is None, timeout=30)
        # The job history (--history) read the job, its pods, their logs and events first.
        shown = subprocess.run([TRAINCTL, "-n", self.ns, "history", "--file", self.history,
                                "show", "ok", "-o", "json"], capture_output=True, text=True)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("SuccessfulCreatePod", {e["reason"].split(" ")[0]
                                              for e in json.loads(shown.stdout)["events"]})
        job = self.wait_condition("PyTorchJob", "retry", "Failed", timeout=60)
        self.assertEqual(job["status"]["replicaStatuses"]["Master"]["restarts"], 1)
        self.wait_condition("PyTorchJob", "late", "Failed", timeout=30)
        self.wait_condition("TFJob", "sus", "Running")
        kubectl("patch", "tfjob", "sus", "-n", self.ns, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
        self.wait_condition("TFJob", "sus", "Suspended")
        wait_for("suspended pods deleted", lambda: not self.pods("sus"))
        self.wait_condition("MPIJob", "mpi", "Succeeded", timeout=60)
        for resource, name in (("configmap", "mpi-config"), ("serviceaccount", "mpi-launcher"),
                               ("role", "mpi-launcher"), ("rolebinding", "mpi-launcher")):
            self.assertIsNotNone(get_json(resource, name, "-n", self.ns), f"{resource} {name}")
        self.assertIn("mpi-worker-1", get_json("configmap", "mpi-config", "-n", self.ns)["data"]["hostfile"])
        self.wait_condition("MPIJob", "mpiv2", "Succeeded", timeout=60)
        self.assertEqual(get_json("secret", "mpiv2-ssh", "-n", self.ns)["type"], "kubernetes.io/ssh-auth")
        self.assertIsNotNone(get_json("job.batch", "mpiv2-launcher", "-n", self.ns))
        wait_for("the HPA", lambda: get_json("horizontalpodautoscalers.v2.autoscaling", "elastic", "-n", self.ns))
        self.wait_condition("PyTorchJob", "gang", "Failed", timeout=60)
        gang = self.job("PyTorchJob", "gang")
        self.assertEqual(gang["metadata"]["annotations"]["trainctl.dev/restart-attempt"], "1")
        self.assertIn("CheckpointNotice", {e[1] for e in self.events("gang")})
        # Its finalizer (patched on) is released when it is deleted, by the shipped identity.
        kubectl("delete", "pytorchjob", "gang", "-n", self.ns, "--timeout=60s")
        self.assert_no_forbidden()

    def test_what_the_identity_may_not_do(self):
        # No Secret beyond the webhook's own: not cluster-wide, not by list, not another name.
        self.assertFalse(can_i("get", "secrets"))
        self.assertFalse(can_i("list", "secrets", SYSTEM_NS))
        self.assertFalse(can_i("get", "secrets", SYSTEM_NS, "someone-elses"))
        self.assertTrue(can_i("get", "secrets", SYSTEM_NS, WEBHOOK_SECRET))
        # Only its own Lease and webhook configuration.
        self.assertTrue(can_i("update", "leases", SYSTEM_NS, LEASE))
        self.assertFalse(can_i("update", "leases", SYSTEM_NS, "kube-scheduler"))
        self.assertFalse(can_i("update", "leases", "kube-system", LEASE))
        self.assertFalse(can_i("update", "validatingwebhookconfigurations", None, "another"))
        self.assertTrue(can_i("update", "mutatingwebhookconfigurations", None,
                              "mutator.trainctl.kubeflow.org"))
        self.assertFalse(can_i("update", "mutatingwebhookconfigurations", None, "another"))
        # Trainer v2: a TrainJob's JobSet is made, its suspend kept, deleted past its deadline.
        # Asked by a SubjectAccessReview: `auth can-i` says no for a resource whose CRD is not
        # installed (JobSet's is only while its fixture runs).
        for verb in ("create", "patch", "delete"):
            self.assertTrue(may(verb, "jobset.x-k8s.io", "jobsets", self.ns), verb)
        self.assertFalse(may("update", "trainer.kubeflow.org", "trainjobs", self.ns))
        # Patched only for the checkpoint notice's record and finalizer (its metadata).
        self.assertTrue(may("patch", "trainer.kubeflow.org", "trainjobs", self.ns))
        # The TrainJob webhook reads a Volcano runtime's PriorityClasses (upstream's plugin checks
        # they exist); it never writes one.
        self.assertTrue(can_i("get", "priorityclasses.scheduling.k8s.io"))
        self.assertFalse(can_i("create", "priorityclasses.scheduling.k8s.io"))
        # Kueue's objects are read for the why of a held job, never written.
        for verb in ("get", "list", "watch"):
            for resource in ("workloads", "localqueues"):
                self.assertTrue(may(verb, "kueue.x-k8s.io", resource, self.ns), (verb, resource))
        self.assertFalse(may("update", "kueue.x-k8s.io", "workloads", self.ns))
        self.assertFalse(may("create", "kueue.x-k8s.io", "localqueues", self.ns))
        # The runtime status endpoint asks the API server about a trainer's token; it reads no
        # Secret of the jobs' namespaces for that (the CA ConfigMap is one it makes).
        self.assertTrue(can_i("create", "tokenreviews.authentication.k8s.io"))
        self.assertFalse(can_i("get", "secrets", self.ns))
        # Children are created and deleted, never updated (a pod is patched only for its checkpoint
        # notice annotation); the jobs are never updated (patched only for trainctl's annotations).
        self.assertFalse(can_i("update", "pods", self.ns))
        self.assertFalse(can_i("update", "pytorchjobs.kubeflow.org", self.ns))
        self.assertTrue(can_i("update", "pytorchjobs.kubeflow.org", self.ns, subresource="status"))
        self.assertFalse(can_i("delete", "configmaps", self.ns))


if __name__ == "__main__":
    unittest.main()
