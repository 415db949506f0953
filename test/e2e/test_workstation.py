"""End to end: `trainctl run` on a workstation, through the real binary. GPUs come from an
injected inventory (TRAINCTL_GPU_INVENTORY), so this runs on machines without GPUs.

Each replica prints what it was given; the tests check that replicas get devices of their own,
that a job asking for too many is refused before anything starts, that two jobs running at
once never share a device, `--gpu-share`, the thread env of a CPU limit, CPU and memory limits
enforced through cgroups (skipped, with the runner's reason, where this machine gives none) and
OOMKilled, `--dry-run`, and volumes, ConfigMaps, Secrets and env files given as local folders
and files.
"""

import json
import os
import sys
import time
import unittest

from harness import TrainctlTestCase, results

# A replica that prints the devices and threads it was given, then waits for `release` (when
# the manifest names one) so a test can hold its devices.
REPORT = ('echo "RESULT {\\"name\\": \\"$POD\\", \\"cuda\\": \\"${CUDA_VISIBLE_DEVICES-unset}\\",'
          ' \\"omp\\": \\"${OMP_NUM_THREADS-unset}\\"}"; '
          'while [ -n "$RELEASE" ] && [ ! -e "$RELEASE" ]; do sleep 0.05; done')


def torch_job(name, master_gpus, workers=0, worker_gpus=0, release="", cpu=""):
    def spec(kind, replicas, gpus):
        limits = {"nvidia.com/gpu": gpus} if gpus else {}
        if cpu:
            limits["cpu"] = cpu
        return {"replicas": replicas, "restartPolicy": "Never", "template": {"spec": {
            "containers": [{
                "name": "pytorch", "image": "local", "command": ["sh", "-c", REPORT],
                "env": [{"name": "RELEASE", "value": release},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"limits": limits}}]}}}
    specs = {"Master": spec("Master", 1, master_gpus)}
    if workers:
        specs["Worker"] = spec("Worker", workers, worker_gpus)
    return json.dumps({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                       "metadata": {"name": name}, "spec": {"pytorchReplicaSpecs": specs}})


class GpuTest(TrainctlTestCase):

    def gpus(self, count):
        self.env["TRAINCTL_GPU_INVENTORY"] = f"nvidia.com/gpu={count}"

    def reported(self, name):
        """What each replica of job `name` printed, by replica name."""
        logs = os.path.join(self.state, "default", "pytorchjobs", name, "logs")
        out = {}
        for f in sorted(os.listdir(logs)):
            if f.endswith(".log"):
                with open(os.path.join(logs, f)) as fh:
                    for r in results(fh.read()):
                        out[r["name"]] = r
        return out

    def test_each_replica_gets_a_device_of_its_own(self):
        self.gpus(2)
        manifest = self.write("job.json", torch_job("pair", 1, workers=1, worker_gpus=1))
        job, proc = self.run_json(manifest, expect_code=0)
        seen = self.reported("pair")
        self.assertEqual(seen["pair-master-0"]["cuda"], "0", self.explain(proc))
        self.assertEqual(seen["pair-worker-0"]["cuda"], "1", self.explain(proc))
        replicas = {r["name"]: r for r in self.stored_replicas("default", "pytorchjobs", "pair")}
        self.assertEqual([g["index"] for g in replicas["pair-worker-0"]["gpus"]], [1])
        described = self.trainctl("describe", "pair").stdout
        self.assertRegex(described, r"PORT\s+GPUS\s+COMMAND")
        self.assertRegex(described, r"pair-worker-0\s+\w+\s+0\s+0\s+\d*\s+\d+\s+1\s")
        with open(os.path.join(self.state, "default", "pytorchjobs", "pair",
                               "events.jsonl")) as f:
            started = [json.loads(line)["message"] for line in f if '"Started"' in line]
        self.assertTrue(any(m.endswith("with CUDA_VISIBLE_DEVICES=1") for m in started), started)

    def test_eight_devices_two_per_replica_all_distinct(self):
        self.gpus(8)
        manifest = self.write("job.json", torch_job("eight", 2, workers=3, worker_gpus=2))
        self.run_json(manifest, expect_code=0)
        seen = self.reported("eight")
        self.assertEqual(len(seen), 4)
        devices = [d for r in seen.values() for d in r["cuda"].split(",")]
        self.assertEqual(sorted(devices, key=int), [str(i) for i in range(8)])

    def test_asking_for_more_than_the_machine_has_is_refused_before_starting(self):
        self.gpus(2)
        manifest = self.write("job.json", torch_job("greedy", 1, workers=2, worker_gpus=1))
        proc = self.trainctl("run", manifest)
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("job.json: spec.pytorchReplicaSpecs[Worker].template.spec.containers[0]"
                      ".resources.limits[nvidia.com/gpu]", proc.stderr)
        self.assertIn("asks for 3 nvidia.com/gpu (Master (1 replica × 1), Worker (2 replicas × 1))"
                      " and this machine has 2", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.state, "default", "pytorchjobs",
                                                     "greedy")), "nothing was set up")
        self.assertEqual(self.trainctl("run", manifest, "--gpu-share").returncode, 0,
                         "with sharing the same job runs")

    def test_two_jobs_at_once_never_share_a_device(self):
        self.gpus(2)
        release = os.path.join(self.work, "release")
        first = self.start("run", self.write("a.json", torch_job("first", 1, release=release)))
        try:
            self.wait_for(lambda: "first-master-0" in self.reported_or_empty("first"), 30,
                          "the first job's replica to start")
            second = self.trainctl("run", self.write("b.json", torch_job("second", 1)))
            self.assertEqual(second.returncode, 0, self.explain(second))
            self.assertNotEqual(self.reported("second")["second-master-0"]["cuda"],
                                self.reported("first")["first-master-0"]["cuda"])
            third = self.trainctl("run", self.write("c.json", torch_job("third", 2)))
            self.assertEqual(third.returncode, 2, self.explain(third))
            self.assertIn("1 of them is free: the others are in use by pytorchjob default/first "
                          "(runner pid", third.stderr)
        finally:
            open(release, "w").close()
            first.wait(timeout=60)
            self.stop(first)
        self.assertEqual(first.returncode, 0)
        again = self.trainctl("run", self.write("c2.json", torch_job("third", 2)))
        self.assertEqual(again.returncode, 0, "the first job's devices are free once it ended\n" +
                         self.explain(again))

    def test_two_jobs_started_at_the_same_moment_never_share_the_last_device(self):
        self.gpus(1)
        release = os.path.join(self.work, "release")
        runs = [self.start("run", self.write(f"{n}.json", torch_job(n, 1, release=release)))
                for n in ("left", "right")]
        try:
            refused = self.wait_for(lambda: [r for r in runs if r.poll() is not None], 30,
                                    "one of the two runs to be refused")
            self.assertEqual(len(refused), 1, "exactly one run gets the only device")
            self.assertEqual(refused[0].returncode, 2)
            self.assertIn("0 of them are free", refused[0].stderr.read())
        finally:
            open(release, "w").close()
            for r in runs:
                r.wait(timeout=60)
                self.stop(r)
        self.assertEqual(sorted(r.returncode for r in runs), [0, 2])

    def reported_or_empty(self, name):
        try:
            return self.reported(name)
        except FileNotFoundError:
            return {}

    def test_a_cpu_limit_sets_the_thread_env_and_says_once_it_is_not_enforced(self):
        self.env["TRAINCTL_CGROUPS"] = "off"  # as on a machine without cgroups
        manifest = self.write("job.json", torch_job("cpu", 0, workers=2, cpu="3"))
        job, proc = self.run_json(manifest, expect_code=0)
        self.assertEqual({r["omp"] for r in self.reported("cpu").values()}, {"3"})
        self.assertEqual(proc.stderr.count("is not enforced by trainctl run"), 1, proc.stderr)
        self.assertEqual(self.reported("cpu")["cpu-master-0"]["cuda"], "unset",
                         "a replica without a GPU limit is left alone")

    def test_a_malformed_inventory_is_refused_naming_the_variable(self):
        self.env["TRAINCTL_GPU_INVENTORY"] = "nvidia.com/gpu=lots"
        proc = self.trainctl("run", self.write("job.json", torch_job("x", 1)))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("TRAINCTL_GPU_INVENTORY: \"nvidia.com/gpu=lots\"", proc.stderr)


# A replica that reports its own cgroups and the limits in them, read by itself from the kernel's
# files (v1: memory and cpu hierarchies; v2: the unified tree), then allocates ALLOC MiB.
LIMITS_PY = """
import json, os
paths = {}
for line in open("/proc/self/cgroup"):
    _, controllers, path = line.rstrip("\\n").split(":", 2)
    for c in controllers.split(",") if controllers else [""]:
        paths[c] = path
def read(*candidates):
    for c in candidates:
        try:
            with open(c) as f:
                return f.read().strip()
        except OSError:
            pass
    return None
if "memory" in paths:
    memory_dir = "/sys/fs/cgroup/memory" + paths["memory"]
    memory = read(memory_dir + "/memory.limit_in_bytes")
    quota = read(*(f"/sys/fs/cgroup/{m}{paths.get('cpu', '/')}/cpu.cfs_quota_us"
                   for m in ("cpu", "cpu,cpuacct")))
else:
    memory_dir = "/sys/fs/cgroup" + paths[""]
    memory = read(memory_dir + "/memory.max")
    quota = (read(memory_dir + "/cpu.max") or "").split(" ")[0] or None
print("RESULT " + json.dumps({"memory": memory, "quota": quota, "dir": memory_dir}), flush=True)
block = bytearray(int(os.environ["ALLOC"]) * 1024 * 1024)
"""

LIMITS_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: NAME}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: local
            command: [PYTHON, limits.py]
            env: [{name: ALLOC, value: "MIB"}]
            resources: {limits: {cpu: 500m, memory: 64Mi}}
"""


class CgroupTest(TrainctlTestCase):
    """CPU and memory limits through the kernel. Skipped, with the runner's own reason, where
    this machine does not let trainctl make cgroups."""

    def run_limited(self, name, mib):
        self.write("limits.py", LIMITS_PY)
        manifest = self.write(name + ".yaml", LIMITS_JOB.replace("NAME", name).replace(
            "MIB", str(mib)).replace("PYTHON", sys.executable))
        proc = self.trainctl("run", manifest, "-o", "json")
        if "is not enforced by trainctl run" in proc.stderr:
            self.skipTest("cgroups are not available here: " + proc.stderr.strip())
        logs = os.path.join(self.state, "default", "pytorchjobs", name, "logs")
        with open(os.path.join(logs, name + "-master-0.log")) as f:
            seen = results(f.read())
        self.assertEqual(len(seen), 1, self.explain(proc))
        return proc, seen[0]

    def test_limits_are_written_into_the_replicas_own_cgroup_and_removed_after(self):
        proc, seen = self.run_limited("fits", 8)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertEqual(seen["memory"], str(64 * 1024 * 1024))
        self.assertEqual(seen["quota"], "50000", "500m of a 100 ms period, as the kubelet sets")
        self.assertIn("/trainctl-", seen["dir"])
        self.assertTrue(seen["dir"].endswith("/fits-master-0.1"), seen["dir"])
        self.assertFalse(os.path.exists(seen["dir"]), "the replica's cgroup is removed")
        self.assertFalse(os.path.exists(os.path.dirname(seen["dir"])), "and the job's")
        self.assertEqual(self.stored_replicas("default", "pytorchjobs", "fits")[0].get("reason"),
                         None)

    def test_a_replica_over_its_memory_limit_is_reported_oomkilled(self):
        proc, seen = self.run_limited("hog", 512)
        self.assertEqual(proc.returncode, 1, self.explain(proc))
        [replica] = self.stored_replicas("default", "pytorchjobs", "hog")
        self.assertEqual(replica["exitCode"], 137)
        self.assertEqual(replica["reason"], "OOMKilled")
        job = json.loads(proc.stdout)
        failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"][0]
        self.assertIn("hog-master-0 (Master 0) was killed by SIGKILL (exit code 137), reason "
                      "OOMKilled", failed["message"])
        self.assertIn("exited with code 137 (OOMKilled; its memory limit is 64Mi)",
                      proc.stdout + proc.stderr)
        described = self.trainctl("describe", "pytorchjob", "hog")
        self.assertIn("137 (OOMKilled)", described.stdout)
        self.assertFalse(os.path.exists(seen["dir"]))

    def test_dry_run_lists_the_cgroup_files_a_run_would_write(self):
        self.write("limits.py", LIMITS_PY)
        manifest = self.write("dry.yaml", LIMITS_JOB.replace("NAME", "dry").replace(
            "MIB", "1").replace("PYTHON", sys.executable))
        proc = self.trainctl("run", manifest, "--dry-run")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        if "is not enforced by trainctl run" in proc.stderr:
            self.assertNotIn("cgroup:", proc.stdout, "nothing is listed that would not be made")
            self.skipTest("cgroups are not available here: " + proc.stderr.strip())
        self.assertRegex(proc.stdout, r"cgroup:   memory\.(limit_in_bytes|max) = 67108864 \(/")
        self.assertRegex(proc.stdout, r"cgroup:   cpu\.(cfs_quota_us = 50000|max = 50000 100000)")
        self.env["TRAINCTL_CGROUPS"] = "off"
        proc = self.trainctl("run", manifest, "--dry-run")
        self.assertNotIn("cgroup:", proc.stdout)
        self.assertEqual(proc.stderr.count("is not enforced by trainctl run: TRAINCTL_CGROUPS=off"),
                         1, proc.stderr)


INIT_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: NAME}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: POLICY
      template:
        spec:
          volumes: [{name: shared, emptyDir: {}}]
          initContainers:
          - name: init-pytorch
            image: alpine
            command: [sh, -c, "echo waited-for-master >> /shared/runs; exit 9"]
            volumeMounts: [{name: shared, mountPath: /shared}]
          - name: fetch
            image: alpine
            command: [sh, -c, "echo fetch >> /shared/runs; echo data-$RANK- > /shared/input.txt"]
            volumeMounts: [{name: shared, mountPath: /shared}]
          - name: proxy
            image: envoy
            restartPolicy: Always
            command: [sh, -c, "echo proxy >> /shared/runs; sleep 60"]
            volumeMounts: [{name: shared, mountPath: /shared}]
          - name: check
            image: alpine
            command: [sh, -c, "echo check >> /shared/runs; CHECK"]
            volumeMounts: [{name: shared, mountPath: /shared}]
          containers:
          - name: pytorch
            image: local
            command:
            - sh
            - -c
            - |
              echo main >> /shared/runs
              echo "RESULT {\\"input\\": \\"$(cat /shared/input.txt)\\", \\"rank\\": \\"$RANK\\"}"
            volumeMounts: [{name: shared, mountPath: /shared}]
"""


class InitContainerTest(TrainctlTestCase):
    """Init containers run in order, each to its end, before the main container; the operator's
    wait-for-master container and native sidecars are skipped with a note."""

    def run_init(self, name, policy="Never", check="true", expect_code=0):
        manifest = self.write(name + ".yaml", INIT_JOB.replace("NAME", name).replace(
            "POLICY", policy).replace("CHECK", check))
        job, proc = self.run_json(manifest, expect_code=expect_code, timeout=60)
        folder = os.path.join(self.state, "default", "pytorchjobs", name)
        with open(os.path.join(folder, "volumes", name + "-master-0", "shared", "runs")) as f:
            runs = f.read().split()
        with open(os.path.join(folder, "logs", name + "-master-0.log")) as f:
            seen = results(f.read())
        return job, proc, runs, seen

    def test_init_containers_run_in_order_before_the_main_one(self):
        job, proc, runs, seen = self.run_init("init")
        self.assertEqual(runs, ["fetch", "check", "main"])
        self.assertEqual(seen, [{"input": "data--", "rank": "0"}],
                         "the init container gets no framework env; the main one does")
        self.assertEqual(proc.stderr.count("initContainers[0] (init-pytorch) is skipped"), 1,
                         proc.stderr)
        self.assertEqual(proc.stderr.count("initContainers[2] (proxy) is a sidecar"), 1)
        events = self.trainctl("describe", "pytorchjob", "init").stdout
        order = [events.find(text) for text in (
            "Started init container fetch", "init container fetch of init-master-0 exited with "
            "code 0", "Started init container check", "Started sh -c echo main")]
        self.assertNotIn(-1, order, events)
        self.assertEqual(order, sorted(order), events)

    def test_a_failing_init_container_fails_the_replica_and_the_main_one_never_runs(self):
        job, proc, runs, seen = self.run_init("initfail", check="exit 3", expect_code=1)
        self.assertEqual(runs, ["fetch", "check"])
        self.assertEqual(seen, [])
        [replica] = self.stored_replicas("default", "pytorchjobs", "initfail")
        self.assertEqual((replica["exitCode"], replica["reason"]), (3, "Init:Error"))
        failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"][0]
        self.assertIn("exited with code 3, reason Init:Error", failed["message"])
        self.assertIn("init container check of initfail-master-0 exited with code 3",
                      proc.stderr + proc.stdout)

    def test_on_failure_restarts_the_failed_init_container_in_place_not_the_ones_before(self):
        # `check` fails twice; `fetch`, which succeeded, does not run again.
        job, proc, runs, seen = self.run_init(
            "initretry", policy="OnFailure",
            check="[ $(grep -c check /shared/runs) -ge 3 ] || exit 1")
        self.assertEqual(runs, ["fetch", "check", "check", "check", "main"])
        self.assertEqual(len(seen), 1)
        [replica] = self.stored_replicas("default", "pytorchjobs", "initretry")
        self.assertEqual(replica["restarts"], 2)

    def test_dry_run_lists_the_init_containers(self):
        manifest = self.write("dry.yaml", INIT_JOB.replace("NAME", "dry").replace(
            "POLICY", "Never").replace("CHECK", "true"))
        proc = self.trainctl("run", manifest, "--dry-run")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn("  init:     fetch: /", proc.stdout)
        self.assertIn("  init:     check: /", proc.stdout)
        self.assertNotIn("init:     proxy", proc.stdout)
        self.assertNotIn("init:     init-pytorch", proc.stdout)


class DryRunTest(TrainctlTestCase):

    def test_dry_run_prints_each_replica_and_starts_nothing(self):
        self.env["TRAINCTL_GPU_INVENTORY"] = "nvidia.com/gpu=4"
        manifest = self.write("job.json", torch_job("dry", 1, workers=1, worker_gpus=2))
        proc = self.trainctl("run", manifest, "--dry-run")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        out = proc.stdout
        self.assertIn("dry run, nothing was started", out)
        self.assertIn("dry-worker-0\n  command:  /", out)
        self.assertIn("CUDA_VISIBLE_DEVICES=1,2   [resources]", out)
        self.assertIn("MASTER_ADDR=127.0.0.1   [trainctl]", out)
        self.assertIn("RELEASE=   [template]", out)
        self.assertIn("gpus:     nvidia.com/gpu 1, nvidia.com/gpu 2", out)
        self.assertFalse(os.path.exists(os.path.join(self.state, "default", "pytorchjobs", "dry")))

        plan = json.loads(self.trainctl("run", manifest, "--dry-run", "-o", "json").stdout)
        worker = [r for r in plan["replicas"] if r["name"] == "dry-worker-0"][0]
        self.assertEqual(worker["workingDir"], self.work)
        self.assertTrue(worker["command"][0].endswith("/sh"))
        env = {e["name"]: e for e in worker["env"]}
        self.assertEqual(env["WORLD_SIZE"]["source"], "trainctl")
        self.assertEqual(env["RANK"]["value"], "1")
        self.assertEqual(env["MASTER_PORT"]["value"],
                         str([r for r in plan["replicas"] if r["type"] == "Master"][0]["port"]))
        self.assertEqual(plan["gpuInventory"]["nvidia.com/gpu"], 4)

    def test_dry_run_refuses_what_a_run_would_refuse(self):
        self.env["TRAINCTL_GPU_INVENTORY"] = "nvidia.com/gpu=1"
        proc = self.trainctl("run", self.write("job.json", torch_job("dry", 1, workers=1,
                                                                     worker_gpus=1)), "--dry-run")
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("this machine has 1 (TRAINCTL_GPU_INVENTORY)", proc.stderr)


VOLUME_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: vols}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          volumes:
          - {name: data, hostPath: {path: HOSTDIR, type: Directory}}
          - {name: cfg, configMap: {name: app-config}}
          - {name: creds, secret: {secretName: creds}}
          - {name: scratch, emptyDir: {}}
          containers:
          - name: pytorch
            image: local
            workingDir: /scratch
            command: [sh, -c]
            args:
            - >-
              cat /data/input.txt > /scratch/copy.txt &&
              echo "RESULT {\\"input\\": \\"$(cat /data/input.txt)\\",
              \\"lr\\": \\"$(cat /etc/app/lr)\\", \\"token\\": \\"$TOKEN\\",
              \\"cfg_lr\\": \\"$CFG_lr\\", \\"team\\": \\"$TEAM\\",
              \\"cwd\\": \\"$(pwd)\\"}"
            env:
            - name: TOKEN
              valueFrom: {secretKeyRef: {name: creds, key: token}}
            envFrom:
            - {configMapRef: {name: app-config}, prefix: CFG_}
            volumeMounts:
            - {name: data, mountPath: /data, readOnly: true}
            - {name: cfg, mountPath: /etc/app}
            - {name: creds, mountPath: /etc/creds}
            - {name: scratch, mountPath: /scratch}
"""


class VolumesTest(TrainctlTestCase):

    def setUp(self):
        super().setUp()
        self.host = os.path.join(self.tmp, "host")
        os.makedirs(self.host)
        with open(os.path.join(self.host, "input.txt"), "w") as f:
            f.write("hello")
        for name, key, value in (("cfg", "lr", "0.01"), ("creds", "token", "t0k")):
            os.makedirs(os.path.join(self.work, name))
            with open(os.path.join(self.work, name, key), "w") as f:
                f.write(value)
        self.manifest = self.write("job.yaml", VOLUME_JOB.replace("HOSTDIR", self.host))
        self.write("team.env", "# shared settings\nTEAM=vision\n")

    def test_volumes_configmaps_secrets_and_env_files_given_as_local_folders(self):
        job, proc = self.run_json(self.manifest, "--configmap", "app-config=cfg", "--secret",
                                  "creds=creds", "--env-file", "team.env", expect_code=0)
        folder = os.path.join(self.state, "default", "pytorchjobs", "vols")
        with open(os.path.join(folder, "logs", "vols-master-0.log")) as f:
            [seen] = results(f.read())
        scratch = os.path.join(folder, "volumes", "vols-master-0", "scratch")
        self.assertEqual(seen, {"input": "hello", "lr": "0.01", "token": "t0k", "cfg_lr": "0.01",
                                "team": "vision", "cwd": scratch})
        with open(os.path.join(scratch, "copy.txt")) as f:
            self.assertEqual(f.read(), "hello", "the emptyDir is a real folder, kept after the run")

    def test_a_pvc_is_a_folder_kept_after_the_job_until_delete_workspace(self):
        pvc = self.write("pvc.yaml", VOLUME_JOB.replace(
            "hostPath: {path: HOSTDIR, type: Directory}", "persistentVolumeClaim: {claimName: c}"))
        claim = os.path.join(self.state, ".claims", "default", "c")
        os.makedirs(claim)
        with open(os.path.join(claim, "input.txt"), "w") as f:
            f.write("from the claim")
        job, proc = self.run_json(pvc, "--configmap", "app-config=cfg", "--secret",
                                  "creds=creds", "--env-file", "team.env", expect_code=0)
        folder = os.path.join(self.state, "default", "pytorchjobs", "vols")
        with open(os.path.join(folder, "logs", "vols-master-0.log")) as f:
            [seen] = results(f.read())
        self.assertEqual(seen["input"], "from the claim", "the claim's folder is mounted")
        described = self.trainctl("describe", "pytorchjob", "vols")
        self.assertIn(f"Workspace:          {claim} (PVC c;", described.stdout)
        self.assertEqual(self.trainctl("delete", "pytorchjob", "vols").returncode, 0)
        self.assertTrue(os.path.isfile(os.path.join(claim, "input.txt")), "kept, as a PVC")
        self.run_json(pvc, "--configmap", "app-config=cfg", "--secret", "creds=creds",
                      "--env-file", "team.env", expect_code=0)
        gone = self.trainctl("delete", "pytorchjob", "vols", "--delete-workspace")
        self.assertEqual(gone.returncode, 0, self.explain(gone))
        self.assertIn(f"workspace {claim} deleted", gone.stdout)
        self.assertFalse(os.path.exists(claim))

    def test_a_missing_configmap_or_unsupported_volume_is_refused_before_starting(self):
        proc = self.trainctl("run", self.manifest, "--secret", "creds=creds")
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("spec.pytorchReplicaSpecs[Master].template.spec.volumes[1].configMap.name: "
                      "\"app-config\": not on this machine; give it with --configmap "
                      "app-config=FOLDER", proc.stderr)
        nfs = self.write("nfs.yaml", VOLUME_JOB.replace(
            "hostPath: {path: HOSTDIR, type: Directory}", "nfs: {server: files, path: /data}"))
        proc = self.trainctl("run", nfs, "--configmap", "app-config=cfg", "--secret", "creds=creds")
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("volumes[0].nfs: Unsupported value", proc.stderr)
        self.assertIn("--volume data=FOLDER", proc.stderr)
        proc = self.trainctl("run", nfs, "--configmap", "app-config=cfg", "--secret",
                             "creds=creds", "--volume", "data=" + self.host)
        self.assertEqual(proc.returncode, 0, "--volume stands in for any volume\n" +
                         self.explain(proc))
        proc = self.trainctl("run", self.manifest, "--configmap", "app-config=nowhere")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--configmap app-config:", proc.stderr)
        self.assertIn("is not a folder", proc.stderr)

    def test_dry_run_shows_the_mounts_and_rewritten_paths(self):
        proc = self.trainctl("run", self.manifest, "--dry-run", "--configmap", "app-config=cfg",
                             "--secret", "creds=creds")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn("mount:    /data -> " + self.host + " (volume data)", proc.stdout)
        self.assertIn("cat " + self.host + "/input.txt", proc.stdout)



class ClaimFileTest(TrainctlTestCase):
    """A file written for a cluster: claims made, other core objects skipped with a note."""

    MANIFEST = """
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: results}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: tensorboard}
        spec: {ports: [{port: 6006}]}
        ---
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: NAME}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              restartPolicy: Never
              template:
                spec:
                  volumes: [{name: out, persistentVolumeClaim: {claimName: results}}]
                  containers:
                  - name: pytorch
                    image: unused
                    command: [sh, -c, "SCRIPT"]
                    volumeMounts: [{name: out, mountPath: /results}]
        """

    def file(self, name, script):
        return self.write(f"{name}.yaml",
                          self.MANIFEST.replace("NAME", name).replace("SCRIPT", script))

    def test_claims_in_the_file_are_made_kept_listed_and_deleted(self):
        writer = self.file("writer", "echo epoch-3 > /results/last")
        proc = self.trainctl("run", writer)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn("(document 2): Service tensorboard skipped", proc.stderr)
        self.assertIn("PersistentVolumeClaim default/results", proc.stderr)
        listed = self.trainctl("claims", "-o", "json")
        self.assertEqual(listed.returncode, 0, self.explain(listed))
        claims = json.loads(listed.stdout)
        self.assertEqual([(c["name"], c["jobs"]) for c in claims],
                         [("results", ["pytorchjob/writer"])])
        with open(os.path.join(claims[0]["path"], "last")) as f:
            self.assertEqual(f.read(), "epoch-3\n")
        # A second job finds what the first left, as a PVC outlives its pods.
        reader = self.file("reader", "cat /results/last")
        proc = self.trainctl("run", reader)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn("kept from earlier jobs", proc.stderr)
        self.assertIn("epoch-3", self.trainctl("logs", "reader").stdout)
        table = self.trainctl("claims").stdout
        self.assertIn("pytorchjob/reader", table)
        deleted = self.trainctl("claims", "delete", "results")
        self.assertEqual(deleted.returncode, 0, self.explain(deleted))
        self.assertFalse(os.path.exists(claims[0]["path"]))
        missing = self.trainctl("claims", "delete", "results")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("not found", missing.stderr)


if __name__ == "__main__":
    unittest.main()
