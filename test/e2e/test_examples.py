"""The shipped examples train for real through `trainctl run`: accuracy on held-out data
above a threshold and identical parameters (boosters) on every rank."""

import os
import unittest

from harness import REPO, TrainctlTestCase, condition_types, results


class ExamplesTest(TrainctlTestCase):

    def run_example(self, relative_path, expected_ranks):
        manifest = os.path.join(REPO, relative_path)
        job, proc = self.run_json(manifest, expect_code=0, timeout=600)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        found = results(proc.stderr)
        self.assertEqual(sorted(r["rank"] for r in found), list(range(expected_ranks)),
                         self.explain(proc))
        for r in found:
            self.assertEqual(r["world_size"], expected_ranks)
        return job, found

    def test_pytorch_ddp_master_and_worker(self):
        job, found = self.run_example("examples/pytorch/pytorchjob.yaml", 2)
        for r in found:
            self.assertGreater(r["test_accuracy"], 0.85, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)
        statuses = job["status"]["replicaStatuses"]
        self.assertEqual(statuses["Master"].get("succeeded"), 1)
        self.assertEqual(statuses["Worker"].get("succeeded"), 1)
        # Per-replica log files hold each replica's own output.
        logs = os.path.join(self.state, "default", "pytorchjobs", "pytorch-ddp-digits", "logs")
        with open(os.path.join(logs, "pytorch-ddp-digits-worker-0.log")) as f:
            self.assertEqual([r["rank"] for r in results(f.read())], [1])

    def test_pytorch_torchrun_two_processes_per_node(self):
        _, found = self.run_example("examples/pytorch/pytorchjob-torchrun.yaml", 4)
        for r in found:
            self.assertGreater(r["test_accuracy"], 0.85, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)

    def test_xgboost_master_and_two_workers(self):
        _, found = self.run_example("examples/xgboost/xgboostjob.yaml", 3)
        for r in found:
            self.assertGreater(r["test_accuracy"], 0.9, r)
        self.assertEqual(len({r["booster_sha256"] for r in found}), 1, found)

    def test_two_jobs_at_once_get_their_own_ports(self):
        manifest = os.path.join(REPO, "examples/pytorch/pytorchjob.yaml")
        copy = self.write("copy.yaml", open(manifest).read().replace(
            "name: pytorch-ddp-digits", "name: pytorch-ddp-digits-2"))
        # The copy lives in the work dir; give it the script it names.
        os.symlink(os.path.join(REPO, "examples/pytorch/train_ddp.py"),
                   os.path.join(self.work, "train_ddp.py"))
        first = self.start("run", manifest, "-q")
        second = self.start("run", copy, "-q")
        try:
            out1, err1 = first.communicate(timeout=600)
            out2, err2 = second.communicate(timeout=600)
        finally:
            self.stop(first)
            self.stop(second)
        self.assertEqual(first.returncode, 0, err1)
        self.assertEqual(second.returncode, 0, err2)


if __name__ == "__main__":
    unittest.main()
