"""The SDK's local backend with `runtime="podman"`: upstream's image-only `create_job(name,
base_image, num_workers)` (no function, no command: the image's entrypoint runs) works on this
machine, with the operator's env in each container; TrainerClient's `train()` with a
CustomTrainerContainer runs a 2-node TrainJob as containers. The image is made here as in
test/e2e/test_containers.py (busybox-static, `podman import`, a private storage, registries
blocked)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import pytest

from trainctl import TrainingClient

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
from test_containers import CMD, ENTRYPOINT, IMAGE, busybox_rootfs_tar, podman_env  # noqa: E402

PODMAN = shutil.which("podman")


@unittest.skipUnless(PODMAN, "podman is not installed (make test installs it)")
class ContainerRuntimeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="trainctl-sdk-podman-")
        self.saved = {k: os.environ.get(k) for k in podman_env(self.tmp)}
        os.environ.update(podman_env(self.tmp))  # the runner and its podman inherit it
        tar = os.path.join(self.tmp, "rootfs.tar")
        busybox_rootfs_tar(tar)
        subprocess.run([PODMAN, "import", "--change", f"ENTRYPOINT {ENTRYPOINT}", "--change",
                        f"CMD {CMD}", tar, IMAGE], check=True, capture_output=True, timeout=120)
        self.client = TrainingClient(backend="local", state_dir=os.path.join(self.tmp, "state"),
                                     runtime="podman")

    def tearDown(self):
        subprocess.run([PODMAN, "rm", "--all", "--force"], capture_output=True, timeout=120)
        subprocess.run([PODMAN, "system", "reset", "--force"], capture_output=True, timeout=120)
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_an_image_job_runs_its_entrypoint_in_containers(self):
        c = self.client
        c.create_job(name="img", base_image=IMAGE, num_workers=2)
        c.wait_for_job_conditions("img", timeout=120, polling_interval=1)
        self.assertTrue(c.is_job_succeeded("img"))
        logs, _ = c.get_job_logs("img", is_master=False)
        joined = "\n".join(logs.values())
        self.assertIn("wiring RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1", joined)
        self.assertIn("wiring RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1", joined)
        self.assertIn("args from-the-image", joined)
        listed = subprocess.run([PODMAN, "ps", "--all", "--format", "{{.Names}}"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(listed.stdout.strip(), "")

    def test_trainer_client_runs_a_trainjob_as_containers_on_two_nodes(self):
        # TrainerClient's same call, runtime="podman": each node of the built-in torch runtime a
        # container of the trainer's image, wired as torchrun expects, the trainer's env given,
        # and the run's status endpoint reachable from inside (its variables and files).
        from trainctl import CustomTrainerContainer, TrainerClient
        from trainctl.trainer_types import TrainerCommand
        c = TrainerClient(backend="local", state_dir=os.path.join(self.tmp, "state"),
                          runtime="podman")
        script = ("echo torch NNODES=$PET_NNODES RANK=$PET_NODE_RANK GREETING=$GREETING; "
                  "test -s $KUBEFLOW_TRAINER_SERVER_TOKEN && echo endpoint ${"
                  "KUBEFLOW_TRAINER_SERVER_URL%%/apis/*}")
        name = c.train(runtime="torch-distributed",
                       trainer=CustomTrainerContainer(image=IMAGE, num_nodes=2,
                                                      env={"GREETING": "hello"}),
                       options=[TrainerCommand(command=["/bin/sh", "-c", script])])
        job = c.wait_for_job_status(name, timeout=180, polling_interval=1)
        self.assertEqual(job.status, "Complete")
        for rank in (0, 1):
            log = "\n".join(c.get_job_logs(name, step=f"node-{rank}"))
            self.assertIn(f"torch NNODES=2 RANK={rank} GREETING=hello", log)
            self.assertRegex(log, r"endpoint https://127\.0\.0\.1:\d+")
        c.delete_job(name)
        listed = subprocess.run([PODMAN, "ps", "--all", "--format", "{{.Names}}"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(listed.stdout.strip(), "")

    def test_runtime_is_checked(self):
        with pytest.raises(ValueError, match="process, podman or docker"):
            TrainingClient(backend="local", state_dir=self.tmp, runtime="lxc")
