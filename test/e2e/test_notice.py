"""The checkpoint notice through `trainctl run` with real processes (issue #38,
docs/status-machine.md "Checkpoint notice"): the active deadline's notice reaches every replica
(file and signal) its seconds before the stop, and `trainctl delete` of a running job tells
every replica and stops them as soon as all reported done."""
import json
import os
import re
import sys
import time
import unittest

from harness import REPO, TrainctlTestCase, last_condition

SCRIPT = os.path.join(REPO, "test", "e2e", "scripts", "notice_listener.py")

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  annotations: {annotations}
spec:
  runPolicy: {run_policy}
  pytorchReplicaSpecs:
"""

REPLICA = """    {type}:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: {command}
"""


def times(log, pattern):
    return [float(m.group(1)) for m in re.finditer(pattern + r" at (\d+\.\d+)", log)]


class CheckpointNoticeTest(TrainctlTestCase):

    def manifest(self, name, annotations, run_policy, *script_args):
        command = json.dumps([sys.executable, SCRIPT, *script_args])
        text = JOB.format(name=name, annotations=json.dumps(annotations),
                          run_policy=json.dumps(run_policy))
        text += "".join(REPLICA.format(type=t, command=command) for t in ("Master", "Worker"))
        return self.write(f"{name}.yaml", text)

    def logs(self, name, replica):
        return self.trainctl("logs", name, "--replica", replica).stdout

    def test_the_deadline_notice_comes_its_seconds_before_the_stop(self):
        path = self.manifest("deadline", {"trainctl.dev/checkpoint-notice-seconds": "4",
                                          "trainctl.dev/checkpoint-signal": "SIGUSR1"},
                             {"activeDeadlineSeconds": 8})
        job, proc = self.run_json(path, timeout=120)
        self.assertEqual(last_condition(job)["type"], "Failed", self.explain(proc))
        self.assertIn("deadline", last_condition(job)["message"])
        for replica in ("master-0", "worker-0"):
            log = self.logs("deadline", replica)
            notice = times(log, r"notice ActiveDeadline stopAt \S+")
            usr1 = times(log, "signal SIGUSR1")
            term = times(log, "signal SIGTERM")
            self.assertEqual(len(notice), 1, log)
            self.assertEqual(len(usr1), 1, log)
            self.assertEqual(len(term), 1, log)
            # N = 4: the notice at least N − 1 s before the stop, and the signal with it.
            self.assertGreaterEqual(term[0] - notice[0], 3.0, log)
            self.assertLess(abs(usr1[0] - notice[0]), 1.0, log)
        described = self.trainctl("describe", "pytorchjob", "deadline").stdout
        self.assertIn("CheckpointNotice", described)
        self.assertIn("Checkpoint Notice:", described)

    def test_delete_tells_every_replica_and_stops_once_all_are_done(self):
        path = self.manifest("deleted", {"trainctl.dev/checkpoint-notice-seconds": "60"}, {},
                             "--report-done")
        run = self.start("run", path)
        try:
            self.wait_for(lambda: "notice file" in self.logs("deleted", "worker-0")
                          and "notice file" in self.logs("deleted", "master-0"), 60,
                          "both replicas running")
            started = time.monotonic()
            deleted = self.trainctl("delete", "pytorchjob", "deleted", timeout=120)
            took = time.monotonic() - started
            self.assertEqual(deleted.returncode, 0, self.explain(deleted))
            self.assertIn("telling every replica to checkpoint", deleted.stdout)
            self.assertLess(took, 30, "stopped once both reported done, not after 60 s")
            run.wait(timeout=30)
            out = run.stdout.read() + run.stderr.read()
            self.assertIn("CheckpointNotice", out)
        finally:
            self.stop(run)


if __name__ == "__main__":
    unittest.main()
