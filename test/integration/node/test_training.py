"""The operator for real: `trainctl operator` deployed from manifests/ unchanged (its image
built here from the repository's Dockerfile, RBAC, leader election, the webhook with its own
certificates) reconciles the examples on the real node, in real containers:

- examples/pytorch/pytorchjob.yaml: DDP over gloo, the Worker's init container waiting for
  the Master's DNS name, peers found through the headless Services;
- examples/xgboost/xgboostjob.yaml: Rabit's tracker in the Master, three ranks;
- examples/mpi/mpijob.yaml: mpirun in the Launcher starts its ranks in the Worker pods through
  kubexec.sh (kubectl exec), as upstream's v1 MPIJob does, after the kubectl-delivery init
  container saw every Worker Running;
- a replica killed mid-training (SIGKILL to its process, through containerd) follows its
  restart policy, and the operator reports the crash loop it started, once.

examples/mpi/mpijob-v2beta1.yaml (over SSH) is test_mpi_v2.py's.

Environment: see node_harness.py. Each example's image is built by images.sh examples.
"""
import ipaddress
import json
import os
import subprocess
import unittest

import yaml

from node_harness import (NodeTestCase, NODE, OPERATOR_DEPLOYMENT, OPERATOR_NS, REPO, deploy_operator, get_json,
                          kubectl, new_namespace, operator_pods, wait_for)


def results(namespace, pod_name, container=None):
    """The `RESULT {json}` lines a training printed, from `kubectl logs` (the kubelet's log)."""
    args = ["logs", "-n", namespace, pod_name] + (["-c", container] if container else [])
    return [json.loads(line[len("RESULT "):]) for line in kubectl(*args).stdout.splitlines()
            if line.startswith("RESULT ")]


def example(path, name=None):
    """An example manifest (parsed), renamed when asked."""
    with open(os.path.join(REPO, "examples", path)) as f:
        job = yaml.safe_load(f)
    if name:
        job["metadata"]["name"] = name
    return job


class OperatorOnTheNodeTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.operator = deploy_operator()
        cls.ns = new_namespace("train")

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def operator_log(self):
        return kubectl("logs", "-n", OPERATOR_NS, f"deployment/{OPERATOR_DEPLOYMENT}", "--tail=60",
                       check=False).stdout

    def finished(self, plural, name, timeout=400):
        def done():
            job = get_json(plural, name, "-n", self.ns) or {}
            for c in job.get("status", {}).get("conditions", []):
                if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                    return job, c
            return None
        job, condition = wait_for(f"{plural}/{name} to finish", done, timeout=timeout, interval=2)
        self.assertEqual(condition["type"], "Succeeded", f"{condition}\n{self.operator_log()}")
        return job

    def apply(self, obj_or_path):
        if isinstance(obj_or_path, str):
            kubectl("apply", "-n", self.ns, "-f", os.path.join(REPO, "examples", obj_or_path))
        else:
            kubectl("apply", "-n", self.ns, "-f", "-", input=json.dumps(obj_or_path))

    def test_the_operator_runs_in_the_cluster_as_the_manifests_deploy_it(self):
        pods = operator_pods()
        self.assertEqual(len(pods), 1)
        pod = pods[0]
        self.assertEqual(pod["spec"]["nodeName"], NODE["name"], "on the real node, not on the host")
        self.assertIn(ipaddress.ip_address(pod["status"]["podIP"]), NODE["cidr"])
        self.assertEqual(pod["spec"]["containers"][0]["image"], "trainctl:latest", "the manifests' own image name")
        # The namespace enforces the "restricted" Pod Security Standard: the pod was admitted.
        ns = get_json("namespace", OPERATOR_NS)
        self.assertEqual(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted")
        # Leader election: the Lease names this pod.
        leases = get_json("leases", "-n", OPERATOR_NS)["items"]
        holders = [l["spec"].get("holderIdentity", "") for l in leases]
        self.assertTrue(any(h.startswith(pod["metadata"]["name"]) for h in holders), holders)
        # The webhook, with the certificate the operator made: the API server reaches it
        # through the Service on the node, and it refuses a bad job with the field path.
        config = get_json("validatingwebhookconfiguration", "validator.trainctl.kubeflow.org")
        self.assertTrue(all(w["clientConfig"].get("caBundle") for w in config["webhooks"]))
        bad = example("pytorch/pytorchjob.yaml", "two-masters")
        bad["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
        out = kubectl("apply", "-n", self.ns, "-f", "-", input=json.dumps(bad), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('admission webhook "validator.pytorchjob.trainctl.kubeflow.org" denied the request', out.stderr)
        self.assertIn("spec.pytorchReplicaSpecs[Master].replicas", out.stderr)
        self.assertIsNone(get_json("pytorchjob", "two-masters", "-n", self.ns))

    def test_the_pytorch_example_trains_in_real_containers(self):
        self.apply("pytorch/pytorchjob.yaml")
        name = "pytorch-ddp-digits"
        self.finished("pytorchjobs", name)
        (master,), (worker,) = results(self.ns, f"{name}-master-0"), results(self.ns, f"{name}-worker-0")
        self.assertEqual((master["rank"], worker["rank"]), (0, 1))
        self.assertEqual(master["world_size"], 2)
        self.assertEqual(master["params_sha256"], worker["params_sha256"], "DDP kept the replicas in step")
        self.assertGreater(master["test_accuracy"], 0.8)
        worker_pod = get_json("pod", f"{name}-worker-0", "-n", self.ns)
        init = worker_pod["status"]["initContainerStatuses"][0]
        self.assertEqual(init["name"], "init-pytorch")
        self.assertEqual(init["state"]["terminated"]["exitCode"], 0, "the Worker waited for the Master's name")
        self.assertIn(ipaddress.ip_address(worker_pod["status"]["podIP"]), NODE["cidr"])

    def test_the_xgboost_example_trains_in_real_containers(self):
        self.apply("xgboost/xgboostjob.yaml")
        name = "xgboost-dist-digits"
        self.finished("xgboostjobs", name)
        ranks = [results(self.ns, f"{name}-{r}")[0] for r in ("master-0", "worker-0", "worker-1")]
        self.assertEqual(sorted(r["rank"] for r in ranks), [0, 1, 2])
        self.assertEqual({r["world_size"] for r in ranks}, {3})
        self.assertEqual(len({r["booster_sha256"] for r in ranks}), 1, "one booster, trained by all ranks")
        self.assertGreater(ranks[0]["test_accuracy"], 0.8)

    def test_the_mpi_example_launches_its_ranks_in_the_worker_pods(self):
        self.apply("mpi/mpijob.yaml")
        name = "mpi-digits"
        self.finished("mpijobs", name)
        ranks = results(self.ns, f"{name}-launcher", "mpi")
        self.assertEqual(sorted(r["rank"] for r in ranks), [0, 1], "mpirun's output carries both ranks")
        self.assertEqual(len({r["params_sha256"] for r in ranks}), 1)
        self.assertGreater(ranks[0]["test_accuracy"], 0.8)
        launcher = get_json("pod", f"{name}-launcher", "-n", self.ns)
        delivery = launcher["status"]["initContainerStatuses"][0]
        self.assertEqual(delivery["name"], "kubectl-delivery")
        self.assertEqual(delivery["state"]["terminated"]["exitCode"], 0)
        waited = kubectl("logs", "-n", self.ns, f"{name}-launcher", "-c", "kubectl-delivery").stdout
        self.assertIn(f"pod {name}-worker-1 is Running", waited)
        # The ranks ran inside the Workers: kubexec.sh exec'd orted there (the launcher's
        # `set -x` trace names each worker pod). Both kubexec.sh run at once and the shell
        # writes a trace word by word, so their lines interleave ("kubectl exec exec
        # mpi-digits-worker-0 mpi-digits-worker-1" in CI's run): only single words are checked.
        launcher_log = kubectl("logs", "-n", self.ns, f"{name}-launcher", "-c", "mpi").stdout
        for i in range(2):
            self.assertIn(f"POD_NAME={name}-worker-{i}", launcher_log)
        # cleanPodPolicy Running: the idle Workers are deleted once the Launcher succeeded
        # (their `sleep` ignores SIGTERM, so they are gone only after the 30 s grace period).
        def deleted(i):
            p = get_json("pod", f"{name}-worker-{i}", "-n", self.ns)
            return p is None or p["metadata"].get("deletionTimestamp")
        wait_for("the workers deleted", lambda: all(deleted(i) for i in range(2)), timeout=60)

    def test_a_replica_killed_mid_training_is_restarted_by_its_policy(self):
        # The PyTorch example (restartPolicy OnFailure on both replicas), long enough to kill.
        name = "ddp-killed"
        job = example("pytorch/pytorchjob.yaml", name)
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["containers"][0]["args"] = ["--epochs", "300"]
        self.apply(job)
        worker = f"{name}-worker-0"
        wait_for("the worker training", lambda: "epoch 3/" in kubectl(
            "logs", "-n", self.ns, worker, check=False).stdout, timeout=300, interval=1)
        container_id = get_json("pod", worker, "-n", self.ns)["status"]["containerStatuses"][0]["containerID"]
        socket = os.path.join(os.environ["TRAINCTL_CLUSTER_DIR"], "node", "run", "containerd.sock")
        subprocess.run(["ctr", "-a", socket, "-n", "k8s.io", "task", "kill", "-s", "SIGKILL",
                        container_id.split("://", 1)[1]], check=True, capture_output=True, timeout=30)

        status = self.finished("pytorchjobs", name)["status"]
        killed = get_json("pod", worker, "-n", self.ns)["status"]["containerStatuses"][0]
        self.assertEqual(killed["lastState"]["terminated"]["exitCode"], 137, killed)
        self.assertGreaterEqual(killed["restartCount"], 1, "OnFailure: the kubelet restarted it in place")
        self.assertEqual(status["replicaStatuses"]["Worker"]["succeeded"], 1)
        self.assertGreaterEqual(status["replicaStatuses"]["Worker"]["restarts"], 1)
        (master,), (again,) = results(self.ns, f"{name}-master-0"), results(self.ns, worker)
        self.assertEqual(master["params_sha256"], again["params_sha256"], "the restarted pair trained in step")
        # The operator reported the loop the kill started. Which replica its one event names
        # depends on which restart the kubelet reported first: the killed Worker, or the Master
        # whose DDP failed a moment later (exit 1, "Connection reset by peer").
        loops = [e["message"] for e in get_json("events", "-n", self.ns, "--field-selector",
                                                f"involvedObject.name={name}")["items"]
                 if e["reason"] == "CrashLoopBackOff"]
        self.assertEqual(len(loops), 1, loops)
        self.assertRegex(loops[0], r"keep crashing and restarting \((Master 0|Worker 0|Master 0; Worker 0)\)")
        master_pod = get_json("pod", f"{name}-master-0", "-n", self.ns)["status"]["containerStatuses"][0]
        self.assertGreaterEqual(master_pod["restartCount"], 1, "the Master's DDP failed and was restarted too")


if __name__ == "__main__":
    unittest.main()
