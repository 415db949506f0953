"""`trainctl run --runtime podman|docker`: each replica a container of its image, through the
real binary, with Debian's podman and Debian's Docker engine.

The image is built here without any registry: a root filesystem of Debian's static busybox,
imported with an ENTRYPOINT and a CMD. Podman keeps its images and containers in a storage of
this test's own (CONTAINERS_STORAGE_CONF), and every registry name a test could reach is
blocked (CONTAINERS_REGISTRIES_CONF), so a pull is refused before any connection is made. The
Docker cases start a dockerd of their own (own data root and socket, no bridge, no iptables
rules) whose proxy is a closed port on loopback, so its pulls fail there.
"""

import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import unittest

from harness import TRAINCTL, TrainctlTestCase, process_alive

IMAGE = "localhost/trainctl-e2e/busybox:1"
# The entrypoint prints the wiring the operator would inject, then its arguments (the image's
# CMD unless the manifest gives args).
ENTRYPOINT = ('["/bin/sh", "-c", "echo wiring RANK=$RANK WORLD_SIZE=$WORLD_SIZE '
              'MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT; echo args \\"$@\\"", "entry"]')
CMD = '["from-the-image"]'
PODMAN = shutil.which("podman")
DOCKERD = shutil.which("dockerd")
DOCKER = shutil.which("docker")


def podman_env(root):
    storage = os.path.join(root, "storage.conf")
    with open(storage, "w") as f:
        f.write(f'[storage]\ndriver = "overlay"\ngraphroot = "{root}/graph"\n'
                f'runroot = "{root}/run"\n')
    registries = os.path.join(root, "registries.conf")
    with open(registries, "w") as f:
        f.write("unqualified-search-registries = []\n")
        for name in ("docker.io", "quay.io", "ghcr.io", "registry.k8s.io", "gcr.io", "localhost"):
            f.write(f'[[registry]]\nprefix = "{name}"\nlocation = "{name}"\nblocked = true\n')
    return {"CONTAINERS_STORAGE_CONF": storage, "CONTAINERS_REGISTRIES_CONF": registries}


def busybox_rootfs_tar(path):
    busybox = shutil.which("busybox") or "/bin/busybox"
    with tarfile.open(path, "w") as tar:
        for d in ("bin", "tmp", "data", "work"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(busybox, "bin/busybox")
        for applet in ("sh", "echo", "cat", "sleep", "dd", "ls", "touch", "mkdir", "env", "test"):
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            tar.addfile(info)


class RuntimeCases:
    """The cases, for one runtime: RUNTIME, CLI (its client), ENV (what the runner and the
    client need) and PULL_REFUSED (how a pull fails here without leaving the machine)."""

    @classmethod
    def import_image(cls):
        tar = os.path.join(cls.root, "rootfs.tar")
        busybox_rootfs_tar(tar)
        subprocess.run([cls.CLI, "import", "--change", f"ENTRYPOINT {ENTRYPOINT}",
                        "--change", f"CMD {CMD}", tar, IMAGE],
                       env=cls.client_env, check=True, capture_output=True, timeout=120)

    def setUp(self):
        super().setUp()
        self.env.update(self.ENV)
        self.env["TRAINCTL_RUNTIME"] = self.RUNTIME

    def containers(self):
        proc = subprocess.run([self.CLI, "ps", "--all", "--format", "{{.Names}}"],
                              env=self.client_env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return [n for n in proc.stdout.split() if n.startswith("trainctl-")]

    def job(self, name, master, worker=None, restart="Never", pod=""):
        def replica(kind, body):
            return (f"    {kind}:\n      replicas: 1\n      restartPolicy: {restart}\n"
                    f"      template:\n        spec:\n{pod}          containers:\n"
                    f"          - name: pytorch\n            image: {IMAGE}\n"
                    f"            imagePullPolicy: IfNotPresent\n{body}")
        text = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
                f"metadata: {{name: {name}}}\nspec:\n  pytorchReplicaSpecs:\n"
                + replica("Master", master) + (replica("Worker", worker) if worker else ""))
        return self.write(f"{name}.yaml", text)

    def describe(self, name):
        proc = self.trainctl("describe", name, "-o", "json")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        return json.loads(proc.stdout)

    def log(self, name, replica):
        proc = self.trainctl("logs", name, "-r", replica)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        return proc.stdout

    def test_replicas_without_a_command_run_the_images_entrypoint_with_the_operators_env(self):
        path = self.job("entry", master="", worker="            args: [custom-arg]\n")
        job, proc = self.run_json(path, expect_code=0, timeout=120)
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Succeeded", self.explain(proc))
        master, worker = self.log("entry", "master-0"), self.log("entry", "worker-0")
        port = [w for w in master.split() if w.startswith("MASTER_PORT=")][0]
        self.assertIn("wiring RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1", master)
        self.assertIn("wiring RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1", worker)
        self.assertIn(port, worker)  # both find the Master on this machine's network
        self.assertIn("args from-the-image", master)  # the image's CMD
        self.assertIn("args custom-arg", worker)  # args replace the CMD, keep the ENTRYPOINT
        self.assertEqual(self.containers(), [])

    def test_a_container_is_given_the_runs_status_endpoint(self):
        # The variables, and the CA and token files mounted read-only at the same paths; the
        # endpoint is on this machine's loopback, which the container shares (host network).
        path = self.job("reports", master=(
            "            command: [sh, -c, 'echo url=$KUBEFLOW_TRAINER_SERVER_URL; "
            "head -1 $KUBEFLOW_TRAINER_SERVER_CA_CERT; wc -c < $KUBEFLOW_TRAINER_SERVER_TOKEN; "
            "touch $KUBEFLOW_TRAINER_SERVER_TOKEN 2>/dev/null || echo read-only']\n"))
        job, proc = self.run_json(path, expect_code=0, timeout=120)
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Succeeded", self.explain(proc))
        log = self.log("reports", "master-0")
        self.assertRegex(log, r"url=https://127\.0\.0\.1:\d+/apis/kubeflow\.org/v1/"
                              r"namespaces/default/pytorchjobs/reports/status")
        self.assertIn("-----BEGIN CERTIFICATE-----", log)
        self.assertIn("64", log.split())  # the token's 64 hex characters
        self.assertIn("read-only", log)

    def test_a_trainjob_runs_its_nodes_as_containers_with_the_torch_env(self):
        # Trainer v2: the runtime in the same file, its node container this image; each node a
        # container of it, wired as torchrun expects, node 0 reachable from node 1.
        script = ("echo torch NNODES=$PET_NNODES RANK=$PET_NODE_RANK "
                  "MASTER=$PET_MASTER_ADDR:$PET_MASTER_PORT; echo args $@")
        text = f"""apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {{name: busybox-torch}}
spec:
  mlPolicy: {{numNodes: 1, torch: {{}}}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: {IMAGE}
                  imagePullPolicy: IfNotPresent
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: nodes}}
spec:
  runtimeRef: {{name: busybox-torch, kind: TrainingRuntime}}
  trainer:
    numNodes: 2
    command: [/bin/sh, -c, '{script}', entry]
    args: [from-the-trainjob]
"""
        path = self.write("trainjob.yaml", text)
        job, proc = self.run_json(path, expect_code=0, timeout=120)
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Succeeded", self.explain(proc))
        logs = {}
        for node in ("node-0", "node-1"):
            out = self.trainctl("logs", "tj", "nodes", "-r", node)
            self.assertEqual(out.returncode, 0, self.explain(out))
            logs[node] = out.stdout
        master = [w for w in logs["node-0"].split() if w.startswith("MASTER=")][0]
        self.assertIn("torch NNODES=2 RANK=0 ", logs["node-0"])
        self.assertIn("torch NNODES=2 RANK=1 ", logs["node-1"])
        self.assertIn(master, logs["node-1"])  # both find node 0 at one address
        self.assertNotEqual(master, "MASTER=:")
        self.assertIn("args from-the-trainjob", logs["node-1"])
        self.assertEqual(self.containers(), [])

    def test_a_failed_container_restarts_in_place_under_on_failure(self):
        host = os.path.join(self.tmp, "marks")
        os.makedirs(host)
        pod = f"          volumes: [{{name: m, hostPath: {{path: {host}}}}}]\n"
        path = self.job("again", restart="OnFailure", pod=pod, master=(
            "            command: [sh, -c, 'if test -e /m/once; then echo second; else "
            "touch /m/once; echo first; exit 3; fi']\n"
            "            volumeMounts: [{name: m, mountPath: /m}]\n"))
        job, proc = self.run_json(path, expect_code=0, timeout=120)
        self.assertEqual(job["status"]["replicaStatuses"]["Master"].get("restarts"), 1,
                         json.dumps(job["status"]))
        out = self.log("again", "master-0")
        self.assertLess(out.index("first"), out.index("second"))
        events = [e["reason"] for e in self.describe("again")["events"]]
        self.assertIn("BackOff", events)
        self.assertEqual(self.containers(), [])

    def test_torchelastics_error_file_written_in_the_container_is_the_first_failure(self):
        error = ('{"message": {"message": "RuntimeError: rank 1 lost its GPU", '
                 '"extraInfo": {"py_callstack": "Traceback: train.py line 9"}}}')
        script = f"echo noise; echo ''{error}'' > $TORCHELASTIC_ERROR_FILE; exit 1"
        path = self.job("rooted", master=f"            command: [sh, -c, '{script}']\n")
        job, proc = self.run_json(path, expect_code=1, timeout=120)
        # The Failed condition names the root cause from the file, not the log's "noise".
        failed = job["status"]["conditions"][-1]["message"]
        self.assertIn("RuntimeError: rank 1 lost its GPU", failed)
        self.assertIn("Traceback: train.py line 9", failed)

    def test_a_replica_over_its_memory_limit_is_oomkilled(self):
        path = self.job("oom", master=(
            "            command: [dd, if=/dev/zero, of=/dev/null, bs=64M, count=1]\n"
            "            resources: {limits: {memory: 16Mi}}\n"))
        job, proc = self.run_json(path, expect_code=1, timeout=120)
        doc = self.describe("oom")
        self.assertEqual(doc["failure"]["reason"], "OOMKilled", json.dumps(doc["failure"]))
        self.assertEqual(doc["failure"]["exitCode"], 137)
        self.assertIn("OOMKilled", job["status"]["conditions"][-1]["message"])
        self.assertEqual(self.containers(), [])

    def test_init_containers_volumes_and_a_claim_that_outlives_the_job(self):
        host = os.path.join(self.tmp, "host")
        os.makedirs(host)
        with open(os.path.join(host, "in.txt"), "w") as f:
            f.write("from-the-host\n")
        pod = ("          volumes:\n"
               "          - {name: shared, emptyDir: {}}\n"
               f"          - {{name: ro, hostPath: {{path: {host}}}}}\n"
               "          - {name: ckpt, persistentVolumeClaim: {claimName: ckpt}}\n"
               "          initContainers:\n"
               f"          - {{name: prep, image: {IMAGE}, command: [sh, -c, 'echo prepared > /s/p'],"
               " volumeMounts: [{name: shared, mountPath: /s}]}\n")
        mounts = ("            volumeMounts:\n"
                  "            - {name: shared, mountPath: /s}\n"
                  "            - {name: ro, mountPath: /in, readOnly: true}\n"
                  "            - {name: ckpt, mountPath: /ckpt}\n")
        first = self.job("writer", pod=pod, master=(
            "            command: [sh, -c]\n"
            "            args: ['cat /s/p /in/in.txt; touch /in/x && echo WROTE-RO || echo RO-REFUSED;"
            " echo step-1 > /ckpt/state']\n" + mounts))
        job, proc = self.run_json(first, expect_code=0, timeout=120)
        out = self.log("writer", "master-0")
        self.assertIn("prepared", out)
        self.assertIn("from-the-host", out)
        self.assertIn("RO-REFUSED", out)
        self.assertFalse(os.path.exists(os.path.join(host, "x")))
        second = self.job("reader", pod=pod, master=(
            "            command: [cat, /ckpt/state]\n" + mounts))
        self.run_json(second, expect_code=0, timeout=120)
        self.assertIn("step-1", self.log("reader", "master-0"))
        workspaces = self.describe("reader")["workspaces"]
        self.assertEqual([w["claim"] for w in workspaces], ["ckpt"])
        with open(os.path.join(workspaces[0]["path"], "state")) as f:
            self.assertEqual(f.read(), "step-1\n")

    def test_a_missing_image_is_image_pull_backoff_and_nothing_is_fetched(self):
        path = self.write("pull.yaml", """
            apiVersion: kubeflow.org/v1
            kind: PyTorchJob
            metadata: {name: pull}
            spec:
              pytorchReplicaSpecs:
                Master:
                  replicas: 1
                  template:
                    spec:
                      containers:
                      - {name: pytorch, image: docker.io/library/not-on-this-machine:1}
            """)
        proc = self.trainctl("run", path, "--detach")
        self.assertEqual(proc.returncode, 0, self.explain(proc))

        def why():
            got = self.trainctl("get", "pull", "-o", "wide")
            return got.stdout if "ImagePullBackOff" in got.stdout else None
        self.wait_for(why, 30, "ImagePullBackOff in get -o wide")
        doc = self.describe("pull")
        ready = [c for c in doc["job"]["status"]["conditions"] if c["type"] == "ReplicasReady"]
        self.assertEqual(ready[0]["reason"], "ImagePullBackOff")
        # Refused on this machine: podman's registries configuration, dockerd's proxy.
        self.assertIn(self.PULL_REFUSED, ready[0]["message"])
        events = [e["reason"] for e in doc["events"]]
        self.assertIn("Pulling", events)
        self.assertIn("BackOff", events)
        delete = self.trainctl("delete", "pull")
        self.assertEqual(delete.returncode, 0, self.explain(delete))
        self.assertEqual(self.containers(), [])

    def stubborn(self, name):
        return self.job(name, master=(
            "            command: [sh, -c, \"trap '' TERM; echo up; while true; do sleep 1; done\"]\n"
            "            resources: {limits: {memory: 64Mi}}\n"))

    def wait_running(self, name):
        def up():
            proc = self.trainctl("describe", name, "-o", "json")
            if proc.returncode != 0:
                return None  # not set up yet
            doc = json.loads(proc.stdout)
            states = [r.get("phase") for r in doc["replicas"]]
            return doc if states == ["Running"] and self.containers() else None
        return self.wait_for(up, 30, f"{name}'s container running")

    def test_ctrl_c_stops_a_container_that_ignores_sigterm(self):
        path = self.stubborn("stub")
        runner = self.start("run", path, "--grace-period", "1")
        try:
            self.wait_running("stub")
            os.killpg(runner.pid, signal.SIGINT)
            runner.wait(timeout=30)
            self.assertEqual(runner.returncode, 128 + signal.SIGINT)
            self.assertEqual(self.containers(), [])
        finally:
            self.stop(runner)

    def test_a_sigkilled_runner_leaves_no_container(self):
        path = self.stubborn("orphan")
        proc = self.trainctl("run", path, "--detach", "--grace-period", "1")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        doc = self.wait_running("orphan")
        pid = doc["runner"]["pid"]
        os.kill(pid, signal.SIGKILL)
        self.wait_for(lambda: not process_alive(pid), 10, "the runner to die")
        self.wait_for(lambda: self.containers() == [], 30, "no container left")
        doc = self.describe("orphan")
        self.assertEqual(doc["job"]["status"]["conditions"][-1]["reason"], "RunnerLost")

    def test_delete_removes_what_a_runner_killed_with_its_supervisors_left(self):
        path = self.stubborn("lost")
        proc = self.trainctl("run", path, "--detach", "--grace-period", "1")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        doc = self.wait_running("lost")
        runner = doc["runner"]["pid"]
        # The runner and every supervisor at once (a machine under OOM, a `kill -9` by hand):
        # nothing is left to remove the container.
        supervisors = [int(p) for p in subprocess.run(
            ["pgrep", "-f", "__supervise " + str(runner)], capture_output=True,
            text=True).stdout.split()]
        self.assertTrue(supervisors)
        for pid in [runner] + supervisors:
            os.kill(pid, signal.SIGKILL)
        time.sleep(1)
        self.assertEqual(len(self.containers()), 1)
        deleted = self.trainctl("delete", "lost")
        self.assertEqual(deleted.returncode, 0, self.explain(deleted))
        self.assertIn("removed", deleted.stdout)
        self.wait_for(lambda: self.containers() == [], 30, "the container removed")

    def test_dry_run_prints_the_runtime_command_line(self):
        path = self.job("dry", master="            args: [x]\n")
        proc = self.trainctl("run", path, "--dry-run")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn(f"Runtime: {self.RUNTIME}", proc.stdout)
        self.assertIn(f"image:    {IMAGE} (present, not pulled)", proc.stdout)
        line = [l for l in proc.stdout.splitlines() if "command:" in l][0]
        self.assertIn(f"{self.CLI} run --rm --name trainctl-default-pytorchjob-dry-master-0-1",
                      line)
        self.assertIn("--network host", line)
        self.assertIn("--env RANK ", line)
        self.assertTrue(line.endswith(f" {IMAGE} x"), line)
        self.assertEqual(self.containers(), [])
        # The process runtime still asks for a command.
        proc = self.trainctl("run", path, "--dry-run", "--runtime", "process")
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("--runtime podman|docker", proc.stderr)



@unittest.skipUnless(PODMAN, "podman is not installed (make test installs it)")
class PodmanTest(RuntimeCases, TrainctlTestCase):
    RUNTIME = "podman"
    PULL_REFUSED = "blocked"

    @classmethod
    def setUpClass(cls):
        cls.CLI = PODMAN
        cls.root = tempfile.mkdtemp(prefix="trainctl-podman-")
        cls.ENV = podman_env(cls.root)
        cls.client_env = dict(os.environ, **cls.ENV)
        cls.import_image()

    @classmethod
    def tearDownClass(cls):
        subprocess.run([PODMAN, "rm", "--all", "--force"], env=cls.client_env,
                       capture_output=True, timeout=120)
        subprocess.run([PODMAN, "system", "reset", "--force"], env=cls.client_env,
                       capture_output=True, timeout=120)
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_a_missing_runtime_is_refused_with_what_to_install(self):
        self.env["PATH"] = "/nonexistent"
        path = self.job("none", master="")
        proc = subprocess.run([TRAINCTL, "run", path, "--runtime",
                               "docker"], env=self.env, capture_output=True, text=True,
                              timeout=60, cwd=self.work)
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("no `docker` on PATH", proc.stderr)


@unittest.skipUnless(DOCKERD and DOCKER, "Debian's docker.io is not installed (make test installs it)")
class DockerTest(RuntimeCases, TrainctlTestCase):
    RUNTIME = "docker"
    PULL_REFUSED = "127.0.0.1:9"

    @classmethod
    def setUpClass(cls):
        cls.CLI = DOCKER
        cls.root = tempfile.mkdtemp(prefix="trainctl-docker-")
        sock = os.path.join(cls.root, "docker.sock")
        cls.ENV = {"DOCKER_HOST": f"unix://{sock}"}
        cls.client_env = dict(os.environ, **cls.ENV)
        cls.daemon_log = open(os.path.join(cls.root, "dockerd.log"), "w")
        # Its own daemon: no bridge, no iptables rules, pulls through a closed loopback port.
        cls.dockerd = subprocess.Popen(
            [DOCKERD, "--data-root", os.path.join(cls.root, "data"), "--exec-root",
             os.path.join(cls.root, "exec"), "--pidfile", os.path.join(cls.root, "docker.pid"),
             "--host", f"unix://{sock}", "--bridge", "none", "--iptables=false",
             "--ip6tables=false", "--ip-masq=false"],
            env=dict(os.environ, HTTP_PROXY="http://127.0.0.1:9",
                     HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY=""),
            stdout=cls.daemon_log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while subprocess.run([DOCKER, "version"], env=cls.client_env,
                             capture_output=True).returncode != 0:
            if cls.dockerd.poll() is not None or time.monotonic() > deadline:
                cls.stop_daemon()
                raise RuntimeError("dockerd did not start; see its log in " + cls.root)
            time.sleep(0.2)
        cls.import_image()

    @classmethod
    def stop_daemon(cls):
        if cls.dockerd.poll() is None:
            cls.dockerd.terminate()
            try:
                cls.dockerd.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(cls.dockerd.pid, signal.SIGKILL)
                cls.dockerd.wait()
        cls.daemon_log.close()

    @classmethod
    def tearDownClass(cls):
        subprocess.run([DOCKER, "rm", "--force"] + subprocess.run(
            [DOCKER, "ps", "--all", "--quiet"], env=cls.client_env, capture_output=True,
            text=True).stdout.split(), env=cls.client_env, capture_output=True, timeout=120)
        cls.stop_daemon()
        # dockerd leaves its default network namespace mounted under its exec root.
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if cls.root in line.split()[1]]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(["umount", "--lazy", mount], capture_output=True)
        shutil.rmtree(cls.root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
