"""The local job history through the CLI: a finished job stays findable after `trainctl
delete`, after its TTL removes its folder and after its runner is killed, with its first
failure, last output, log tails and metrics; search finds a word of the failing output.
`describe` only reads; `get` sweeps first: it records a killed runner's job and removes a job
past its TTL."""

import json
import os
import signal
import unittest

from harness import TrainctlTestCase

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  runPolicy:
    ttlSecondsAfterFinished: {ttl}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "step=1 loss=2.5"; echo "step=2 loss=1.5"; sleep {sleep}']
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "rendezvous ok"; {worker}']
"""


def job(name, ttl=3600, sleep=0.3, worker="exit 0"):
    return JOB.format(name=name, ttl=ttl, sleep=sleep, worker=worker)


class HistoryTest(TrainctlTestCase):

    def history(self, *args):
        proc = self.trainctl("history", *args)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        return proc

    def test_finished_jobs_outlive_delete_and_ttl(self):
        ok = self.trainctl("run", self.write("ok.yaml", job("fine")), "-q")
        self.assertEqual(ok.returncode, 0, self.explain(ok))
        bad = self.trainctl("run", self.write("bad.yaml", job(
            "broken", ttl=0, sleep=5, worker='echo "NCCL error: unhandled cuda error"; exit 3')), "-q")
        self.assertEqual(bad.returncode, 1, self.explain(bad))
        # The TTL removed the failing job's folder at once; delete removes the other.
        self.assertNotIn("broken", self.trainctl("get").stdout)
        deleted = self.trainctl("delete", "fine")
        self.assertEqual(deleted.returncode, 0, self.explain(deleted))
        self.assertFalse(os.path.exists(os.path.join(self.state, "default", "pytorchjobs", "fine")))

        listed = json.loads(self.history("-o", "json").stdout)
        self.assertEqual(listed["total"], 2)
        by_name = {row["name"]: row for row in listed["items"]}
        self.assertEqual(by_name["fine"]["state"], "Succeeded")
        self.assertEqual(by_name["broken"]["state"], "Failed")
        self.assertEqual(by_name["broken"]["firstFailure"], "broken-worker-0")
        self.assertIn("First failure: broken-worker-0 (Worker 0) exited with code 3",
                      by_name["broken"]["why"])

        found = json.loads(self.history("search", "nccl ERROR", "-o", "json").stdout)
        self.assertEqual([row["name"] for row in found["items"]], ["broken"])
        self.assertIn("broken", self.history("search", "unhandled cuda").stdout)
        self.assertNotIn("fine", self.history("search", "unhandled cuda").stdout)

        shown = self.history("show", "broken").stdout
        self.assertIn("Last output of broken-worker-0:\n  rendezvous ok\n  NCCL error: unhandled cuda error\n", shown)
        self.assertIn('Last metrics:       {"loss":1.5,"step":2.0}', shown)
        self.assertRegex(shown, r"broken-worker-0\s+Failed\s+3")
        record = json.loads(self.history("show", "broken", "-o", "json").stdout)
        self.assertEqual(record["logs"]["worker-0"]["tail"],
                         "rendezvous ok\nNCCL error: unhandled cuda error\n")
        self.assertEqual(record["metrics"]["series"]["loss"]["value"], [2.5, 1.5])
        self.assertEqual(record["failure"]["exitCode"], 3)
        deletions = [e for e in record["events"] if e["reason"] == "SuccessfulDeleteJob"]
        self.assertEqual(len(deletions), 1, "the TTL deletes once, though the master stops later")
        with_logs = self.history("show", record["uid"], "--logs").stdout
        self.assertIn("==> master-0 <==\nstep=1 loss=2.5\n", with_logs)

    def run_and_kill(self, name, ttl=3600):
        """Runs a job whose master sleeps and SIGKILLs its runner once it runs."""
        runner = self.start("run", self.write("slow.yaml", job(name, ttl=ttl, sleep=60)), "-q")
        try:
            self.wait_for(lambda: "Running" in self.trainctl("get", name).stdout, 30,
                          "the job to run")
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        finally:
            self.stop(runner)

    def test_a_killed_runner_is_recorded_when_the_history_is_read(self):
        self.run_and_kill("killed")
        listed = json.loads(self.history("-o", "json").stdout)
        self.assertEqual([(r["name"], r["state"]) for r in listed["items"]], [("killed", "Failed")])
        self.assertIn("RunnerLost", self.history("show", "killed").stdout)

    def test_describe_only_reads_and_get_sweeps(self):
        self.run_and_kill("swept", ttl=2)
        folder = os.path.join(self.state, "default", "pytorchjobs", "swept")

        def stored():
            return {name: open(os.path.join(folder, name), "rb").read()
                    for name in ("job.json", "replicas.json", "events.jsonl", "runner.lock")}
        before = stored()
        described = json.loads(self.trainctl("describe", "swept", "-o", "json").stdout)
        self.assertEqual(described["job"]["status"]["conditions"][-1]["reason"], "RunnerLost")
        self.assertEqual(described["events"][-1]["reason"], "RunnerLost")
        wait = self.trainctl("wait", "swept", "--timeout", "5s")
        self.assertIn("is gone", wait.stderr)
        self.assertEqual(stored(), before, "describe or wait wrote to the job's folder")

        got = self.trainctl("get", "-o", "json")
        self.assertEqual(got.returncode, 0, self.explain(got))
        with open(os.path.join(folder, "job.json")) as f:
            self.assertEqual(json.load(f)["status"]["conditions"][-1]["reason"], "RunnerLost")
        kept = self.history("--file", os.path.join(self.state, "history.db"), "-o", "json")
        self.assertEqual([(r["name"], r["state"]) for r in json.loads(kept.stdout)["items"]],
                         [("swept", "Failed")], "get recorded it")
        # Its TTL (2 s from when get recorded it) passes: the next get removes it.
        self.wait_for(lambda: "swept" not in self.trainctl("get").stdout, 10, "get to remove it")
        self.assertFalse(os.path.exists(folder))

    def test_bad_requests(self):
        for args, code, text in [
            (("search", "ab"), 2, "at least 3 characters"),
            (("show", "nope"), 1, 'no job "nope" in the history'),
            (("forget",), 2, 'unknown action "forget"'),
            (("-o", "yaml"), 2, "unsupported output format"),
        ]:
            proc = self.trainctl("history", *args)
            self.assertEqual(proc.returncode, code, self.explain(proc))
            self.assertIn(text, proc.stderr)
        empty = self.trainctl("history")
        self.assertEqual(empty.returncode, 0, self.explain(empty))
        self.assertIn("No finished jobs", empty.stderr)


if __name__ == "__main__":
    unittest.main()
