"""get, describe, logs [-f], wait and delete on local jobs, from another process, also while
the job runs."""

import json
import os
import pty
import time
import unittest

from harness import TRAINCTL, TrainctlTestCase, condition_types, process_alive

SLOW = """
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata:
  name: slow
spec:
  xgbReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: xgboost
            image: unused-locally
            command: [sh, -c, 'for i in 1 2 3 4 5 6; do echo "master line $$i"; sleep 0.5; done']
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: xgboost
            image: unused-locally
            command: [sh, -c, 'echo "worker of $(WORLD_SIZE) rank $(RANK)"; sleep 120']
"""


class CliTest(TrainctlTestCase):

    def test_inspect_a_running_job_then_wait_for_it(self):
        path = self.write("slow.yaml", SLOW)
        runner = self.start("run", path, "--drain", "0")
        try:
            wait = self.trainctl("wait", "slow", "--for", "condition=Running", "--timeout", "30s")
            self.assertEqual(wait.returncode, 0, self.explain(wait))

            got = self.trainctl("get")
            self.assertEqual(got.returncode, 0, self.explain(got))
            self.assertRegex(got.stdout, r"XGBoostJob\s+slow\s+Running")

            described = self.trainctl("describe", "xgboostjob", "slow")
            self.assertEqual(described.returncode, 0, self.explain(described))
            for fragment in ("slow-master-0", "slow-worker-1", "Running", "Events:"):
                self.assertIn(fragment, described.stdout)

            self.wait_for(lambda: "rank 2" in self.trainctl("logs", "slow").stdout, 20,
                          "worker logs")
            worker = self.trainctl("logs", "slow", "-r", "worker-1")
            self.assertEqual(worker.stdout.strip(), "worker of 3 rank 2")

            follow = self.trainctl("logs", "slow", "-f", "-r", "master-0", timeout=60)
            self.assertEqual(follow.returncode, 0, self.explain(follow))
            self.assertEqual(follow.stdout.split("\n")[:6],
                             [f"master line {i}" for i in range(1, 7)])

            done = self.trainctl("wait", "slow", "--timeout", "60s")
            self.assertEqual(done.returncode, 0, self.explain(done))
            _, err = runner.communicate(timeout=60)
            self.assertEqual(runner.returncode, 0, err)
        finally:
            self.stop(runner)

        job = json.loads(self.trainctl("get", "slow", "-o", "json").stdout)
        self.assertEqual(condition_types(job)[-1], "Succeeded")
        names = self.trainctl("get", "-o", "name")
        self.assertEqual(names.stdout.strip(), "xgboostjob.kubeflow.org/slow")

    def test_delete_stops_a_running_job(self):
        path = self.write("slow.yaml", SLOW.replace("do echo", "do echo $$$$ >> master.pids; echo")
                          .replace("0.5", "30"))
        runner = self.start("run", path)
        try:
            self.trainctl("wait", "slow", "--for", "condition=Running", "--timeout", "30s")
            self.wait_for(lambda: os.path.exists(os.path.join(self.work, "master.pids")), 20,
                          "the master to start")
            deleted = self.trainctl("delete", "slow", timeout=60)
            self.assertEqual(deleted.returncode, 0, self.explain(deleted))
            runner.communicate(timeout=30)
        finally:
            self.stop(runner)
        with open(os.path.join(self.work, "master.pids")) as f:
            self.assertFalse(process_alive(int(f.read().split()[0])))
        gone = self.trainctl("get", "slow")
        self.assertEqual(gone.returncode, 1)
        self.assertIn('"slow" not found', gone.stderr)

    def test_wait_reports_failure_and_timeout(self):
        path = self.write("fail.yaml", SLOW.replace("sleep 0.5; done", "done; exit 4"))
        self.trainctl("run", path)
        failed = self.trainctl("wait", "slow", "--timeout", "10s")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("failed", failed.stderr)
        began = time.monotonic()
        missing = self.trainctl("wait", "nosuchjob", "--timeout", "1s")
        self.assertEqual(missing.returncode, 1)
        self.assertLess(time.monotonic() - began, 10)
        self.assertIn("timed out", missing.stderr)

    def run_on_terminal(self, *args):
        """Runs trainctl with a pseudo-terminal as stdout/stderr; returns (output, exit code)."""
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(self.work)
            os.execve(TRAINCTL, [TRAINCTL, *args], self.env)
        chunks = []
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        return b"".join(chunks).decode(), os.waitstatus_to_exitcode(status)

    def test_live_status_line_on_a_terminal_only(self):
        path = self.write("slow.yaml", SLOW.replace("sleep 120", "sleep 1"))
        output, code = self.run_on_terminal("run", path)
        self.assertEqual(code, 0, output)
        # A reverse-video status line with every replica's state, redrawn in place.
        self.assertRegex(output, r"\x1b\[7m slow Running .*\x1b\[0m master-0:Running")
        self.assertIn("worker-1:Running", output)
        self.assertIn("\x1b[K", output)
        plain = self.trainctl("run", path, "--replace")
        self.assertEqual(plain.returncode, 0, self.explain(plain))
        self.assertNotIn("\x1b", plain.stdout + plain.stderr)
        self.assertIn("==> Running (XGBoostJobRunning)", plain.stdout)

    def test_unknown_job_and_kind(self):
        proc = self.trainctl("describe", "nothing")
        self.assertEqual(proc.returncode, 1)
        self.assertIn('"nothing" not found', proc.stderr)
        proc = self.trainctl("get", "sparkjob", "one")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("unknown kind", proc.stderr)

    def test_operator_rejects_a_negative_event_budget(self):
        # Checked before the cluster is looked for: the flag is named, nothing starts.
        for flag in ("--event-qps", "--event-burst"):
            proc = self.trainctl("operator", flag, "-1", "--kubeconfig", "/nonexistent")
            self.assertEqual(proc.returncode, 2, self.explain(proc))
            self.assertIn(flag + " must not be negative, got -1", proc.stderr)


if __name__ == "__main__":
    unittest.main()
