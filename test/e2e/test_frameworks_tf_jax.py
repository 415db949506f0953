"""The TensorFlow and JAX examples train for real through `trainctl run`: TF_CONFIG and the
JAXJob env (COORDINATOR_ADDRESS/PORT, NUM_PROCESSES, PROCESS_ID) as trainctl injects them are
accepted by the real frameworks, accuracy on held-out data is above a threshold, and the
synchronous jobs end with identical parameters on every rank.

Needs a python3 on PATH that can import tensorflow / jax: the project's .venv, into which
`make test` installs hack/requirements/frameworks.txt. A missing framework is a failure, not a
skip."""

import os
import unittest

from harness import REPO, TrainctlTestCase, condition_types, results


class FrameworksTest(TrainctlTestCase):

    def run_example(self, relative_path):
        manifest = os.path.join(REPO, relative_path)
        job, proc = self.run_json(manifest, expect_code=0, timeout=600)
        self.assertEqual(condition_types(job)[-1], "Succeeded", self.explain(proc))
        return job, proc, results(proc.stderr)

    def assert_synchronous(self, found, ranks, proc, threshold=0.85):
        self.assertEqual(sorted(r["rank"] for r in found), list(range(ranks)), self.explain(proc))
        for r in found:
            self.assertEqual(r["world_size"], ranks, r)
            self.assertGreater(r["test_accuracy"], threshold, r)
        self.assertEqual(len({r["params_sha256"] for r in found}), 1, found)

    def test_jax_two_workers(self):
        job, proc, found = self.run_example("examples/jax/jaxjob.yaml")
        self.assert_synchronous(found, 2, proc)
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"].get("succeeded"), 2)
        # Both processes joined one jax.distributed world of 2 devices.
        self.assertEqual(proc.stderr.count("joined num_processes=2"), 2, self.explain(proc))
        self.assertEqual(proc.stderr.count("devices=2 local=1"), 2, self.explain(proc))
        logs = os.path.join(self.state, "default", "jaxjobs", "jax-dist-digits", "logs")
        with open(os.path.join(logs, "jax-dist-digits-worker-1.log")) as f:
            self.assertEqual([r["rank"] for r in results(f.read())], [1])

    def test_tensorflow_multi_worker_mirrored(self):
        job, proc, found = self.run_example("examples/tensorflow/tfjob.yaml")
        self.assert_synchronous(found, 2, proc)
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"].get("succeeded"), 2)
        self.assertEqual(proc.stderr.count("joined num_replicas_in_sync=2"), 2,
                         self.explain(proc))

    def test_tensorflow_parameter_server(self):
        job, proc, found = self.run_example("examples/tensorflow/tfjob-ps.yaml")
        # Asynchronous training: one copy of the weights (on the PS), one RESULT (the Chief's).
        self.assertEqual(len(found), 1, self.explain(proc))
        self.assertEqual(found[0]["role"], "chief")
        self.assertEqual(found[0]["world_size"], 3)  # chief + 2 workers
        self.assertGreater(found[0]["test_accuracy"], 0.85, found[0])
        statuses = job["status"]["replicaStatuses"]
        self.assertEqual(statuses["Chief"].get("succeeded"), 1)
        # PS and workers served the chief, then exited by themselves once it was gone.
        self.assertEqual(proc.stderr.count("chief is up at"), 3, self.explain(proc))
        self.assertEqual(proc.stderr.count("chief is gone; exiting"), 3, self.explain(proc))


if __name__ == "__main__":
    unittest.main()
