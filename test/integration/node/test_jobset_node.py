"""The real JobSet controller (hack/cluster/jobset.sh) on the real node: a JobSet of two
replicated Jobs whose pods run busybox from the loopback registry. The client, made once the
server is Ready (dependsOn), reaches the server by the hostname JobSet gives it,
<jobset>-server-0-0.<jobset> (its headless Service, through the node's CoreDNS), and both run to
Completed, so the JobSet does.

Environment: see node_harness.py; TRAINCTL_PORT_BASE (the controller's health port is base+92).
"""
import json
import os
import unittest
import urllib.request

from node_harness import NODE, NodeTestCase, get_json, kubectl, new_namespace, wait_for

HEALTH_PORT = int(os.environ.get("TRAINCTL_PORT_BASE", "29400")) + 92
SERVER = "nc -l -p 7000"  # prints what the client sends, then exits 0
# Tries for a minute: the server may not listen yet, or its name not be in DNS yet.
CLIENT = ('for i in $(seq 60); do echo "hello from $(hostname)" | nc pair-server-0-0.pair 7000 '
          '&& exit 0; sleep 1; done; exit 1')


def replicated_job(name, script, depends_on=None):
    rjob = {"name": name, "replicas": 1, "template": {"spec": {
        "backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": NODE["busybox"], "command": ["sh", "-c", script]}]}}}}}
    if depends_on:
        rjob["dependsOn"] = [{"name": depends_on, "status": "Ready"}]
    return rjob


class JobSetOnTheNode(NodeTestCase):

    @classmethod
    def setUpClass(cls):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{HEALTH_PORT}/readyz", timeout=2) as r:
                ready = r.read().decode() == "ok"
        except OSError:
            ready = False
        if not ready:
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}/readyz "
                                 "(TRAINCTL_JOBSET=1 hack/cluster/up.sh starts it)")
        cls.ns = new_namespace("jobset")

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def test_the_client_reaches_the_server_by_its_jobset_hostname_and_both_complete(self):
        spec = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "pair", "namespace": self.ns},
                "spec": {"replicatedJobs": [replicated_job("server", SERVER),
                                            replicated_job("client", CLIENT, depends_on="server")]}}
        kubectl("create", "-f", "-", input=json.dumps(spec))

        def completed():
            js = get_json("jobset", "pair", "-n", self.ns) or {}
            conditions = {c["type"]: c["status"] for c in js.get("status", {}).get("conditions", [])}
            if conditions.get("Failed") == "True":
                raise AssertionError(f"the JobSet failed: {js['status']}")
            return js if conditions.get("Completed") == "True" else None
        js = wait_for("JobSet pair Completed", completed, timeout=180, interval=1)
        self.assertEqual(js["status"]["terminalState"], "Completed")

        pods = {p["spec"]["hostname"]: p for p in get_json(
            "pods", "-n", self.ns, "-l", "jobset.sigs.k8s.io/jobset-name=pair")["items"]}
        self.assertEqual(sorted(pods), ["pair-client-0-0", "pair-server-0-0"])
        for pod in pods.values():
            self.assertEqual(pod["spec"]["nodeName"], NODE["name"])
            self.assertEqual(pod["status"]["phase"], "Succeeded")
        server_log = kubectl("logs", "-n", self.ns, pods["pair-server-0-0"]["metadata"]["name"]).stdout
        self.assertEqual(server_log.strip(), "hello from pair-client-0-0")


if __name__ == "__main__":
    unittest.main()
