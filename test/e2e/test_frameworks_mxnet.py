"""The MXJob example trains for real through `trainctl run` with Apache MXNet 1.9.1: the DMLC_*
env trainctl injects (DMLC_ROLE, DMLC_PS_ROOT_URI/PORT, DMLC_NUM_SERVER/WORKER) wires MXNet's
ps-lite Scheduler, Server and Workers into one `dist_sync` kvstore, accuracy on held-out data
is above a threshold and both Workers end with identical parameters. A Worker that fails fails
the job, and the Scheduler and Server blocked in MXNet are stopped.

Needs a python3 on PATH that can import mxnet: the project's .venv, into which `make test`
installs hack/requirements/mxnet.txt. A missing framework is a failure, not a skip."""

import os
import unittest

from harness import REPO, TrainctlTestCase, condition_types, results
from test_frameworks_mpi_paddle import processes_in

MXNET_DIR = os.path.join(REPO, "examples", "mxnet")


class MxJobTest(TrainctlTestCase):

    def copy_example(self, worker_command=None):
        """The example in the work dir (so its processes can be found by their cwd), with the
        Workers' command (the last one in the manifest) replaced if asked."""
        with open(os.path.join(MXNET_DIR, "mxjob.yaml")) as f:
            text = f.read()
        if worker_command:
            head, sep, tail = text.rpartition("command: [python3, train.py]")
            self.assertTrue(sep and "Worker:" in head and "command:" not in tail, text)
            text = head + "command: " + worker_command + tail
        os.symlink(os.path.join(MXNET_DIR, "train.py"), os.path.join(self.work, "train.py"))
        return self.write("mxjob.yaml", text)

    def test_scheduler_server_two_workers_train_the_same_model(self):
        job, proc = self.run_json(self.copy_example(), expect_code=0, timeout=300)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        found = results(proc.stderr)
        # ps-lite numbers the workers in the order they register, not by replica index.
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1], self.explain(proc))
        for r in found:
            self.assertEqual(r["world_size"], 2, r)
            self.assertEqual(r["num_servers"], 1, r)
            self.assertEqual(r["kvstore"], "dist_sync", r)
            self.assertEqual(r["mxnet"], "1.9.1", r)
            self.assertGreater(r["test_accuracy"], 0.9, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        # Every replica ended by itself with exit 0: the Scheduler and the Server leave when
        # the Workers finalise the kvstore.
        statuses = job["status"]["replicaStatuses"]
        for kind in ("Scheduler", "Server"):
            self.assertEqual(statuses[kind].get("succeeded"), 1, statuses)
        self.assertEqual(proc.stderr.count("starting ps-lite scheduler"), 1, self.explain(proc))
        self.assertEqual(proc.stderr.count("starting ps-lite server"), 1, self.explain(proc))
        self.assertEqual(proc.stderr.count("joined kvstore=dist_sync num_workers=2"), 2,
                         self.explain(proc))
        self.assertEqual(processes_in(self.work), [])

    def test_failing_worker_fails_the_job_and_leaves_nothing(self):
        # Worker 1 fails after 5 s, while the Scheduler, the Server and Worker 0 wait for it
        # inside ps-lite (C++; train.py's watchdog would end them only after 300 s): the job
        # fails at once and trainctl stops them.
        manifest = self.copy_example(
            """[sh, -c, 'if [ "$DMLC_WORKER_ID" = 1 ]; then sleep 5; """
            """echo failing on purpose; exit 1; fi; exec python3 train.py']""")
        job, proc = self.run_json(manifest, expect_code=1, timeout=120)
        self.assertEqual(condition_types(job)[-1], "Failed", self.explain(proc))
        self.assertIn("failing on purpose", proc.stderr)
        self.assertIn("starting ps-lite scheduler", proc.stderr)
        self.assertEqual(results(proc.stderr), [], self.explain(proc))
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"].get("failed"), 1,
                         job["status"])
        replicas = {r["name"]: r["state"] for r in
                    self.stored_replicas("default", "mxjobs", "mxnet-digits")}
        self.assertEqual(replicas, {"mxnet-digits-scheduler-0": "Stopped",
                                    "mxnet-digits-server-0": "Stopped",
                                    "mxnet-digits-worker-0": "Stopped",
                                    "mxnet-digits-worker-1": "Failed"})
        self.assertEqual(processes_in(self.work), [])

if __name__ == "__main__":
    unittest.main()
