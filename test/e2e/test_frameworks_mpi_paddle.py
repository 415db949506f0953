"""MPIJob (and, later, PaddleJob) through `trainctl run` with the real framework: Open MPI's
mpirun in the Launcher forks every rank on this machine, the Workers are idle stand-ins that
are stopped when the Launcher ends. Checks the ranks' RESULT lines (accuracy, identical
parameters), that a failing rank fails the job, and that no process is left behind."""

import json
import os
import subprocess
import unittest

from harness import REPO, TrainctlTestCase, condition_types, results

MPI_DIR = os.path.join(REPO, "examples", "mpi")
PADDLE_DIR = os.path.join(REPO, "examples", "paddle")


def processes_in(folder):
    """Pids of live processes whose working directory is `folder`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") == folder:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(int(entry))
        except (FileNotFoundError, PermissionError, ProcessLookupError):
            pass
    return found


def copy_mpi_example(test, example, replace=None):
    """An MPI example, edited by `replace` (each old text must be there), in the test's work dir
    beside train.py (so its processes can be found by their cwd)."""
    with open(os.path.join(MPI_DIR, example)) as f:
        text = f.read()
    for old, new in (replace or {}).items():
        test.assertIn(old, text)
        text = text.replace(old, new)
    os.symlink(os.path.join(MPI_DIR, "train.py"), os.path.join(test.work, "train.py"))
    return test.write(example, text)


class MpiJobTest(TrainctlTestCase):
    # No skip: `make test` installs Open MPI (hack/install-deps.sh); a missing mpirun is a failure.

    def copy_example(self, replace=None):
        return copy_mpi_example(self, "mpijob.yaml", replace)

    def test_two_ranks_train_the_same_model(self):
        job, proc = self.run_json(self.copy_example(), expect_code=0, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        found = results(proc.stderr)
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1], self.explain(proc))
        for r in found:
            self.assertEqual(r["world_size"], 2)
            self.assertGreater(r["test_accuracy"], 0.85, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        # mpirun refuses root unless told: as root the launcher is allowed, said once.
        root_note = "mpirun runs as root here (trainctl run is root)"
        self.assertEqual(proc.stderr.count(root_note), 1 if os.geteuid() == 0 else 0, proc.stderr[-3000:])
        statuses = job["status"]["replicaStatuses"]
        self.assertEqual(statuses["Launcher"].get("succeeded"), 1, statuses)
        hostfile = os.path.join(self.state, "default", "mpijobs", "mpi-digits", "hostfile")
        with open(hostfile) as f:
            self.assertEqual(f.read(), "localhost slots=2\n")
        replicas = self.stored_replicas("default", "mpijobs", "mpi-digits")
        workers = [r for r in replicas if r["type"] == "Worker"]
        self.assertEqual(len(workers), 2, replicas)
        for w in workers:
            self.assertEqual(w["state"], "Stopped", w)
            self.assertEqual(w["command"], "sleep infinity", w)
        self.assertEqual(processes_in(self.work), [])

    def test_failing_rank_fails_the_job_and_leaves_nothing(self):
        manifest = self.copy_example({'- "200"': '- "200"\n                - --fail-rank\n'
                                                 '                - "1"'})
        job, proc = self.run_json(manifest, expect_code=1, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Failed", self.explain(proc))
        self.assertIn("failing on purpose", proc.stderr)
        self.assertEqual(results(proc.stderr), [], self.explain(proc))
        self.assertEqual(job["status"]["replicaStatuses"]["Launcher"].get("failed"), 1,
                         job["status"])
        self.assertEqual(processes_in(self.work), [])


class MpiJobV2Test(TrainctlTestCase):
    """kubeflow.org/v2beta1 (mpi-operator's API) and the seed's v1alpha2 through `trainctl run`."""

    def copy(self, example, replace=None):
        return copy_mpi_example(self, example, replace)

    def created_pods(self, name):
        path = os.path.join(self.state, "default", "mpijobs", name, "events.jsonl")
        with open(path) as f:
            events = [json.loads(line) for line in f if line.strip()]
        return [e["message"].split(": ", 1)[1] for e in events
                if e["reason"] == "SuccessfulCreatePod"]

    def test_v2beta1_ranks_train_the_same_model_after_the_workers_start(self):
        job, proc = self.run_json(self.copy("mpijob-v2beta1.yaml"), expect_code=0, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        self.assertEqual(job["apiVersion"], "kubeflow.org/v2beta1")
        found = results(proc.stderr)
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1], self.explain(proc))
        self.assertGreater(min(r["test_accuracy"] for r in found), 0.85, found)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        # The workers' command (sshd on a cluster) is replaced, said once with the field path.
        self.assertEqual(proc.stderr.count(
            "note: spec.mpiReplicaSpecs[Worker]: the workers' command (sshd on a cluster) is not "
            "run here"), 1, proc.stderr[-3000:])
        # WaitForWorkersReady: the launcher is created after both workers.
        self.assertEqual(self.created_pods("mpi-digits-v2"),
                         ["mpi-digits-v2-worker-0", "mpi-digits-v2-worker-1",
                          "mpi-digits-v2-launcher"])
        hostfile = os.path.join(self.state, "default", "mpijobs", "mpi-digits-v2", "hostfile")
        with open(hostfile) as f:
            self.assertEqual(f.read(), "localhost slots=2\n")
        self.assertEqual(processes_in(self.work), [])

    def test_v2beta1_launcher_as_worker_gets_its_own_slot(self):
        manifest = self.copy("mpijob-v2beta1.yaml", {
            "launcherCreationPolicy: WaitForWorkersReady": "runLauncherAsWorker: true",
            '[mpirun, -np, "2",': '[mpirun, -np, "3",'})
        job, proc = self.run_json(manifest, expect_code=0, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        found = results(proc.stderr)
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1, 2], self.explain(proc))
        self.assertEqual({r["world_size"] for r in found}, {3})
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        # AtStartup (the default): the launcher is not held back (replicas start in name order).
        self.assertEqual(self.created_pods("mpi-digits-v2")[0], "mpi-digits-v2-launcher")

    def test_v2beta1_bad_input_names_the_field(self):
        for replace, expected in (
                ({"mpiImplementation: OpenMPI": "mpiImplementation: LAM"},
                 'spec.mpiImplementation: Unsupported value: "LAM": supported values: '
                 '"Intel", "MPICH", "OpenMPI"'),
                ({"slotsPerWorker: 1": "slotsPerWorker: one"}, "spec.slotsPerWorker")):
            manifest = self.copy("mpijob-v2beta1.yaml", replace)
            proc = self.trainctl("run", manifest, timeout=60)
            self.assertEqual(proc.returncode, 2, self.explain(proc))
            self.assertIn(manifest, proc.stderr)
            self.assertIn(expected, proc.stderr)
            os.unlink(os.path.join(self.work, "train.py"))

    def test_v2beta1_mpich_all_reduces_with_the_fork_bootstrap(self):
        # No skip: `make test` installs MPICH beside Open MPI (hack/install-deps.sh).
        binary = os.path.join(self.work, "allreduce")
        subprocess.run(["mpicc.mpich", "-O2", "-o", binary,
                        os.path.join(REPO, "test", "e2e", "scripts", "allreduce.c")],
                       check=True, timeout=120)
        manifest = self.copy("mpijob-v2beta1.yaml", {
            "mpiImplementation: OpenMPI": "mpiImplementation: MPICH",
            '[mpirun, -np, "2", python3, train.py, --epochs, "200"]':
                '[mpiexec.mpich, -n, "2", ./allreduce]'})
        job, proc = self.run_json(manifest, expect_code=0, timeout=120)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        found = results(proc.stderr)
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1], self.explain(proc))
        self.assertEqual({r["sum"] for r in found}, {3})
        hostfile = os.path.join(self.state, "default", "mpijobs", "mpi-digits-v2", "hostfile")
        with open(hostfile) as f:
            self.assertEqual(f.read(), "localhost:2\n")  # MPICH's host:slots format
        self.assertEqual(processes_in(self.work), [])

    def test_v1alpha2_runs_as_v1_with_one_note(self):
        manifest = self.copy("mpijob.yaml", {
            "apiVersion: kubeflow.org/v1\n": "apiVersion: kubeflow.org/v1alpha2\n",
            "  runPolicy:\n    cleanPodPolicy: Running\n": "  cleanPodPolicy: Running\n  backoffLimit: 0\n"})
        job, proc = self.run_json(manifest, expect_code=0, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        self.assertEqual(job["apiVersion"], "kubeflow.org/v1")
        self.assertEqual(job["spec"]["runPolicy"]["backoffLimit"], 0)
        self.assertEqual(proc.stderr.count("is kubeflow.org/v1alpha2 (mpi-operator v0.3 and before): "
                                           "run as kubeflow.org/v1"), 1, proc.stderr[-3000:])
        self.assertEqual(sorted(r["rank"] for r in results(proc.stderr)), [0, 1])


class PaddleJobTest(TrainctlTestCase):
    # No skip: `make test` installs paddlepaddle (hack/requirements/paddle.txt).

    def test_two_workers_train_the_same_model(self):
        with open(os.path.join(PADDLE_DIR, "paddlejob.yaml")) as f:
            manifest = self.write("paddlejob.yaml", f.read())
        os.symlink(os.path.join(PADDLE_DIR, "train.py"), os.path.join(self.work, "train.py"))
        job, proc = self.run_json(manifest, expect_code=0, timeout=240)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        # Each replica's launch module prints its own rank's log; which replica gets which
        # rank is the rendezvous' choice.
        logs = os.path.join(self.state, "default", "paddlejobs", "paddle-digits", "logs")
        found = []
        for i in range(2):
            with open(os.path.join(logs, f"paddle-digits-worker-{i}.log")) as f:
                found += results(f.read())
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1], self.explain(proc))
        for r in found:
            self.assertEqual(r["world_size"], 2)
            self.assertGreater(r["test_accuracy"], 0.85, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        self.assertEqual(processes_in(self.work), [])


if __name__ == "__main__":
    unittest.main()
