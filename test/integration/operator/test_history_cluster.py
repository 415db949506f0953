"""The operator's job history (--history sqlite:PATH) against the real control plane: a job
whose TTL deletes it at once, with cleanPodPolicy All, stays in `trainctl history` with its
first failure and its pods' log tails, because the operator holds the pods and the TTL until
the record is written; a job that succeeds is recorded too, and search finds a log line.
`trainctl --backend kubernetes history` reads the operator's history through its dashboard,
at an address and through the API server's proxy to a Service, with the rows a token's RBAC
allows; a kubeconfig with only a client certificate is told how to give a token."""
import json
import os
import shutil
import socket
import subprocess
import tempfile

from harness import (KUBECONFIG, TRAINCTL, OperatorTestCase, free_port, get_json, kubectl,
                     make_job, run_for, wait_for)

HISTORY = os.path.join(tempfile.mkdtemp(prefix="trainctl-history-"), "history.db")
KWOK_LOG_LINE = "kwok fake container"
PORT = free_port()


def host_address():
    """This machine's address that is not loopback (the API server refuses to proxy to
    loopback), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))  # no packet is sent: this only picks a route
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


class ClusterHistory(OperatorTestCase):

    operator_args = ("--history", "sqlite:" + HISTORY, "--dashboard-bind-address", f"0.0.0.0:{PORT}")

    def history(self, *args, code=0):
        proc = subprocess.run([TRAINCTL, "-n", self.ns, "history", "--file", HISTORY, *args],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        return proc.stdout

    def test_a_ttl_deleted_job_stays_in_the_history_with_its_first_failure(self):
        self.create(make_job("PyTorchJob", "gone", self.ns,
                             {"Master": (1, run_for(5)), "Worker": (2, run_for(1, exit_code=3))},
                             run_policy={"ttlSecondsAfterFinished": 0, "cleanPodPolicy": "All"}))
        wait_for("the TTL to delete the job",
                 lambda: get_json("pytorchjobs", "gone", "-n", self.ns) is None, timeout=90)
        record = json.loads(self.history("show", "gone", "-o", "json"))
        self.assertEqual(record["source"], "kubernetes")
        self.assertEqual(record["job"]["status"]["conditions"][-1]["type"], "Failed")
        self.assertIn(record["failure"]["name"], ("gone-worker-0", "gone-worker-1"))
        self.assertEqual(record["failure"]["exitCode"], 3)
        self.assertIn("First failure: " + record["failure"]["name"], record["why"]["firstFailure"])
        # The pods were still there when it was written: the log tails of rank 0 and of the
        # replica that failed first are in it (the other worker may not have failed yet when
        # the job did, and a replica that did not fail has no tail read).
        failed = record["failure"]["name"].removeprefix("gone-")
        self.assertIn(KWOK_LOG_LINE, record["logs"][failed]["tail"])
        self.assertIn(KWOK_LOG_LINE, record["logs"]["master-0"]["tail"])
        # The operator's events on the job, up to its failure.
        reasons = [e["reason"].split(" (x")[0] for e in record["events"]]
        self.assertIn("SuccessfulCreatePod", reasons)
        self.assertEqual(reasons[-1], "PyTorchJobFailed", record["events"])
        self.assertEqual({r["name"] for r in record["replicas"]},
                         {"gone-master-0", "gone-worker-0", "gone-worker-1"})
        listed = json.loads(self.history("-o", "json"))
        self.assertIn("gone", [row["name"] for row in listed["items"]])
        found = json.loads(self.history("search", "exited with code 3", "-o", "json"))
        self.assertIn("gone", [row["name"] for row in found["items"]])

    def test_a_succeeded_job_is_recorded_and_the_cli_says_where_the_history_is(self):
        self.create(make_job("TFJob", "fine", self.ns, {"Worker": (1, run_for(1))}))
        self.wait_condition("TFJob", "fine", "Succeeded")
        wait_for("the record", lambda: "fine" in self.history(), timeout=60)
        shown = self.history("show", "fine")
        self.assertIn("State:              Succeeded", shown)
        self.assertIn("Kept logs:", shown)
        missing = subprocess.run([TRAINCTL, "history", "--file", HISTORY + ".nope"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no history file", missing.stderr)

    def cluster_history(self, *args, token=None, code=0):
        env = dict(os.environ)
        env.pop("TRAINCTL_TOKEN", None)
        if token:
            env["TRAINCTL_TOKEN"] = token
        proc = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "history",
                               *args], capture_output=True, text=True, timeout=60, env=env)
        if code is not None:
            self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        return proc.stdout + proc.stderr

    def test_the_cli_reads_the_operators_history_through_its_dashboard(self):
        self.create(make_job("TFJob", "remote", self.ns, {"Worker": (1, run_for(1))}))
        self.wait_condition("TFJob", "remote", "Succeeded")
        wait_for("the record", lambda: "remote" in self.history(), timeout=60)
        kubectl("create", "serviceaccount", "reader", "-n", self.ns)
        kubectl("create", "role", "job-reader", "-n", self.ns, "--verb=get,list",
                "--resource=tfjobs.kubeflow.org,pods,pods/log")
        kubectl("create", "rolebinding", "job-reader", "-n", self.ns, "--role=job-reader",
                f"--serviceaccount={self.ns}:reader")
        kubectl("create", "serviceaccount", "nobody", "-n", self.ns)
        token = kubectl("create", "token", "reader", "-n", self.ns).stdout.strip()
        nobody = kubectl("create", "token", "nobody", "-n", self.ns).stdout.strip()
        address = ("--dashboard", f"http://127.0.0.1:{PORT}")

        # This kubeconfig signs in with a client certificate: nothing to pass on.
        refused = self.cluster_history(*address, code=1)
        self.assertIn("client certificate", refused)
        self.assertIn("kubectl create token", refused)

        listed = json.loads(self.cluster_history(*address, "-o", "json", token=token))
        self.assertIn("remote", [row["name"] for row in listed["items"]])
        shown = self.cluster_history(*address, "show", "remote", "--logs", token=token)
        self.assertIn("State:              Succeeded", shown)
        self.assertIn(KWOK_LOG_LINE, shown)
        self.assertIn("remote", self.cluster_history(*address, "search", "remote", token=token))
        # A token without RBAC on the jobs sees no rows and may not read a record.
        self.assertNotIn("remote", self.cluster_history(*address, token=nobody))
        self.assertIn("no job \"remote\"",
                      self.cluster_history(*address, "show", "remote", token=nobody, code=1))
        uid = listed["items"][[r["name"] for r in listed["items"]].index("remote")]["uid"]
        self.assertIn("HTTP 403", self.cluster_history(*address, "show", uid, token=nobody, code=1))

        # Through the API server's proxy to a Service, the default way. The API server proxies
        # only to an address that a pod of the Service's namespace has, so a pod on a kwok node
        # stands in for the operator's: its status says it has this machine's address, where
        # the test's operator listens.
        host = host_address()
        if host is None:
            self.skipTest("no address other than loopback here: the API server does not proxy "
                          "to loopback")
        node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout.strip()
        stand_in = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "dashboard-stand-in", "namespace": self.ns},
                    "spec": {"nodeName": node, "containers": [{"name": "c", "image": "unused"}]}}
        kubectl("create", "-f", "-", input=json.dumps(stand_in))
        wait_for("the stand-in pod to run", lambda: (get_json("pods", "dashboard-stand-in", "-n", self.ns)
                                                     or {}).get("status", {}).get("phase") == "Running")
        kubectl("patch", "pod", "dashboard-stand-in", "-n", self.ns, "--subresource=status",
                "--type=merge", "-p", json.dumps({"status": {"podIP": host, "podIPs": [{"ip": host}]}}))
        service = f"""
apiVersion: v1
kind: Service
metadata: {{name: trainctl-dashboard, namespace: {self.ns}}}
spec:
  ports: [{{name: dashboard, port: 8082, targetPort: {PORT}}}]
---
apiVersion: v1
kind: Endpoints
metadata: {{name: trainctl-dashboard, namespace: {self.ns}}}
subsets:
- addresses: [{{ip: "{host}", targetRef: {{kind: Pod, name: dashboard-stand-in, namespace: {self.ns}}}}}]
  ports: [{{name: dashboard, port: {PORT}, protocol: TCP}}]
"""
        kubectl("apply", "-f", "-", input=service)
        through = ("--dashboard-service", f"{self.ns}/trainctl-dashboard:dashboard")
        proxied = wait_for("the history through the API server's proxy", lambda: (
            lambda out: out if "remote" in out else None)(
                self.cluster_history(*through, token=token, code=None)), timeout=30)
        self.assertIn("Succeeded", proxied)
        bad = self.cluster_history("--dashboard-service", "nope", token=token, code=2)
        self.assertIn("NAMESPACE/NAME:PORT", bad)


def tearDownModule():
    shutil.rmtree(os.path.dirname(HISTORY), ignore_errors=True)  # nothing left in /tmp
