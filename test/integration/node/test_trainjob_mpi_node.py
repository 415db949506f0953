"""A TrainJob on Kubeflow Trainer v2.3.0's own deepspeed-distributed ClusterTrainingRuntime
(applied unchanged from the Go module) through `trainctl operator` on the real node: mpirun on
the launcher logs in over SSH to the `node` pod's sshd (port 2222, as mpiuser) with the keys of
the Secret the operator makes, reads the hosts from the hostfile ConfigMap it makes, and a real
MPI allreduce over both pods gives the sum of the ranks.

The runtime's image, ghcr.io/kubeflow/trainer/deepspeed-runtime, is a stand-in served by the
loopback registry (hack/cluster/images.sh trainer-runtimes: Open MPI, mpi4py and OpenSSH;
DeepSpeed itself is not packaged for Debian). The real JobSet controller (fixture node-jobset)
runs the JobSet.

Environment: see node_harness.py.
"""
import base64
import json
import unittest

from node_harness import UpstreamRuntimeTestCase, get_json, kubectl, wait_for

RUNTIME = "deepspeed-distributed"
# Rank r adds r + 1: 2 ranks sum to 3. Rank 0 prints every rank's host.
PROGRAM = ("import json, socket\n"
           "from mpi4py import MPI\n"
           "c = MPI.COMM_WORLD\n"
           "total = c.allreduce(c.Get_rank() + 1)\n"
           "hosts = c.gather(socket.gethostname())\n"
           "if c.Get_rank() == 0:\n"
           "    print('RESULT ' + json.dumps({'sum': total, 'size': c.Get_size(), 'hosts': hosts}),"
           " flush=True)\n")


class MpiTrainJobOnTheNode(UpstreamRuntimeTestCase):
    runtime = RUNTIME
    runtime_file = "deepspeed_distributed.yaml"
    namespace_prefix = "tj-mpi"

    def test_mpirun_reaches_the_node_over_ssh_and_reduces_across_both_pods(self):
        name = "pi"
        trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                    "metadata": {"name": name, "namespace": self.ns},
                    "spec": {"runtimeRef": {"name": RUNTIME},
                             "trainer": {"numNodes": 2,
                                         "command": ["mpirun", "-n", "2", "python3", "-c",
                                                     PROGRAM]}}}
        kubectl("apply", "-f", "-", input=json.dumps(trainjob))

        def finished():
            tj = get_json("trainjob", name, "-n", self.ns) or {}
            done = [c["type"] for c in tj.get("status", {}).get("conditions", [])
                    if c["type"] in ("Complete", "Failed") and c["status"] == "True"]
            return done[0] if done else None
        try:
            wait_for("the TrainJob finished", finished, timeout=300)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.explain(name)}")
        self.assertEqual(finished(), "Complete", self.explain(name))

        # Upstream's objects beside the JobSet, owned by the TrainJob.
        hostfile = get_json("configmap", f"{name}-mpi-hostfile", "-n", self.ns)
        self.assertEqual(hostfile["data"]["hostfile"],
                         f"{name}-node-0-0.{name} slots=1\n{name}-launcher-0-0.{name} slots=1\n")
        secret = get_json("secret", f"{name}-mpi-ssh-auth", "-n", self.ns)
        self.assertEqual(secret["type"], "kubernetes.io/ssh-auth")
        self.assertTrue(secret.get("immutable"))
        self.assertIn("BEGIN EC PRIVATE KEY",
                      base64.b64decode(secret["data"]["ssh-privatekey"]).decode())
        for obj in (hostfile, secret):
            [owner] = obj["metadata"]["ownerReferences"]
            self.assertEqual((owner["kind"], owner["name"], owner["controller"]),
                             ("TrainJob", name, True))

        # The launcher's mpirun ran a rank on each pod: the node's through its sshd.
        [launcher] = get_json("pods", "-n", self.ns, "-l",
                              "jobset.sigs.k8s.io/replicatedjob-name=launcher")["items"]
        log = kubectl("logs", "-n", self.ns, launcher["metadata"]["name"]).stdout
        [line] = [l for l in log.splitlines() if l.startswith("RESULT ")]
        result = json.loads(line[len("RESULT "):])
        self.assertEqual((result["sum"], result["size"]), (3, 2), log)
        self.assertEqual(sorted(h.split(".")[0] for h in result["hosts"]),
                         [f"{name}-launcher-0-0", f"{name}-node-0-0"], log)


if __name__ == "__main__":
    unittest.main()
