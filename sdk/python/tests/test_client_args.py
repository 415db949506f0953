"""TrainingClient argument handling: every bad argument raises upstream's exception type with a
message naming it, before anything starts (local backend with a private state folder)."""

import json
import os
import tempfile
import unittest
from unittest import mock

from trainctl import TrainingClient, constants, models
from trainctl.backends import choose


def f(params):
    print(params)


class ArgsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.client = TrainingClient(backend="local", state_dir=self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_bad_kind_and_backend(self):
        with self.assertRaisesRegex(ValueError, "Job kind must be one of"):
            TrainingClient(backend="local", job_kind="FooJob")
        with self.assertRaisesRegex(ValueError, "backend must be one of"):
            TrainingClient(backend="docker")
        with self.assertRaisesRegex(ValueError, "Job kind must be one of"):
            self.client.get_job("x", job_kind="FooJob")
        with self.assertRaisesRegex(ValueError, "Job kind must be one of"):
            self.client.delete_job("x", job_kind="FooJob")

    def test_create_job_bad_arguments(self):
        c = self.client
        cases = [
            (dict(name="a", train_func=f, num_workers=0), "At least one Worker"),
            (dict(train_func=f), "Job name must be set"),
            (dict(name="a", train_func=f, job_kind="TFJob", num_procs_per_worker=2),
             "num_procs_per_worker"),
            (dict(name="a", train_func=f, num_ps_replicas=1), "num_chief_replicas and num_ps"),
            (dict(name="a", train_func=f, job_kind="PaddleJob"), "can't be created using"),
            (dict(name="a", train_func=f, volumes=[{}], volume_mounts=[]), "same length"),
            (dict(name="a", train_func=f, packages_to_install=["no-such-dist-xyz"]),
             "packages_to_install.*no-such-dist-xyz"),
            (dict(name="a", train_func=f, num_procs_per_worker=0), "num_procs_per_worker"),
            (dict(), "needs one of job, train_func or base_image"),
            (dict(job={"kind": "Nope"}), "job: kind must be one of"),
            (dict(job=models.KubeflowOrgV1TFJob(), train_func=f),
             "Argument `train_func` must be None"),
            (dict(job=object()), "Job must be one of these types"),
            (dict(job="/no/such/file.yaml"), "job: cannot read /no/such/file.yaml"),
        ]
        for kwargs, message in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(ValueError, message):
                    c.create_job(**kwargs)
        self.assertEqual(c.list_jobs(), [])  # nothing was started

    def test_image_jobs_need_a_container_runtime_and_train_checks_its_parameters(self):
        with self.assertRaisesRegex(NotImplementedError, "entrypoint.*runtime='podman'"):
            self.client.create_job(name="img", base_image="busybox")
        with self.assertRaisesRegex(ValueError, "One of the required parameters is None"):
            self.client.train(name="llm")

    def test_wait_arguments(self):
        with self.assertRaisesRegex(ValueError, "must be subset"):
            self.client.wait_for_job_conditions("x", expected_conditions={"succeeded"})
        with self.assertRaises(TimeoutError):  # upstream: zero polls, no GET
            self.client.wait_for_job_conditions("never", wait_timeout=0)

    def test_missing_job_is_runtime_error(self):
        with self.assertRaisesRegex(RuntimeError, "Failed to get PyTorchJob: default/ghost"):
            self.client.get_job("ghost")
        with self.assertRaisesRegex(RuntimeError, "Failed to delete PyTorchJob: default/ghost"):
            self.client.delete_job("ghost")
        with self.assertRaisesRegex(ValueError, "replica_type must be one of"):
            self.client.get_job_pods("ghost", replica_type="Master")

    def test_a_rejected_manifest_surfaces_the_runner_message(self):
        job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
               "metadata": {"name": "Bad_Name"},
               "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {
                   "spec": {"containers": [{"name": "pytorch", "image": "x",
                                            "command": ["true"]}]}}}}}}
        with self.assertRaisesRegex(RuntimeError, r"Failed to create PyTorchJob: "
                                    r"default/Bad_Name\. Error: .*metadata\.name"):
            self.client.create_job(job=job)

    def test_backend_rule(self):
        with tempfile.TemporaryDirectory() as home:
            env = {"HOME": home}
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(choose(), "local")
                os.makedirs(os.path.join(home, ".kube"))
                open(os.path.join(home, ".kube", "config"), "w").close()
                self.assertEqual(choose(), "kubernetes")
                os.environ["TRAINCTL_BACKEND"] = "local"
                self.assertEqual(choose(), "local")
                os.environ["TRAINCTL_BACKEND"] = "k8s"
                with self.assertRaisesRegex(ValueError, r"\$TRAINCTL_BACKEND"):
                    choose()
        self.assertEqual(constants.DEFAULT_TIMEOUT, 120)


if __name__ == "__main__":
    unittest.main()


class GetJobWhyTest(unittest.TestCase):
    """get_job_why reads the conditions the same way for both backends (no I/O with job=)."""

    def test_reason_and_first_failure_from_conditions(self):
        from trainctl import TrainingClient, models
        job = models.deserialize({
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "default"},
            "spec": {"pytorchReplicaSpecs": {}},
            "status": {"conditions": [
                {"type": "ReplicasReady", "status": "False", "reason": "Unschedulable",
                 "message": "1/2 replicas are unschedulable (Worker 0): 0/4 nodes are available",
                 "lastTransitionTime": "2026-11-23T10:00:00Z"},
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"},
                {"type": "Restarting", "status": "True", "reason": "PyTorchJobRestarting",
                 "message": "job pt is restarting.\nFirst failure: pt-worker-1 (Worker 1) "
                            "exited with code 1."}]}}, models.KIND_MODELS["PyTorchJob"])
        client = TrainingClient(backend="local", state_dir="/nonexistent-trainctl-state")
        why = client.get_job_why(job=job)
        self.assertEqual(why["reason"], "Unschedulable")
        self.assertIn("0/4 nodes are available", why["message"])
        self.assertEqual(why["first_failure"], "First failure: pt-worker-1 (Worker 1) exited with code 1.")
        from trainctl.backends.kubernetes import first_failed_name
        self.assertEqual(first_failed_name(job.status.conditions), "pt-worker-1")
        self.assertIsNone(first_failed_name([]))
        self.assertIsNotNone(why["since"])


class GetJobRestartsTest(unittest.TestCase):
    """get_job_restarts reads the annotations and runPolicy the same way for both backends."""

    def job(self, annotations, run_policy):
        from trainctl import models
        return models.deserialize({
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "default", "annotations": annotations},
            "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": {}}}, models.KIND_MODELS["PyTorchJob"])

    def test_gang_attempt_and_restarts_left(self):
        from trainctl import TrainingClient
        client = TrainingClient(backend="local", state_dir="/nonexistent-trainctl-state")
        gang = self.job({"trainctl.dev/restart-scope": "Gang", "trainctl.dev/restart-attempt": "2"},
                        {"backoffLimit": 3})
        self.assertEqual(client.get_job_restarts(job=gang),
                         {"scope": "Gang", "attempt": 2, "backoff_limit": 3, "restarts_left": 1})
        fresh = self.job({"trainctl.dev/restart-scope": "Gang"}, {})
        self.assertEqual(client.get_job_restarts(job=fresh),
                         {"scope": "Gang", "attempt": 0, "backoff_limit": None, "restarts_left": None})
        replica = self.job({}, {"backoffLimit": 3})
        self.assertEqual(client.get_job_restarts(job=replica)["scope"], "Replica")
        self.assertIsNone(client.get_job_restarts(job=replica)["restarts_left"])

    def test_checkpoint_notice_policy_and_the_notice_given(self):
        from trainctl import TrainingClient
        client = TrainingClient(backend="local", state_dir="/nonexistent-trainctl-state")
        given = {"reason": "Suspended", "stopAt": "2026-11-27T05:00:00Z", "attempt": 0, "seconds": 30}
        job = self.job({"trainctl.dev/checkpoint-notice-seconds": "30",
                        "trainctl.dev/checkpoint-signal": "SIGUSR1",
                        "trainctl.dev/checkpoint-notice": json.dumps(given)}, {})
        self.assertEqual(client.get_job_notice(job=job),
                         {"seconds": 30, "signal": "SIGUSR1", "given": given})
        self.assertEqual(client.get_job_notice(job=self.job({}, {})),
                         {"seconds": None, "signal": None, "given": None})
        broken = self.job({"trainctl.dev/checkpoint-notice-seconds": "30",
                           "trainctl.dev/checkpoint-notice": "{"}, {})
        self.assertIsNone(client.get_job_notice(job=broken)["given"])
