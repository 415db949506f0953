"""The real node (hack/cluster/node.sh) in the test cluster: a kubelet with containerd and runc
runs real containers from images built on this machine and served by the loopback registry;
CoreDNS answers service names; kube-proxy routes service addresses; nothing leaves the machine
(shown against an "outside" network namespace that the egress test makes, hack/cluster/outside.sh).

Environment (set by test/CMakeLists.txt): TRAINCTL_CLUSTER_DIR, TRAINCTL_PORT_BASE,
TRAINCTL_REPO. The cluster is started by the CTest fixture `node.up` (TRAINCTL_REAL_NODE=1).
"""
import glob
import ipaddress
import json
import os
import socket
import subprocess
import tempfile
import unittest

from node_harness import (new_namespace, NODE, NodeTestCase, REPO, egress_drops, get_json, kubectl,
                          pod, registry_digest, run_script, wait_for)
from harness import TRAINCTL  # noqa: E402 (test/integration/operator, put on the path by node_harness)


def outside_connections():
    """The peers the outside namespace's listener accepted (hack/cluster/outside.sh)."""
    return run_script("outside.sh", "connections").split()


class RealNodeTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.ns = new_namespace("node")

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def create(self, obj):
        kubectl("apply", "-n", self.ns, "-f", "-", input=json.dumps(obj))

    def pod_json(self, name):
        return get_json("pod", name, "-n", self.ns)

    def phase(self, name):
        p = self.pod_json(name)
        return p and p.get("status", {}).get("phase")

    def wait_phase(self, name, phases, timeout=120):
        return wait_for(f"pod {name} in {phases}", lambda: self.phase(name) in phases and self.phase(name),
                        timeout=timeout)

    def logs(self, name):
        return kubectl("logs", "-n", self.ns, name).stdout

    def waiting_reason(self, name):
        p = self.pod_json(name) or {}
        for s in p.get("status", {}).get("containerStatuses", []):
            waiting = s.get("state", {}).get("waiting")
            if waiting:
                return waiting.get("reason"), waiting.get("message", "")
        return None

    def test_the_node_is_a_real_kubelet_with_containerd(self):
        node = get_json("node", NODE["name"])
        self.assertIsNotNone(node, "the real node is registered")
        info = node["status"]["nodeInfo"]
        self.assertTrue(info["containerRuntimeVersion"].startswith("containerd://"), info)
        self.assertTrue(info["kubeletVersion"].startswith("v1."), info)
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        self.assertEqual(ready[0]["status"], "True", ready)
        self.assertEqual(ready[0]["reason"], "KubeletReady", "reported by a kubelet, not kwok")

    def test_a_container_runs_from_the_loopback_registry_and_its_log_comes_from_the_kubelet(self):
        self.create(pod("hello", ["sh", "-c", "echo hello from $(hostname) in $(cat /proc/1/comm); exit 0"]))
        self.assertEqual(self.wait_phase("hello", ("Succeeded", "Failed")), "Succeeded")
        p = self.pod_json("hello")
        self.assertIn(ipaddress.ip_address(p["status"]["podIP"]), NODE["cidr"], "an address on the node's bridge")
        status = p["status"]["containerStatuses"][0]
        self.assertEqual(status["state"]["terminated"]["exitCode"], 0)
        self.assertEqual(status["image"], NODE["busybox"])
        self.assertTrue(status["imageID"].endswith("@" + registry_digest("library/busybox", NODE["busybox"].rsplit(":", 1)[1])),
                        "the image pulled is the loopback registry's")
        self.assertEqual(self.logs("hello").strip(), "hello from hello in sh")

    def test_exit_codes_and_termination_messages_are_the_kubelets(self):
        spec = pod("crash", ["sh", "-c", "echo 'rank 0: out of patience' >/dev/termination-log; exit 3"])
        self.create(spec)
        self.assertEqual(self.wait_phase("crash", ("Succeeded", "Failed")), "Failed")
        terminated = self.pod_json("crash")["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual(terminated["exitCode"], 3)
        self.assertEqual(terminated["reason"], "Error")
        self.assertEqual(terminated["message"], "rank 0: out of patience\n")

    def test_service_names_resolve_and_service_addresses_route(self):
        # A pod serving HTTP behind a headless Service (its own DNS name) and a ClusterIP Service.
        server = pod("web", ["sh", "-c", "mkdir -p /www && echo served-by-web >/www/index.html && "
                             "exec httpd -f -p 8080 -h /www"], restart="Always",
                     hostname="web", subdomain="peers")
        self.create(server)
        for svc in ({"metadata": {"name": "peers"}, "spec": {"clusterIP": "None", "selector": {"app": "web"},
                                                             "ports": [{"port": 8080}]}},
                    {"metadata": {"name": "web-svc"}, "spec": {"selector": {"app": "web"},
                                                               "ports": [{"port": 80, "targetPort": 8080}]}}):
            self.create({"apiVersion": "v1", "kind": "Service", **svc})
        wait_for("web Ready", lambda: any(c["type"] == "Ready" and c["status"] == "True" for c in
                                          (self.pod_json("web") or {}).get("status", {}).get("conditions", [])))
        web_ip = self.pod_json("web")["status"]["podIP"]
        cluster_ip = get_json("service", "web-svc", "-n", self.ns)["spec"]["clusterIP"]
        api_ip = get_json("service", "kubernetes", "-n", "default")["spec"]["clusterIP"]
        fqdn = f"web.peers.{self.ns}.svc.cluster.local"
        # Names are looked up with nslookup (busybox's own resolver; its static wget and nc
        # would need glibc's NSS modules to resolve), then used by address. Each step retries
        # for a while: endpoints reach CoreDNS and kube-proxy shortly after the pod is Ready.
        # The API server is checked by a TCP connection through the `kubernetes` Service
        # (busybox's TLS cannot talk to it). `timeout`, not wget's -T: Debian's busybox-static
        # 1.35 wget crashes with -T.
        retry = "for i in $(seq 30); do {cmd} && break; sleep 1; done"
        names = [fqdn, f"web-svc.{self.ns}.svc.cluster.local", "kubernetes.default.svc.cluster.local"]
        client = pod("client", ["sh", "-c", "; ".join(
            [retry.format(cmd=f"nslookup {n} >/tmp/dns-{i} 2>&1") + f"; cat /tmp/dns-{i}; echo ---"
             for i, n in enumerate(names)] +
            [retry.format(cmd=f"timeout 3 wget -q -O- http://{web_ip}:8080/"),
             retry.format(cmd=f"timeout 3 wget -q -O- http://{cluster_ip}/"), "echo ---",
             retry.format(cmd=f"nc -w 3 {api_ip} 443 </dev/null && echo api-reached")])])
        self.create(client)
        self.wait_phase("client", ("Succeeded", "Failed"), timeout=180)
        out = self.logs("client")
        web_dns, svc_dns, api_dns, http, api = out.split("---\n")
        self.assertIn(web_ip, web_dns, "the pod's name resolves to its address through CoreDNS")
        self.assertIn(cluster_ip, svc_dns, "the Service's name resolves to its ClusterIP")
        self.assertIn(api_ip, api_dns)
        self.assertEqual(http.split(), ["served-by-web", "served-by-web"],
                         "reached at its address and through the ClusterIP Service (kube-proxy)")
        self.assertIn("api-reached", api, "the API server through the `kubernetes` Service")

    def test_an_image_the_registry_does_not_have_is_a_real_pull_error(self):
        self.create(pod("missing", ["true"], image="docker.io/trainctl/no-such-image:1"))
        reason, message = wait_for("a pull error", lambda: (self.waiting_reason("missing") or (None, ""))[0]
                                   in ("ErrImagePull", "ImagePullBackOff") and self.waiting_reason("missing"),
                                   timeout=60)
        self.assertIn("not found", message.lower() + self.pull_event_messages("missing"))

    def pull_event_messages(self, name):
        events = get_json("events", "-n", self.ns, "--field-selector", f"involvedObject.name={name}") or {}
        return " ".join(e.get("message", "") for e in events.get("items", [])).lower()

    def test_an_unmapped_registry_is_refused_on_this_machine(self):
        self.create(pod("elsewhere", ["true"], image="registry.example.com/team/train:1"))
        wait_for("a pull error", lambda: (self.waiting_reason("elsewhere") or (None, ""))[0]
                 in ("ErrImagePull", "ImagePullBackOff"), timeout=60)
        text = wait_for("the pull's failure in the events", lambda: "127.0.0.1:9" in self.pull_event_messages(
            "elsewhere") and self.pull_event_messages("elsewhere"), timeout=60)
        self.assertIn("proxyconnect", text, "containerd went to the refusing proxy, not to the network")

    def test_a_local_run_leaves_an_empty_node_cgroup_root_alone(self):
        # node.sh up makes the kubelet's cgroup root, empty, minutes before the kubelet starts
        # (images are built in between), and a `trainctl run` on this machine with limits (so
        # with cgroups) removes empty cgroups named like a dead runner's ("trainctl-<pid>").
        # Shown with the root of a port base no process id can equal, made as node.sh makes it.
        with open("/proc/sys/kernel/pid_max") as f:
            base = (int(f.read()) // 100 + 1) * 100
        root = subprocess.run(["bash", "-c", f"source {REPO}/hack/cluster/lib.sh; echo $CGROUP_ROOT"],
                              env=dict(os.environ, TRAINCTL_PORT_BASE=str(base)), check=True,
                              capture_output=True, text=True).stdout.strip()
        if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            dirs = [os.path.join("/sys/fs/cgroup", root)]
        else:
            dirs = [os.path.join(d, root) for d in glob.glob("/sys/fs/cgroup/*/")
                    if os.path.exists(os.path.join(d, "cgroup.procs"))]
        for d in dirs:
            os.makedirs(d)
            self.addCleanup(lambda d=d: os.path.isdir(d) and os.rmdir(d))
        with tempfile.TemporaryDirectory() as state:
            job = os.path.join(state, "job.yaml")
            with open(job, "w") as f:
                f.write("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: beside-the-node}\n"
                        "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n"
                        "      template: {spec: {containers: [{name: pytorch, image: none, command: [\"true\"],\n"
                        "                                      resources: {limits: {memory: 64Mi}}}]}}\n")
            env = {k: v for k, v in os.environ.items() if k != "TRAINCTL_CGROUPS"}
            run = subprocess.run([TRAINCTL, "run", "-q", job], env=dict(env, TRAINCTL_STATE_DIR=state),
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual([d for d in dirs if not os.path.isdir(d)], [], f"{root} kept in every hierarchy")

    def test_a_pod_cannot_reach_anything_outside_this_machine(self):
        # "The world" is a network namespace of this test's own (hack/cluster/outside.sh), routed
        # from this machine as a network beyond one of its links would be, with a listener: no
        # packet is addressed off this machine. Removed even when the test fails.
        self.addCleanup(run_script, "outside.sh", "down")
        address, port, host_end = run_script("outside.sh", "up").split()
        # The control: this machine reaches the listener by its route.
        with socket.create_connection((address, int(port)), timeout=5) as s:
            self.assertEqual(s.recv(64), b"outside\n", "this machine reaches the outside namespace")
        self.assertEqual(outside_connections(), [host_end], "the listener logs whom it accepted")

        before = egress_drops()
        self.create(pod("egress", ["sh", "-c", f"nc -w 3 {address} {port} </dev/null; echo tcp=$?; "
                                   "nslookup example.com 2>&1; echo dns-done"]))
        self.wait_phase("egress", ("Succeeded", "Failed"))
        out = self.logs("egress")
        self.assertIn("tcp=1", out, out)
        self.assertEqual(outside_connections(), [host_end], "the listener saw no connection from the pod")
        self.assertGreater(egress_drops(), before, "the packets were dropped by the node's egress rule")
        dns = out.split("tcp=1", 1)[1]
        self.assertIn("can't find example.com", dns, "CoreDNS forwards nothing: names outside the cluster fail")
        answers = [l for l in dns.splitlines() if l.startswith("Address") and ":53" not in l and "#53" not in l]
        self.assertEqual(answers, [], "no address for an outside name")


if __name__ == "__main__":
    unittest.main()
