"""Failure paths end to end through `trainctl run`: restart policies, backoffLimit,
activeDeadlineSeconds, a crashing replica stopping its siblings, Ctrl-C/SIGTERM, and a runner
killed with SIGKILL taking every replica process with it."""

import json
import os
import signal
import time
import unittest

from harness import TrainctlTestCase, condition_types, last_condition, process_alive

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  runPolicy: {run_policy}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {master_policy}
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, {master_script}]
{worker}"""

WORKER = """    Worker:
      replicas: {replicas}
      restartPolicy: {policy}
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, {script}]
"""


def manifest(name, master_script, master_policy="Never", run_policy="{}", worker=None):
    worker_text = WORKER.format(**worker) if worker else ""
    return JOB.format(name=name, run_policy=run_policy, master_policy=master_policy,
                      master_script=json.dumps(master_script), worker=worker_text)


class RestartPolicyTest(TrainctlTestCase):

    def test_exit_code_137_is_retried_then_succeeds(self):
        path = self.write("job.yaml", manifest(
            "retry", "if [ -f marker ]; then echo second; exit 0; fi; "
                     "touch marker; echo first; exit 137", master_policy="ExitCode"))
        job, proc = self.run_json(path, expect_code=0)
        types = condition_types(job)
        self.assertIn("Restarting", types, self.explain(proc))
        self.assertLess(types.index("Restarting"), types.index("Succeeded"))
        self.assertEqual(types[-1], "Succeeded")
        self.assertEqual(job["status"]["replicaStatuses"]["Master"]["succeeded"], 1)
        log = self.trainctl("logs", "retry", "--replica", "master-0")
        self.assertEqual(log.stdout.split(), ["first", "second"], self.explain(log))

    def test_exit_code_1_is_not_retried(self):
        path = self.write("job.yaml", manifest(
            "permanent", "echo attempt >> attempts; exit 1", master_policy="ExitCode"))
        job, proc = self.run_json(path, expect_code=1)
        self.assertEqual(condition_types(job)[-1], "Failed", self.explain(proc))
        self.assertNotIn("Restarting", condition_types(job))
        with open(os.path.join(self.work, "attempts")) as f:
            self.assertEqual(f.read().split(), ["attempt"])

    def test_backoff_limit_stops_retries(self):
        path = self.write("job.yaml", manifest(
            "backoff", "echo attempt >> attempts; exit 3", master_policy="OnFailure",
            run_policy="{backoffLimit: 2}"))
        job, proc = self.run_json(path, expect_code=1, timeout=120)
        failed = last_condition(job)
        self.assertEqual(failed["type"], "Failed", self.explain(proc))
        # Upstream's reason and message: <Kind>Failed, "... reached the specified backoff limit".
        self.assertEqual(failed["reason"], "PyTorchJobFailed")
        self.assertIn("reached the specified backoff limit", failed["message"])
        # backoffLimit 2 = two retries after the first attempt, then no more.
        with open(os.path.join(self.work, "attempts")) as f:
            self.assertEqual(len(f.read().split()), 3)

    def test_active_deadline_fails_the_job_and_stops_replicas(self):
        path = self.write("job.yaml", manifest(
            "deadline", "echo started; sleep 60", run_policy="{activeDeadlineSeconds: 2}"))
        began = time.monotonic()
        job, proc = self.run_json(path, expect_code=1, timeout=60)
        elapsed = time.monotonic() - began
        failed = last_condition(job)
        self.assertEqual(failed["type"], "Failed", self.explain(proc))
        self.assertEqual(failed["reason"], "PyTorchJobFailed")
        self.assertIn("active longer than specified deadline", failed["message"])
        # startTime has whole seconds (as in the Kubernetes API), so a 2 s deadline counted from
        # it ends 1-2 s after the real start; never sooner than 1 s.
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertLess(elapsed, 20, "the deadline was not enforced promptly")


class SiblingStopTest(TrainctlTestCase):

    def test_crashing_worker_stops_the_master_promptly(self):
        # The master would run for a minute; the worker dies after half a second.
        path = self.write("job.yaml", manifest(
            "crash", "echo master up; sleep 60",
            worker={"replicas": 2, "policy": "Never",
                    "script": json.dumps("sleep 0.5; echo boom >&2; exit 7")}))
        began = time.monotonic()
        job, proc = self.run_json(path, "--grace-period", "2", expect_code=1, timeout=60)
        elapsed = time.monotonic() - began
        self.assertEqual(condition_types(job)[-1], "Failed", self.explain(proc))
        self.assertLess(elapsed, 10, "siblings were not stopped promptly")
        for replica in self.stored_replicas("default", "pytorchjobs", "crash"):
            self.assertNotIn(replica.get("state"), ("Running", "Pending"), replica)

    def test_sibling_ignoring_sigterm_is_killed_after_the_grace_period(self):
        path = self.write("job.yaml", manifest(
            "stubborn", "trap '' TERM; echo $$$$ > master.pid; while true; do sleep 0.2; done",
            worker={"replicas": 1, "policy": "Never", "script": json.dumps("sleep 0.5; exit 2")}))
        began = time.monotonic()
        job, proc = self.run_json(path, "--grace-period", "1", expect_code=1, timeout=60)
        elapsed = time.monotonic() - began
        self.assertEqual(condition_types(job)[-1], "Failed", self.explain(proc))
        self.assertLess(elapsed, 10)
        with open(os.path.join(self.work, "master.pid")) as f:
            pid = int(f.read())
        self.assertFalse(process_alive(pid), "master survived SIGKILL")


class InterruptTest(TrainctlTestCase):

    def read_pids(self, name):
        path = os.path.join(self.work, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [int(p) for p in f.read().split()]

    def interrupt(self, sig, expected_code):
        # Kubernetes expands $$ to $ in command and args, so the shell sees $$ (its pid).
        path = self.write("job.yaml", manifest(
            "interrupted", "sh -c 'sleep 120' & echo $! > master-child.pid; wait",
            worker={"replicas": 2, "policy": "OnFailure",
                    "script": json.dumps("echo $$$$ >> worker.pids; sleep 120")}))
        runner = self.start("run", path, "--grace-period", "2")
        try:
            self.wait_for(lambda: len(self.read_pids("worker.pids")) == 2
                          and self.read_pids("master-child.pid"), 30, "replicas to start")

            # The runner records the replicas at the end of the pass that started them, which
            # a loaded machine may finish after the replicas wrote their pid files.
            def recorded():
                try:
                    replicas = self.stored_replicas("default", "pytorchjobs", "interrupted")
                except (OSError, ValueError):
                    return None
                pids = [r["pid"] for r in replicas if r.get("pid")]
                return pids if len(pids) == 3 else None
            groups = self.wait_for(recorded, 30, "the runner to record 3 replica groups")
            os.kill(runner.pid, sig)
            _, err = runner.communicate(timeout=30)
        finally:
            self.stop(runner)
        self.assertEqual(runner.returncode, expected_code, err[-2000:])
        for pid in self.read_pids("worker.pids") + self.read_pids("master-child.pid"):
            self.assertFalse(process_alive(pid), f"pid {pid} outlived trainctl")
        for group in groups:
            with self.assertRaises(ProcessLookupError, msg=f"process group {group} survived"):
                os.killpg(group, 0)
        got = self.trainctl("get", "pytorchjob", "interrupted", "-o", "json")
        job = json.loads(got.stdout)
        self.assertEqual(last_condition(job)["type"], "Failed")
        self.assertIn("stopped by", last_condition(job)["message"])

    def test_ctrl_c_leaves_no_orphans(self):
        self.interrupt(signal.SIGINT, 130)

    def test_sigterm_leaves_no_orphans(self):
        self.interrupt(signal.SIGTERM, 143)


class NoOrphansTest(TrainctlTestCase):
    """Every process a replica starts dies with it, even one in its own session, and all of
    them die with the runner even when the runner is SIGKILLed (local/supervisor.h)."""

    def pids(self, name):
        return InterruptTest.read_pids(self, name)

    def test_runner_killed_with_sigkill_leaves_nothing_running(self):
        # The master ignores SIGTERM (so it is SIGKILLed after the grace period) and starts a
        # grandchild in a new session and one that also ignores SIGTERM.
        path = self.write("job.yaml", manifest(
            "killed",
            "trap '' TERM; setsid sleep 120 & echo $! >> escaped.pids; "
            "sh -c 'trap \"\" TERM; echo $$$$ >> stubborn.pids; while true; do sleep 0.2; done' & "
            "echo $$$$ >> main.pids; wait",
            worker={"replicas": 1, "policy": "OnFailure",
                    "script": json.dumps("setsid sleep 120 & echo $! >> escaped.pids; sleep 120")}))
        runner = self.start("run", path, "--grace-period", "1")
        try:
            self.wait_for(lambda: len(self.pids("escaped.pids")) == 2
                          and self.pids("stubborn.pids") and self.pids("main.pids"),
                          30, "replicas and their children to start")
            everyone = (self.pids("escaped.pids") + self.pids("stubborn.pids")
                        + self.pids("main.pids"))
            self.assertTrue(all(process_alive(p) for p in everyone))
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait(timeout=10)
            killed = time.monotonic()
            # SIGTERM at once, SIGKILL after the 1 s grace period for the one that ignores it.
            self.wait_for(lambda: not any(process_alive(p) for p in everyone), 10,
                          "every replica process to die with the runner: " +
                          str([p for p in everyone if process_alive(p)]))
            self.assertGreater(time.monotonic() - killed, 0.8, "no grace period was given")
        finally:
            self.stop(runner)
        got = self.trainctl("get", "pytorchjob", "killed", "-o", "json")
        self.assertEqual(last_condition(json.loads(got.stdout))["reason"], "RunnerLost")

    def test_main_process_exit_takes_its_escaped_children_along(self):
        path = self.write("job.yaml", manifest(
            "detached", "setsid sleep 120 & echo $! > escaped.pids; sleep 0.3"))
        job, proc = self.run_json(path, expect_code=0, timeout=60)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        (escaped,) = self.pids("escaped.pids")
        self.assertFalse(process_alive(escaped), "a child in its own session outlived the job")

    def test_a_replica_killed_by_a_signal_is_reported_as_such(self):
        path = self.write("job.yaml", manifest("segv", "sleep 0.2; kill -SEGV $$$$"))
        job, proc = self.run_json(path, expect_code=1, timeout=60)
        (master,) = self.stored_replicas("default", "pytorchjobs", "segv")
        self.assertEqual(master["exitCode"], 139, master)
        self.assertIn("SIGSEGV", last_condition(job)["message"], self.explain(proc))

    def test_a_program_that_cannot_start_is_a_start_error(self):
        # Pre-flight finds an executable file; only exec finds its interpreter missing.
        script = self.write("broken.sh", "#!/nonexistent/interpreter\nexit 0\n")
        os.chmod(script, 0o755)
        path = self.write("job.yaml", manifest("broken", "true").replace(
            "command: [sh, -c, ", "command: [./broken.sh, "))
        job, proc = self.run_json(path, expect_code=1, timeout=60)
        message = last_condition(job)["message"]
        self.assertIn("broken.sh", message, self.explain(proc))
        self.assertIn("No such file or directory", message, self.explain(proc))


if __name__ == "__main__":
    unittest.main()
