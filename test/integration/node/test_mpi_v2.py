"""MPIJob kubeflow.org/v2beta1 (mpi-operator's API) over real SSH, on the cluster and on this
machine (CTest label `mpi-v2`):

- the cluster: examples/mpi/mpijob-v2beta1.yaml (an mpi4py all-reduce training) and
  pi-v2beta1.yaml (mpi-operator's `pi`, 2 workers × 2 slots) unchanged through `trainctl
  operator` on the real node — the launcher is a batch Job whose mpirun reaches the workers'
  `sshd -De` with the keys of the Secret the operator made, and each rank runs in its worker pod;
- this machine: the same manifests unchanged through `trainctl run --runtime podman`, their image
  copied from the node's loopback registry into podman's storage — each worker container runs
  sshd on a port of its own, the launcher's mpirun logs in with a key pair made for the run, and
  each rank runs in its worker's container; the keys are gone when the run ends, and so are the
  containers; pi again with the launcher as a worker too (its ranks are its own);
- a worker whose command is not sshd: the run warns before it starts, and the job fails through
  its launcher (mpirun cannot log in) instead of hanging;
- a TrainJob on the built-in deepspeed-distributed runtime (examples/mpi/trainjob.yaml) the same
  way: its `node` container's sshd serves the launcher, which runs ranks too.

Environment: see node_harness.py. The image is built by images.sh examples.
"""
import json
import os
import subprocess
import tempfile
import threading
import unittest

import yaml

from node_harness import NODE, REPO, NodeTestCase, deploy_operator, get_json, kubectl, new_namespace, wait_for

EXAMPLE = os.path.join(REPO, "examples", "mpi", "mpijob-v2beta1.yaml")
PI = os.path.join(REPO, "examples", "mpi", "pi-v2beta1.yaml")
IMAGE = "kubeflow/mpi-horovod-mnist:latest"
NAME = "mpi-digits-v2"


def podman(*args, check=True, timeout=600):
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check,
                          timeout=timeout)


class ImageCopy(threading.Thread):
    """The node's image into podman's storage under the name the manifests give it (copied again
    only when the registry holds another build), beside the node's tests: about 40 s of
    decompression, mostly while the node's pods start."""

    def __init__(self):
        super().__init__(daemon=True)
        self.error = None

    def run(self):
        try:
            source = f"docker://127.0.0.1:{NODE['registry']}/{IMAGE}"
            wanted = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--format",
                                     "{{.Digest}}", source], capture_output=True, text=True,
                                    check=True).stdout.strip()
            have = podman("image", "inspect", "--format", "{{.Digest}}", f"docker.io/{IMAGE}",
                          check=False).stdout.strip()
            if have != wanted:
                if have:  # an older build: dropped, so that its layers do not stay behind unnamed
                    podman("rmi", "-f", f"docker.io/{IMAGE}", check=False)
                subprocess.run(["skopeo", "copy", "--quiet", "--src-tls-verify=false", source,
                                f"containers-storage:docker.io/{IMAGE}"], check=True, timeout=600)
        except Exception as e:  # reported by the tests that need the image
            self.error = e


COPY = ImageCopy()


def setUpModule():
    COPY.start()


def results(text):
    """The `RESULT {json}` lines a training printed."""
    return [json.loads(line[line.index("RESULT ") + len("RESULT "):]) for line in text.splitlines()
            if "RESULT {" in line]


class MpiV2OnTheNodeTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        cls.operator = deploy_operator()
        cls.ns = new_namespace("mpiv2")
        # v2beta1 is converted by the operator's webhook once the operator has written its CA
        # into the CRD. Both examples are applied at once: they run side by side.
        def converts():
            crd = get_json("crd", "mpijobs.kubeflow.org") or {}
            return crd.get("spec", {}).get("conversion", {}).get("webhook", {}).get(
                "clientConfig", {}).get("caBundle")
        wait_for("the MPIJob CRD's conversion CA", converts, timeout=120)
        for manifest in (EXAMPLE, PI):
            kubectl("apply", "-n", cls.ns, "-f", manifest)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def finished(self, name):
        def done():
            job = get_json("mpijobs.v2beta1.kubeflow.org", name, "-n", self.ns) or {}
            for c in job.get("status", {}).get("conditions", []):
                if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                    return c
            return None
        condition = wait_for(f"mpijob/{name} to finish", done, timeout=400, interval=2)
        self.assertEqual(condition["type"], "Succeeded", condition)

    def test_pi_runs_two_ranks_in_each_worker(self):
        self.finished("pi")
        (result,) = results(kubectl("logs", "-n", self.ns, "job/pi-launcher").stdout)
        self.assertLess(result["error"], 1e-9, result)
        self.assertEqual(result["ranks"], 4)
        self.assertEqual(sorted(result["hosts"]), ["pi-worker-0"] * 2 + ["pi-worker-1"] * 2)

    def test_the_example_reaches_its_workers_over_ssh(self):
        self.finished(NAME)

        launcher = get_json("job.batch", f"{NAME}-launcher", "-n", self.ns)
        self.assertEqual(launcher["metadata"]["ownerReferences"][0]["kind"], "MPIJob")
        self.assertEqual(launcher["status"].get("succeeded"), 1, launcher["status"])
        ranks = results(kubectl("logs", "-n", self.ns, f"job/{NAME}-launcher").stdout)
        self.assertEqual(sorted(r["rank"] for r in ranks), [0, 1], "mpirun's output carries both ranks")
        # Each rank ran in a worker (its host is the worker pod's), reached over SSH.
        self.assertEqual(sorted(r["host"] for r in ranks), [f"{NAME}-worker-0", f"{NAME}-worker-1"])
        self.assertEqual(len({r["params_sha256"] for r in ranks}), 1)
        self.assertGreater(ranks[0]["test_accuracy"], 0.8)
        secret = get_json("secret", f"{NAME}-ssh", "-n", self.ns)
        self.assertEqual(secret["type"], "kubernetes.io/ssh-auth")
        self.assertEqual(set(secret["data"]), {"ssh-privatekey", "ssh-publickey"})
        hostfile = get_json("configmap", f"{NAME}-config", "-n", self.ns)["data"]["hostfile"]
        self.assertEqual(hostfile.split(),
                         [f"{NAME}-worker-0.{NAME}.{self.ns}.svc", "slots=1",
                          f"{NAME}-worker-1.{NAME}.{self.ns}.svc", "slots=1"])


class MpiV2WithPodmanTest(unittest.TestCase):
    """`trainctl run --runtime podman` of the same manifests, with the image the node runs
    (after the node's tests: its copy runs beside them)."""

    @classmethod
    def setUpClass(cls):
        COPY.join(timeout=600)
        if COPY.is_alive() or COPY.error:
            raise RuntimeError(f"the examples' image did not reach podman's storage: {COPY.error}")
        cls.state = tempfile.mkdtemp(prefix="trainctl-mpi-v2-")

    def run_manifest(self, manifest, timeout=300):
        env = dict(os.environ, TRAINCTL_STATE_DIR=self.state)
        return subprocess.run([os.environ["TRAINCTL_BIN"], "run", "--replace", "--runtime", "podman",
                               manifest], capture_output=True, text=True, env=env, timeout=timeout)

    def folder(self):
        return os.path.join(self.state, "default", "mpijobs", NAME)

    def assertNoContainersLeft(self):
        left = podman("ps", "-a", "--filter", f"label=trainctl.dev/job=mpijob/default/{NAME}",
                      "--format", "{{.Names}}").stdout.split()
        self.assertEqual(left, [])

    def test_the_example_runs_each_rank_in_its_workers_container_over_ssh(self):
        proc = self.run_manifest(EXAMPLE)
        out = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 0, out[-4000:])
        self.assertIn("the workers run sshd as on a cluster", proc.stderr)
        ranks = results(proc.stdout)
        self.assertEqual(sorted(r["rank"] for r in ranks), [0, 1], out[-4000:])
        # Each rank ran in a worker's container (its host name is the worker's), reached through
        # that worker's sshd with the run's key.
        self.assertEqual(sorted(r["host"] for r in ranks), [f"{NAME}-worker-0", f"{NAME}-worker-1"])
        self.assertEqual(len({r["params_sha256"] for r in ranks}), 1)
        self.assertGreater(ranks[0]["test_accuracy"], 0.8)
        self.assertEqual(out.count("Accepted publickey for root"), 2, out[-4000:])
        with open(os.path.join(self.folder(), "hostfile")) as f:
            self.assertEqual(f.read().split(), [f"{NAME}-worker-0.{NAME}.default.svc", "slots=1",
                                                f"{NAME}-worker-1.{NAME}.default.svc", "slots=1"])
        self.assertFalse(os.path.exists(os.path.join(self.folder(), "ssh")), "the keys are removed")
        self.assertNoContainersLeft()

    def test_pi_runs_in_the_workers_and_in_a_launcher_that_works_too(self):
        proc = self.run_manifest(PI)
        self.assertEqual(proc.returncode, 0, (proc.stdout + proc.stderr)[-4000:])
        (result,) = results(proc.stdout)
        self.assertLess(result["error"], 1e-9, result)
        self.assertEqual(sorted(result["hosts"]), ["pi-worker-0"] * 2 + ["pi-worker-1"] * 2)
        with open(PI) as f:
            job = yaml.safe_load(f)
        job["spec"]["runLauncherAsWorker"] = True
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"][1] = "6"
        manifest = os.path.join(self.state, "pi-launcher-works.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump(job, f)
        proc = self.run_manifest(manifest)
        self.assertEqual(proc.returncode, 0, (proc.stdout + proc.stderr)[-4000:])
        (result,) = results(proc.stdout)
        self.assertLess(result["error"], 1e-9, result)
        # The launcher's slots come first in the hostfile: ranks 0 and 1 are its own.
        self.assertEqual(result["hosts"], ["pi-launcher"] * 2 + ["pi-worker-0"] * 2 +
                         ["pi-worker-1"] * 2)
        pi_folder = os.path.join(self.state, "default", "mpijobs", "pi")
        with open(os.path.join(pi_folder, "hostfile")) as f:
            self.assertEqual(f.read().split(), ["localhost", "slots=2",
                                                "pi-worker-0.pi.default.svc", "slots=2",
                                                "pi-worker-1.pi.default.svc", "slots=2"])

    def test_an_mpi_trainjob_runs_its_ranks_in_the_launcher_and_node_containers(self):
        # Trainer v2: the built-in deepspeed-distributed (the launcher a node too) — the node's
        # sshd on a port of its own, found by the name its JobSet pod would have.
        proc = self.run_manifest(os.path.join(REPO, "examples", "mpi", "trainjob.yaml"))
        out = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 0, out[-4000:])
        (result,) = results(proc.stdout)
        self.assertLess(result["error"], 1e-9, result)
        self.assertEqual(result["hosts"], ["pi-mpi-launcher-0"] * 2 + ["pi-mpi-node-0"] * 2, out[-4000:])
        folder = os.path.join(self.state, "default", "trainjobs", "pi-mpi")
        with open(os.path.join(folder, "hostfile")) as f:
            self.assertEqual(f.read().split(), ["localhost", "slots=2", "pi-mpi-node-0-0.pi-mpi", "slots=2"])
        left = podman("ps", "-a", "--filter", "label=trainctl.dev/job=trainjob/default/pi-mpi",
                      "--format", "{{.Names}}").stdout.split()
        self.assertEqual(left, [])

    def test_a_worker_that_runs_no_sshd_fails_the_job_through_its_launcher(self):
        with open(EXAMPLE) as f:
            job = yaml.safe_load(f)
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = [
            "sleep", "infinity"]
        job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"] = [
            "mpirun", "-np", "2", "hostname"]
        # No retries: the launcher (OnFailure) would otherwise try 6 more times with back-off.
        job["spec"]["runPolicy"]["backoffLimit"] = 0
        manifest = os.path.join(self.state, "no-sshd.yaml")
        with open(manifest, "w") as f:
            yaml.safe_dump(job, f)
        proc = self.run_manifest(manifest, timeout=180)
        out = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 1, out[-4000:])
        self.assertIn("warning: spec.mpiReplicaSpecs[Worker].template.spec.containers[0].command is "
                      "not sshd", proc.stderr)
        self.assertIn("Failed", out)
        self.assertNoContainersLeft()


if __name__ == "__main__":
    unittest.main()
