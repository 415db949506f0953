"""The SDK's local backend with `runtime="podman"`: upstream's image-only `create_job(name,
base_image, num_workers)` (no function, no command: the image's entrypoint runs) works on this
machine, with the operator's env in each container. The image is made here as in
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

    def test_runtime_is_checked(self):
        with pytest.raises(ValueError, match="process, podman or docker"):
            TrainingClient(backend="local", state_dir=self.tmp, runtime="lxc")
