"""The runner features the Python SDK stands on, through the real binary: `run --detach`,
a manifest on stdin, `describe -o json` (replicas, labels, first failure with its last log
lines), `patch` of labels, and the truth about a runner killed with SIGKILL."""

import json
import os
import signal
import sys

from harness import TrainctlTestCase, process_alive


def job(name, master_cmd, worker_cmd=None, restart="Never", workers=1):
    spec = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": {
            "replicas": 1, "restartPolicy": restart,
            "template": {"spec": {"containers": [
                {"name": "pytorch", "image": "x", "command": master_cmd}]}}}}}}
    if worker_cmd:
        spec["spec"]["pytorchReplicaSpecs"]["Worker"] = {
            "replicas": workers, "restartPolicy": restart,
            "template": {"spec": {"containers": [
                {"name": "pytorch", "image": "x", "command": worker_cmd}]}}}
    return json.dumps(spec)


class DetachTest(TrainctlTestCase):
    def run_stdin(self, manifest, *extra):
        import subprocess
        from harness import TRAINCTL
        return subprocess.run([TRAINCTL, "run", "-", *extra], input=manifest, cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=60)

    def describe(self, name):
        proc = self.trainctl("describe", name, "-o", "json")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        return json.loads(proc.stdout)

    def conditions(self, doc):
        return [(c["type"], c["status"]) for c in doc["job"]["status"].get("conditions", [])]

    def test_detach_returns_at_once_and_the_job_runs_on(self):
        # The replicas wait for a file only the test writes, after --detach has returned: a
        # run that waited for its job would hit run_stdin's timeout instead (no wall-clock
        # bound, which a sanitized build on a busy machine cannot promise).
        go = os.path.join(self.work, "go")
        wait_go = f"while [ ! -e {go} ]; do sleep 0.1; done"
        proc = self.run_stdin(job("bg", ["sh", "-c", f"echo hello-$RANK; {wait_go}"],
                                  ["sh", "-c", f"echo hi-$RANK; {wait_go}"]), "--detach")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        self.assertIn("started", proc.stdout)
        doc = self.describe("bg")
        self.assertTrue(doc["runner"]["active"])
        self.assertIn(("Created", "True"), self.conditions(doc))
        self.assertFalse(os.path.exists(go))
        with open(go, "w"):
            pass
        wait = self.trainctl("wait", "bg", "--timeout", "60s")
        self.assertEqual(wait.returncode, 0, self.explain(wait))
        doc = self.describe("bg")
        self.assertFalse(doc["runner"]["active"])
        self.assertIsNone(doc["failure"])
        by_name = {r["name"]: r for r in doc["replicas"]}
        master = by_name["bg-master-0"]
        self.assertEqual(master["labels"]["training.kubeflow.org/job-role"], "master")
        self.assertEqual(master["labels"]["training.kubeflow.org/replica-type"], "master")
        self.assertNotIn("training.kubeflow.org/job-role", by_name["bg-worker-0"]["labels"])
        self.assertEqual(by_name["bg-worker-0"]["labels"]["training.kubeflow.org/replica-index"],
                         "0")
        with open(master["logFile"]) as f:
            self.assertIn("hello-0", f.read())
        # Relative paths resolve in the current folder for a manifest on stdin.
        self.assertEqual(doc["job"]["metadata"]["namespace"], "default")

    def test_detach_reports_setup_errors_like_a_foreground_run(self):
        bad = self.run_stdin(job("bad", ["no-such-command-xyz"]), "--detach")
        self.assertEqual(bad.returncode, 2, self.explain(bad))
        self.assertIn("<stdin>", bad.stderr)
        self.assertIn("no-such-command-xyz", bad.stderr)
        invalid = self.run_stdin('{"kind": "PyTorchJob", "apiVersion": "kubeflow.org/v1"}',
                                 "--detach")
        self.assertEqual(invalid.returncode, 2, self.explain(invalid))
        self.assertIn("metadata.name", invalid.stderr)
        first = self.run_stdin(job("twice", ["sleep", "120"]), "--detach")
        self.assertEqual(first.returncode, 0, self.explain(first))
        again = self.run_stdin(job("twice", ["sleep", "120"]), "--detach")
        self.assertEqual(again.returncode, 2, self.explain(again))
        self.assertIn("already running", again.stderr)
        self.assertEqual(self.trainctl("delete", "twice").returncode, 0)

    def test_first_failure_names_the_replica_its_exit_code_and_last_lines(self):
        proc = self.run_stdin(job(
            "boom", ["sh", "-c", "sleep 30"],
            ["sh", "-c", 'for i in 1 2 3; do echo "line $i"; done; echo "fatal: rank $RANK"; '
                         "exit 7"]), "--detach")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        wait = self.trainctl("wait", "boom", "--timeout", "60s")
        self.assertEqual(wait.returncode, 1, self.explain(wait))
        doc = self.describe("boom")
        self.assertIn(("Failed", "True"), self.conditions(doc))
        failure = doc["failure"]
        self.assertEqual(failure["name"], "boom-worker-0")
        self.assertEqual(failure["exitCode"], 7)
        self.assertEqual(failure["lastLogLines"][-1], "fatal: rank 1")
        self.assertIn("line 3", failure["lastLogLines"])

    def test_patch_changes_labels_only(self):
        proc = self.run_stdin(job("lab", ["sleep", "120"]), "--detach")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        ok = self.trainctl("patch", "lab", "-p", '{"metadata": {"labels": {"team": "a"}}}')
        self.assertEqual(ok.returncode, 0, self.explain(ok))
        got = json.loads(self.trainctl("get", "pytorchjob", "lab", "-o", "json").stdout)
        self.assertEqual(got["metadata"]["labels"]["team"], "a")
        bad = self.trainctl("patch", "lab", "-p", '{"spec": {"runPolicy": {}}}')
        self.assertEqual(bad.returncode, 2, self.explain(bad))
        self.assertIn("spec", bad.stderr)
        gone = self.trainctl("patch", "lab", "-p", '{"metadata": {"labels": {"team": null}}}')
        self.assertEqual(gone.returncode, 0, self.explain(gone))
        got = json.loads(self.trainctl("get", "pytorchjob", "lab", "-o", "json").stdout)
        self.assertNotIn("team", got["metadata"].get("labels", {}))
        self.assertEqual(self.trainctl("delete", "lab").returncode, 0)

    def test_a_runner_killed_with_sigkill_shows_as_failed(self):
        proc = self.run_stdin(job("lost", ["sleep", "120"]), "--detach")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        doc = self.describe("lost")
        pid = doc["runner"]["pid"]
        # The replica rows appear once the runner has written them (not yet, on a busy machine,
        # when --detach returns).
        replica_pid = self.wait_for(
            lambda: (self.describe("lost")["replicas"] or [{}])[0].get("pid"), 30,
            "the replica to start")
        os.kill(pid, signal.SIGKILL)
        self.wait_for(lambda: not process_alive(pid), 30, "the runner to die")
        try:
            doc = self.describe("lost")
            last = doc["job"]["status"]["conditions"][-1]
            self.assertEqual((last["type"], last["status"], last["reason"]),
                             ("Failed", "True", "RunnerLost"))
            self.assertIn(str(pid), last["message"])
            self.assertEqual(doc["replicas"][0]["state"], "Lost")
            get = self.trainctl("get")
            self.assertIn("Failed", get.stdout)
            wait = self.trainctl("wait", "lost", "--timeout", "5s")
            self.assertEqual(wait.returncode, 1, self.explain(wait))
            self.assertIn("is gone", wait.stderr)
            # The replica went with its runner (local/supervisor.h).
            self.wait_for(lambda: not process_alive(replica_pid), 30,
                          "the replica to die with its runner")
        finally:
            try:
                os.killpg(replica_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    sys.exit("run with python3 -m unittest")
