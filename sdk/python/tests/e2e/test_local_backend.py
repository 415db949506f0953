"""The SDK's local backend end to end: every public TrainingClient method against jobs the
real trainctl runner runs with real frameworks (PyTorch DDP, XGBoost, TensorFlow), including
failure, timeout, delete while running, a restarted Python process, and a killed runner."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from trainctl import TrainingClient, models

import train_funcs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def results(text):
    return [json.loads(line[line.index("RESULT ") + 7:]) for line in text.splitlines()
            if "RESULT {" in line]


class LocalBackendTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="trainctl-sdk-")
        self.client = TrainingClient(backend="local", state_dir=self.state)

    def tearDown(self):
        for job in self.client.list_jobs() + self.client.list_jobs(job_kind="XGBoostJob") + \
                self.client.list_jobs(job_kind="TFJob"):
            try:
                self.client.delete_job(job.metadata.name, job_kind=job.kind)
            except RuntimeError:
                pass
        shutil.rmtree(self.state, ignore_errors=True)

    def test_pytorch_function_job_every_read_method(self):
        c = self.client
        c.create_job(name="ddp", train_func=train_funcs.ddp_digits,
                     parameters={"lr": 0.5, "epochs": 15}, num_workers=2,
                     num_procs_per_worker=1, labels={"team": "ml"})
        self.assertTrue(c.is_job_created("ddp"))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            logs, _ = c.get_job_logs("ddp", is_master=False, follow=True)
        self.assertIn("[Pod ddp-master-0]: epoch 0 rank 0", printed.getvalue())
        self.assertIn("[Pod ddp-worker-0]: epoch 0 rank 1", printed.getvalue())
        self.assertEqual(sorted(logs), ["ddp-master-0", "ddp-worker-0"])
        self.assertTrue(logs["ddp-worker-0"].endswith("\n"))  # lines keep their newlines
        calls = []
        job = c.wait_for_job_conditions("ddp", wait_timeout=120, polling_interval=1,
                                        callback=calls.append)
        self.assertTrue(calls and isinstance(calls[0], models.KubeflowOrgV1PyTorchJob))
        self.assertIsInstance(job, models.KubeflowOrgV1PyTorchJob)
        self.assertEqual(job.status.replica_statuses["Master"].succeeded, 1)
        self.assertGreaterEqual(len(c.get_job_conditions("ddp")), 2)
        self.assertTrue(c.is_job_succeeded("ddp"))
        self.assertFalse(c.is_job_running("ddp") or c.is_job_failed("ddp") or
                         c.is_job_restarting("ddp"))
        self.assertEqual(job.spec.nproc_per_node, "1")
        self.assertEqual(job.metadata.labels["team"], "ml")
        # Results: real training, same world on both ranks, the `$` survived.
        found = results(logs["ddp-master-0"] + logs["ddp-worker-0"])
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1])
        self.assertTrue(all(r["world"] == 2 and r["tag"] == "$5 $HOME `x`" for r in found))
        self.assertGreater(found[0]["accuracy"], 0.5)
        # Pods by role and index, as on a cluster.
        self.assertEqual(c.get_job_pod_names("ddp", is_master=True), ["ddp-master-0"])
        self.assertEqual(c.get_job_pod_names("ddp", replica_type="worker", replica_index=0),
                         ["ddp-worker-0"])
        pods = c.get_job_pods("ddp")
        self.assertEqual([p.status.phase for p in pods], ["Succeeded", "Succeeded"])
        # Logs without follow: the master only by default; events with verbose.
        logs, events = c.get_job_logs("ddp", verbose=True)
        self.assertEqual(list(logs), ["ddp-master-0"])
        self.assertIn("pytorchjob/ddp", events)
        self.assertIn("pod/ddp-master-0", events)
        self.assertRegex(events["pytorchjob/ddp"][0], r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
        # update (labels) and list.
        job.metadata.labels["stage"] = "done"
        c.update_job(job, "ddp")
        self.assertEqual(c.get_job("ddp").metadata.labels["stage"], "done")
        job.spec.nproc_per_node = "4"
        with self.assertRaisesRegex(ValueError, "spec cannot change"):
            c.update_job(job, "ddp")
        self.assertEqual([j.metadata.name for j in c.list_jobs()], ["ddp"])
        # Iterator form, after the fact: every line of both pods, then it ends.
        lines = list(c.stream_job_logs("ddp"))
        self.assertEqual({pod for pod, _ in lines}, {"ddp-master-0", "ddp-worker-0"})
        c.delete_job("ddp")
        with self.assertRaisesRegex(RuntimeError, "Failed to get PyTorchJob: default/ddp"):
            c.get_job("ddp")

    def test_failed_job_names_the_replica_its_exit_code_and_last_lines(self):
        # A dict manifest (snake_case keys work too); restartPolicy Never, so the first failure
        # fails the job (function jobs get the operator's default OnFailure and would restart).
        c = self.client
        fail = ("import os, sys, time\n"
                "if os.environ['RANK'] == '1':\n"
                "    print('about to fail', flush=True)\n"
                "    print('fatal: out of cheese', flush=True)\n"
                "    sys.exit(3)\n"
                "time.sleep(60)\n")
        template = {"spec": {"containers": [{"name": "pytorch", "image": "local",
                                             "command": ["python", "-u", "-c", fail]}]}}
        c.create_job(job={
            "api_version": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "bad"},
            "spec": {"pytorch_replica_specs": {
                "Master": {"replicas": 1, "restart_policy": "Never", "template": template},
                "Worker": {"replicas": 1, "restart_policy": "Never", "template": template}}}})
        with self.assertRaises(RuntimeError) as caught:
            c.wait_for_job_conditions("bad", wait_timeout=120, polling_interval=1)
        text = str(caught.exception)
        self.assertIn("PyTorchJob default/bad is Failed", text)
        self.assertIn("bad-worker-0 (exit code 3)", text)
        self.assertIn("fatal: out of cheese", text)
        self.assertTrue(c.is_job_failed("bad"))
        job = c.wait_for_job_conditions("bad", expected_conditions={"Failed"},
                                        polling_interval=1)
        self.assertTrue(c.is_job_failed(job=job))
        self.assertEqual(c.get_job_pods("bad", replica_type="worker")[0].status.phase, "Failed")
        why = c.get_job_why("bad")
        self.assertIsNone(why["reason"])  # finished: nothing is waiting any more
        self.assertTrue(why["first_failure"].startswith(
            "First failure: bad-worker-0 (Worker 0) exited with code 3, at "), why)
        self.assertIn("Last output:\nabout to fail\nfatal: out of cheese", why["first_failure"])

    def test_a_timeout_says_which_replica_keeps_failing(self):
        # Under the default OnFailure failing replicas restart in place forever (as upstream);
        # the TimeoutError says why instead of timing out in silence.
        c = self.client
        c.create_job(name="acc-boom", train_func=train_funcs.boom, num_workers=2)
        deadline = time.time() + 90
        while c.get_job_why("acc-boom")["reason"] != "CrashLoopBackOff":
            self.assertLess(time.time(), deadline, "the worker never crashed")
            time.sleep(1)
        with self.assertRaises(TimeoutError) as caught:
            c.wait_for_job_conditions("acc-boom", wait_timeout=3, polling_interval=1)
        text = str(caught.exception)
        self.assertIn("Timeout waiting for PyTorchJob: default/acc-boom to reach expected "
                      "conditions: {'Succeeded'}. It is Running.\nCrashLoopBackOff (since ", text)
        # (The count is refreshed at most every 10 s: the second replica may not be in yet.)
        # The other replica may be at its torchrun exit barrier, its rank failed: "not running".
        self.assertRegex(text, r"[12]/2 replicas keep crashing and restarting "
                               r"\((Master 0|Worker 0|Master 0; Worker 0)\)"
                               r"( \(1 more not running\))?\. "
                               r"Last exit: acc-boom-(master|worker)-0 exited with code 1 at ")
        # The rank's own last line and torchrun's verdict, not torchrun's 2 KiB report.
        self.assertRegex(text, r"fatal: accelerator not found on rank [01]\n.*\n"
                               r"torchrun: rank [01] \(local_rank: 0\) exited with code 7")
        why = c.get_job_why("acc-boom")
        self.assertEqual(why["reason"], "CrashLoopBackOff")
        # nprocPerNode auto on a machine shared by both replicas: one process each.
        logs, _ = c.get_job_logs("acc-boom", is_master=True)
        self.assertIn("rank 0 of WORLD_SIZE 2\n", logs["acc-boom-master-0"])
        pods = c.get_job_pods("acc-boom")
        self.assertEqual(len(pods), 2)

    def test_a_rank_that_fails_under_torchrun_is_named_while_its_replica_waits(self):
        # torchrun's agent waits at its exit barrier (300 s) once its worker failed: the
        # replica runs on, but the job says which rank failed, with what and its last output.
        c = self.client
        go = os.path.join(self.state, "go")
        c.create_job(name="rank-dies", train_func=train_funcs.rank_one_exits,
                     parameters={"go": go}, num_workers=2)
        with self.assertRaises(TimeoutError) as caught:
            c.wait_for_job_conditions("rank-dies", wait_timeout=25, polling_interval=1)
        text = str(caught.exception)
        self.assertIn("It is Running.\nRankFailed (since ", text)
        self.assertIn("rank-dies-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7 at ",
                      text)
        self.assertIn("Last output:\nrank 1: loss is nan, giving up", text)
        rows = json.loads(self._trainctl("describe", "rank-dies", "-o", "json"))["replicas"]
        worker = [r for r in rows if r["name"] == "rank-dies-worker-0"][0]
        self.assertEqual(worker["state"], "Running", "torchrun holds it at the exit barrier")
        self.assertEqual(worker["processFailure"]["rank"], 1)
        self.assertEqual(worker["processFailure"]["exitCode"], 7)
        # The Master decides success, as upstream; the message says what failed meanwhile.
        open(go, "w").close()
        job = c.wait_for_job_conditions("rank-dies", polling_interval=1, wait_timeout=120)
        done = [x for x in job.status.conditions if x.type == "Succeeded"][0]
        self.assertIn("While it ran, a process failed: rank-dies-worker-0 (Worker 0): rank 1 "
                      "(local_rank 0) exited with code 7 at ", done.message)

    def test_timeout_then_delete_while_running(self):
        c = self.client
        c.create_job(name="slow", train_func=train_funcs.sleeper, parameters={"seconds": 120})
        with self.assertRaises(TimeoutError):
            c.wait_for_job_conditions("slow", wait_timeout=2, polling_interval=1)
        c.wait_for_job_conditions("slow", expected_conditions={"Running"}, polling_interval=1,
                                  wait_timeout=60)
        pid = json.loads(self._trainctl("describe", "slow", "-o", "json"))["replicas"][0]["pid"]
        c.delete_job("slow")
        self.assertFalse(_alive(pid), "the replica outlived delete_job")
        self.assertEqual(c.list_jobs(), [])

    def test_a_new_python_process_finds_the_job(self):
        script = (
            "import sys; sys.path.insert(0, %r)\n"
            "from trainctl import TrainingClient\n"
            "import train_funcs\n"
            "c = TrainingClient(backend='local', state_dir=%r)\n"
            "c.create_job(name='survivor', train_func=train_funcs.sleeper,"
            " parameters={'seconds': 3})\n" % (HERE, self.state))
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # The creating process is gone (a kernel restart); a new client finds the job.
        fresh = TrainingClient(backend="local", state_dir=self.state)
        self.assertEqual([j.metadata.name for j in fresh.list_jobs()], ["survivor"])
        job = fresh.wait_for_job_conditions("survivor", polling_interval=1, wait_timeout=60)
        self.assertTrue(fresh.is_job_succeeded(job=job))
        self.assertIn("sleeping", fresh.get_job_logs("survivor")[0]["survivor-master-0"])

    def test_killed_runner_is_failed_not_running(self):
        c = self.client
        c.create_job(name="orphan", train_func=train_funcs.sleeper, parameters={"seconds": 60})
        doc = json.loads(self._trainctl("describe", "orphan", "-o", "json"))
        replica_pids = []
        deadline = time.monotonic() + 30
        while not replica_pids and time.monotonic() < deadline:
            doc = json.loads(self._trainctl("describe", "orphan", "-o", "json"))
            replica_pids = [r["pid"] for r in doc["replicas"] if r.get("pid")]
            time.sleep(0.1)
        os.kill(doc["runner"]["pid"], signal.SIGKILL)
        try:
            with self.assertRaisesRegex(RuntimeError, "RunnerLost.*is gone"):
                c.wait_for_job_conditions("orphan", polling_interval=1, wait_timeout=30)
            self.assertTrue(c.is_job_failed("orphan"))
        finally:
            for pid in replica_pids:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)

    def test_xgboost_manifest_path(self):
        c = TrainingClient(backend="local", state_dir=self.state, job_kind="XGBoostJob")
        c.create_job(job=os.path.join(REPO, "examples", "xgboost", "xgboostjob.yaml"))
        job = c.wait_for_job_conditions("xgboost-dist-digits", wait_timeout=180,
                                        polling_interval=1)
        self.assertEqual(job.status.replica_statuses["Master"].succeeded, 1)
        logs, _ = c.get_job_logs("xgboost-dist-digits", is_master=False)
        self.assertEqual(len(results("".join(logs.values()))), 3)

    def test_tensorflow_function_job(self):
        c = TrainingClient(backend="local", state_dir=self.state, job_kind="TFJob")
        # Two workers: TF_CONFIG names each one's task (one worker alone gets none, as
        # upstream's operator does for a job that is not distributed).
        c.create_job(name="tf", train_func=train_funcs.tf_digits, parameters={"epochs": 5},
                     num_workers=2)
        job = c.wait_for_job_conditions("tf", wait_timeout=300, polling_interval=1)
        self.assertEqual(job.status.replica_statuses["Worker"].succeeded, 2)
        logs, _ = c.get_job_logs("tf", is_master=False)
        found = results("".join(logs.values()))
        self.assertEqual(sorted(r["task"]["index"] for r in found), [0, 1])
        self.assertTrue(all(r["accuracy"] > 0.5 for r in found), found)

    def _trainctl(self, *args):
        return subprocess.run([self.client._backend.trainctl, "--state-dir", self.state, *args],
                              capture_output=True, text=True, check=True).stdout


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone between the open and the read
        return False


if __name__ == "__main__":
    unittest.main()
