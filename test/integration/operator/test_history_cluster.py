"""The operator's job history (--history sqlite:PATH) against the real control plane: a job
whose TTL deletes it at once, with cleanPodPolicy All, stays in `trainctl history` with its
first failure and its pods' log tails, because the operator holds the pods and the TTL until
the record is written; a job that succeeds is recorded too, and search finds a log line."""
import json
import os
import subprocess
import tempfile

from harness import TRAINCTL, OperatorTestCase, get_json, make_job, run_for, wait_for

HISTORY = os.path.join(tempfile.mkdtemp(prefix="trainctl-history-"), "history.db")
KWOK_LOG_LINE = "kwok fake container"


class ClusterHistory(OperatorTestCase):

    operator_args = ("--history", "sqlite:" + HISTORY)

    def history(self, *args, code=0):
        proc = subprocess.run([TRAINCTL, "-n", self.ns, "history", "--file", HISTORY, *args],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        return proc.stdout

    def test_a_ttl_deleted_job_stays_in_the_history_with_its_first_failure(self):
        self.create(make_job("PyTorchJob", "gone", self.ns,
                             {"Master": (1, run_for(5)), "Worker": (2, run_for(1, exit_code=3))},
                             run_policy={"ttlSecondsAfterFinished": 0, "cleanPodPolicy": "All"}))
        wait_for("the TTL to delete the job",
                 lambda: get_json("pytorchjobs", "gone", "-n", self.ns) is None, timeout=90)
        record = json.loads(self.history("show", "gone", "-o", "json"))
        self.assertEqual(record["source"], "kubernetes")
        self.assertEqual(record["job"]["status"]["conditions"][-1]["type"], "Failed")
        self.assertIn(record["failure"]["name"], ("gone-worker-0", "gone-worker-1"))
        self.assertEqual(record["failure"]["exitCode"], 3)
        self.assertIn("First failure: " + record["failure"]["name"], record["why"]["firstFailure"])
        # The pods were still there when it was written: their log tails are in it.
        self.assertIn(KWOK_LOG_LINE, record["logs"]["worker-0"]["tail"])
        self.assertIn(KWOK_LOG_LINE, record["logs"]["master-0"]["tail"])
        # The operator's events on the job, up to its failure.
        reasons = [e["reason"].split(" (x")[0] for e in record["events"]]
        self.assertIn("SuccessfulCreatePod", reasons)
        self.assertEqual(reasons[-1], "PyTorchJobFailed", record["events"])
        self.assertEqual({r["name"] for r in record["replicas"]},
                         {"gone-master-0", "gone-worker-0", "gone-worker-1"})
        listed = json.loads(self.history("-o", "json"))
        self.assertIn("gone", [row["name"] for row in listed["items"]])
        found = json.loads(self.history("search", "exited with code 3", "-o", "json"))
        self.assertIn("gone", [row["name"] for row in found["items"]])

    def test_a_succeeded_job_is_recorded_and_the_cli_says_where_the_history_is(self):
        self.create(make_job("TFJob", "fine", self.ns, {"Worker": (1, run_for(1))}))
        self.wait_condition("TFJob", "fine", "Succeeded")
        wait_for("the record", lambda: "fine" in self.history(), timeout=60)
        shown = self.history("show", "fine")
        self.assertIn("State:              Succeeded", shown)
        self.assertIn("Kept logs:", shown)
        refused = subprocess.run([TRAINCTL, "--backend", "kubernetes", "history"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("--file PATH", refused.stderr)
        missing = subprocess.run([TRAINCTL, "history", "--file", HISTORY + ".nope"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no history file", missing.stderr)
