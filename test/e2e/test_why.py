"""Tell the user why, locally, through the real binary: a replica in a crash loop is the
job's ReplicasReady reason while it runs (get -o wide, describe, wait --timeout) with its exit
and last output, reported once with one restart count (upstream's simple.yaml unchanged), the first replica to fail is
named with its exit code and last log lines in the Failed condition, and a job that stops
writing output is caught by its progress timeout (Warn, Fail)."""

import json
import time

from harness import TrainctlTestCase, last_condition

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  annotations: {annotations}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {master_policy}
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, {master}]
    Worker:
      replicas: {workers}
      restartPolicy: {worker_policy}
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, {worker}]
"""


# Upstream's examples/pytorch/simple.yaml of kubeflow/training-operator v1.9.4, unchanged.
UPSTREAM_SIMPLE = """\
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: pytorch-simple
  namespace: kubeflow
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command:
                - "python3"
                - "/opt/pytorch-mnist/mnist.py"
                - "--epochs=1"
"""


def manifest(name, master, worker, workers=1, master_policy="Never", worker_policy="Never",
             annotations=None):
    return JOB.format(name=name, master=json.dumps(master), worker=json.dumps(worker),
                      workers=workers, master_policy=master_policy, worker_policy=worker_policy,
                      annotations=json.dumps(annotations or {}))


def ready(job):
    for c in job.get("status", {}).get("conditions", []):
        if c["type"] == "ReplicasReady":
            return c
    return None


class WhyLocally(TrainctlTestCase):

    def get_json(self, name):
        proc = self.trainctl("get", "pytorchjob", name, "-o", "json")
        return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None

    def test_restart_back_off_is_the_reason_while_the_job_runs(self):
        path = self.write("job.yaml", manifest(
            "crashy", "sleep 30", "echo 'worker: cannot open /data/shard-1'; exit 1",
            worker_policy="OnFailure"))
        run = self.start("run", path)
        try:
            def backing_off():
                job = self.get_json("crashy")
                c = ready(job) if job else None
                return c if c and c["reason"] == "CrashLoopBackOff" else None
            c = self.wait_for(backing_off, 30, "ReplicasReady reason CrashLoopBackOff")
            self.assertIn("1/2 replicas keep crashing and restarting (Worker 0). Last exit: "
                          "crashy-worker-0 exited with code 1 at ", c["message"])
            self.assertTrue(c["message"].endswith(
                "\nLast output:\nworker: cannot open /data/shard-1"), c["message"])
            wide = self.trainctl("get", "-o", "wide")
            self.assertEqual(wide.returncode, 0, self.explain(wide))
            self.assertIn("REASON", wide.stdout.splitlines()[0])
            self.assertIn("CrashLoopBackOff: ", wide.stdout)
            described = json.loads(self.trainctl("describe", "pytorchjob", "crashy", "-o", "json").stdout)
            self.assertEqual(described["why"]["reason"], "CrashLoopBackOff")
            # wait --timeout says why the condition was not reached.
            waited = self.trainctl("wait", "pytorchjob", "crashy", "--timeout", "2s")
            self.assertEqual(waited.returncode, 1, self.explain(waited))
            self.assertIn("timed out after 2s waiting for condition Succeeded: PyTorchJob "
                          "default/crashy is Running\nCrashLoopBackOff (since ", waited.stderr)
            self.assertIn("crashy-worker-0 exited with code 1", waited.stderr)
            self.assertIn("Last output:\nworker: cannot open /data/shard-1", waited.stderr)
        finally:
            self.stop(run)

    def test_upstreams_simple_example_crash_loops_saying_why_once(self):
        # Upstream's examples/pytorch/simple.yaml (v1.9.4), unchanged: its image's script is not
        # on this machine, so both replicas crash and restart in place (OnFailure) again and again.
        path = self.write("simple.yaml", UPSTREAM_SIMPLE)
        run = self.start("run", path)
        try:
            def described():
                proc = self.trainctl("describe", "pytorchjob", "pytorch-simple", "-n", "kubeflow",
                                     "-o", "json")
                return json.loads(proc.stdout) if proc.returncode == 0 else None

            def both_in_the_loop():
                d = described()
                c = ready(d["job"]) if d else None
                restarts = [r.get("restarts", 0) for r in d["replicas"]] if d else []
                if c and c["message"].startswith("2/2 ") and min(restarts or [0]) >= 2:
                    return d
                return None
            d = self.wait_for(both_in_the_loop, 60, "both replicas crash-looping, 2 restarts each")
            c = ready(d["job"])
            self.assertEqual(c["reason"], "CrashLoopBackOff")
            self.assertRegex(
                c["message"],
                r"\A2/2 replicas keep crashing and restarting \(Master 0; Worker 0\)\. "
                r"Last exit: pytorch-simple-(master|worker)-0 exited with code 2 at "
                r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, \d+ restarts? so far"
                r"(; back-off \d+ s before restarting pytorch-simple-(master|worker)-0)?\.\n"
                r"Last output:\n\S*python3: can't open file '/opt/pytorch-mnist/mnist\.py': "
                r"\[Errno 2\] No such file or directory\Z")

            # One restart count: the job's replica statuses and the replica table agree.
            def counts_agree():
                d = described()
                if not d:
                    return None
                table = {}
                for r in d["replicas"]:
                    t = r["type"]
                    table[t] = table.get(t, 0) + r.get("restarts", 0)
                status = {t: s.get("restarts", 0)
                          for t, s in d["job"]["status"].get("replicaStatuses", {}).items()}
                return (status, table) if status == table and min(table.values()) >= 2 else None
            status, table = self.wait_for(counts_agree, 30, "replicaStatuses restarts = table")
            text = self.trainctl("describe", "pytorchjob", "pytorch-simple", "-n", "kubeflow").stdout
            self.assertRegex(text, r"Replica Statuses:\n\s+TYPE.*RESTARTS\n\s+Master\s+\d+\s+\d+\s+\d+\s+[1-9]")

            # Reported once, not on every cycle; restarts in place are no pod creations.
            events = described()["events"]
            job_events = [e["reason"] for e in events if e["object"] == "PyTorchJob/pytorch-simple"]
            self.assertEqual(job_events.count("CrashLoopBackOff"), 1, job_events)
            self.assertEqual(job_events.count("AllReplicasRunning"), 0, job_events)
            created = [e for e in events if e["reason"] == "SuccessfulCreatePod"]
            self.assertEqual(len(created), 2, created)
            for pod in ("pytorch-simple-master-0", "pytorch-simple-worker-0"):
                started = [e for e in events
                           if e["reason"] == "Started" and e["object"] == "Pod/" + pod]
                backoff = [e for e in events
                           if e["reason"] == "BackOff" and e["object"] == "Pod/" + pod]
                self.assertGreaterEqual(len(started), 3, (pod, started))
                self.assertGreaterEqual(len(backoff), 2, (pod, backoff))
        finally:
            self.stop(run)

    def test_the_first_replica_to_fail_is_named_with_its_last_lines(self):
        path = self.write("job.yaml", manifest(
            "first", "sleep 3; echo 'master: lost worker 1'; exit 2",
            "echo 'step 1'; echo 'RuntimeError: CUDA out of memory'; exit 3", workers=1,
            master_policy="ExitCode", worker_policy="ExitCode"))
        job, proc = self.run_json(path, expect_code=1)
        failed = last_condition(job)
        self.assertEqual(failed["type"], "Failed", self.explain(proc))
        self.assertIn("First failure: first-worker-0 (Worker 0) exited with code 3, at ",
                      failed["message"])
        self.assertIn("Last output:\nstep 1\nRuntimeError: CUDA out of memory", failed["message"])
        self.assertNotIn("lost worker 1", failed["message"])
        self.assertIsNone(ready(job), "a finished job carries no ReplicasReady")
        described = self.trainctl("describe", "pytorchjob", "first")
        self.assertIn("Why:\n  First failure: first-worker-0", described.stdout)
        self.assertIn("    RuntimeError: CUDA out of memory", described.stdout)
        wide = self.trainctl("get", "-o", "wide")
        self.assertIn("First failure: first-worker-0 (Worker 0) exited with code 3", wide.stdout)

    def test_progress_timeout_warns_then_fails_a_silent_job(self):
        path = self.write("job.yaml", manifest(
            "hung", "echo started; sleep 60", "echo started; sleep 60",
            annotations={"trainctl.dev/progress-timeout-seconds": "2",
                         "trainctl.dev/progress-timeout-policy": "Fail"}))
        start = time.monotonic()
        job, proc = self.run_json(path, expect_code=1, timeout=60)
        elapsed = time.monotonic() - start
        failed = last_condition(job)
        self.assertEqual(failed["type"], "Failed", self.explain(proc))
        self.assertIn("made no progress", failed["message"])
        self.assertIn("No replica has written output for 2 s", failed["message"])
        self.assertLess(elapsed, 20, "failed long after the timeout")
        events = self.trainctl("describe", "pytorchjob", "hung").stdout
        self.assertIn("ProgressTimeout", events)

    def test_output_keeps_a_job_with_a_progress_timeout_alive(self):
        path = self.write("job.yaml", manifest(
            "chatty", "for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done",
            "for i in 1 2 3 4 5 6; do printf '.'; sleep 0.5; done",  # no newline, still output
            annotations={"trainctl.dev/progress-timeout-seconds": "2",
                         "trainctl.dev/progress-timeout-policy": "Fail"}))
        job, proc = self.run_json(path, expect_code=0, timeout=60)
        self.assertEqual(last_condition(job)["type"], "Succeeded", self.explain(proc))

    def test_a_bad_progress_annotation_is_refused_with_its_field_path(self):
        path = self.write("job.yaml", manifest(
            "bad", "true", "true", annotations={"trainctl.dev/progress-timeout-seconds": "soon"}))
        proc = self.trainctl("run", path)
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertIn("metadata.annotations[trainctl.dev/progress-timeout-seconds]", proc.stderr)
        self.assertIn("expected a whole number of seconds", proc.stderr)


TORCHRUN_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: elastic
spec:
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [torchrun, fail.py]
            env:
            # torch 1.13 on Python 3.11 (Debian's): see examples/pytorch/pytorchjob-torchrun.yaml
            - {name: PET_REDIRECTS, value: "9:1"}
            - {name: PET_TEE, value: "9:1"}
"""

FAIL_PY = """
import os
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    print("rank", os.environ["RANK"], "starting", flush=True)
    if os.environ["LOCAL_RANK"] == "1":
        raise RuntimeError("NCCL error: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 0")

main()
"""


class WhyTorchrun(TrainctlTestCase):
    """torchrun with the real torch: the root cause from its structured error file."""

    def test_the_root_cause_comes_from_torchelastics_error_file(self):
        self.write("fail.py", FAIL_PY)
        path = self.write("job.yaml", TORCHRUN_JOB)
        job, proc = self.run_json(path, expect_code=1, timeout=120)
        failed = last_condition(job)
        self.assertEqual(failed["type"], "Failed", self.explain(proc))
        self.assertIn("First failure: elastic-worker-0 (Worker 0) exited with code 1", failed["message"])
        # The log ends with torchrun's own summary; the error file names the worker's exception.
        self.assertTrue(failed["message"].endswith(
            "RuntimeError: NCCL error: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 0"),
            failed["message"])

    def test_a_rank_that_fails_is_on_the_job_while_torchrun_holds_its_replica(self):
        # Rank 1 exits with 7; its torchrun agent then waits at its exit barrier for rank 0's,
        # so the Worker runs on. The job says which rank failed within seconds, everywhere.
        self.write("ranks.py", RANKS_PY)
        path = self.write("job.yaml", RANKS_JOB)
        run = self.start("run", path)
        try:
            def rank_failed():
                proc = self.trainctl("get", "pytorchjob", "ranks", "-o", "json")
                job = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
                c = ready(job) if job else None
                return c if c and c["reason"] == "RankFailed" else None
            c = self.wait_for(rank_failed, 30, "ReplicasReady reason RankFailed")
            self.assertIn("ranks-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7 at ",
                          c["message"])
            self.assertTrue(c["message"].endswith("\nLast output:\nrank 1: loss is nan, giving up"),
                            c["message"])
            wide = self.trainctl("get", "-o", "wide")
            self.assertIn("RankFailed: 1/2 replicas run on after one of their processes failed",
                          wide.stdout)
            described = self.trainctl("describe", "pytorchjob", "ranks")
            worker_row = [l for l in described.stdout.splitlines()
                          if l.strip().startswith("ranks-worker-0")][0]
            self.assertIn("Running", worker_row)
            self.assertIn("rank 1: 7", worker_row, described.stdout)
            waited = self.trainctl("wait", "pytorchjob", "ranks", "--timeout", "1s")
            self.assertEqual(waited.returncode, 1, self.explain(waited))
            self.assertIn("is Running\nRankFailed (since ", waited.stderr)
            self.assertIn("rank 1 (local_rank 0) exited with code 7", waited.stderr)
            # The Master decides (upstream's rule), and its success says what failed meanwhile.
            self.write("go", "")
            out, err = run.communicate(timeout=90)
            self.assertEqual(run.returncode, 0, err[-3000:])
            job = json.loads(self.trainctl("get", "pytorchjob", "ranks", "-o", "json").stdout)
            done = last_condition(job)
            self.assertEqual(done["type"], "Succeeded")
            self.assertIn("is successfully completed. While it ran, a process failed: "
                          "ranks-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7",
                          done["message"])
        finally:
            self.stop(run)


# Rank 0 trains on until the test has looked (the file "go"), so a slow machine cannot end the
# job before the checks; at most 120 s.
RANKS_PY = """
import os, sys, time
if os.environ["RANK"] == "1":
    print("rank 1: loss is nan, giving up", flush=True)
    sys.exit(7)
deadline = time.time() + 120
while not os.path.exists("go") and time.time() < deadline:
    time.sleep(0.2)
print("rank 0 done", flush=True)
"""

RANKS_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ranks
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [torchrun, ranks.py]
            env:
            # torch 1.13 on Python 3.11 (Debian's): see examples/pytorch/pytorchjob-torchrun.yaml
            - {name: PET_REDIRECTS, value: "9:1"}
            - {name: PET_TEE, value: "9:1"}
    Worker:
      replicas: 1
      # Not Never: when rank 0 is done both agents leave the barrier together, and the Worker's
      # exit 1 (torchrun's, for rank 1) would race the Master's success (upstream's rule makes
      # a Never replica's failure the job's). OnFailure, as create_job writes it.
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [torchrun, ranks.py]
            env:
            - {name: PET_REDIRECTS, value: "9:1"}
            - {name: PET_TEE, value: "9:1"}
"""
