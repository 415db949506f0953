"""get_job_metrics reads through ``trainctl metrics -o json`` on both backends and turns its
series into one dict per step; it never reads a log itself. A stand-in binary records how it was
called (the real reader is tested in src/metrics/metrics_test.cc and e2e/test_metrics_local.py)."""

import json
import os
import stat
import tempfile
import unittest
from unittest import mock

from trainctl import TrainingClient
from trainctl.api.training_client import records_by_step

SERIES = {
    "replica": "master-0", "records": 5, "truncated": False,
    "series": {
        "loss": {"step": [2.0, 1.0, 2.0, 3.0], "time": [0, 0, 0, 0],
                 "value": [3.0, 4.0, 2.5, None]},
        "epoch": {"step": [1.0, 2.0, 3.0], "time": [0, 0, 0], "value": [0.1, 0.2, 0.3]},
        "train_runtime": {"step": [3.0], "time": [0], "value": [1.5]},
        "learning_rate": {"step": [0.5], "time": [0], "value": [5e-05]},
    },
}


def fake_trainctl(folder, document, code=0, message=""):
    """A stand-in trainctl that writes its arguments to args.json and prints `document`."""
    path = os.path.join(folder, "trainctl")
    with open(path, "w") as f:
        f.write("#!/usr/bin/env python3\nimport json, sys\n"
                f"json.dump(sys.argv[1:], open({os.path.join(folder, 'args.json')!r}, 'w'))\n"
                f"sys.stdout.write({json.dumps(document)!r})\n"
                f"sys.stderr.write({message!r})\nsys.exit({code})\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def called_with(folder):
    with open(os.path.join(folder, "args.json")) as f:
        return json.load(f)


class RecordsByStepTest(unittest.TestCase):
    def test_one_dict_per_step_in_step_order_last_value_wins(self):
        self.assertEqual(records_by_step(SERIES), [
            {"step": 0.5, "learning_rate": 5e-05},
            {"step": 1, "loss": 4.0, "epoch": 0.1},
            {"step": 2, "loss": 2.5, "epoch": 0.2},
            {"step": 3, "loss": None, "epoch": 0.3, "train_runtime": 1.5},
        ])
        self.assertIsInstance(records_by_step(SERIES)[1]["step"], int)
        self.assertEqual(records_by_step({"replica": "m", "series": {}}), [])


class GetJobMetricsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.folder = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_local_backend_asks_the_cli_and_reads_no_log(self):
        with mock.patch.dict(os.environ, {"TRAINCTL_BIN": fake_trainctl(self.folder, SERIES)}):
            client = TrainingClient(backend="local", state_dir=self.folder, namespace="ns")
        with mock.patch.object(client._backend, "read_log",
                               side_effect=AssertionError("read a log")):
            got = client.get_job_metrics("tune", job_kind="TFJob")
        self.assertEqual(got, records_by_step(SERIES))
        self.assertEqual(called_with(self.folder)[-7:],
                         ["-n", "ns", "metrics", "tfjob", "tune", "-o", "json"])

    def test_local_backend_failure_is_a_runtime_error_with_the_cli_message(self):
        binary = fake_trainctl(self.folder, "", code=1,
                               message="error: metrics are off for tune (annotation x)\n")
        with mock.patch.dict(os.environ, {"TRAINCTL_BIN": binary}):
            client = TrainingClient(backend="local", state_dir=self.folder)
        with self.assertRaisesRegex(RuntimeError, "metrics are off for tune"):
            client.get_job_metrics("tune")

    def test_kubernetes_backend_runs_the_binary_with_the_clients_kubeconfig(self):
        kb = __import__("pytest").importorskip("trainctl.backends.kubernetes")
        backend = object.__new__(kb.KubernetesBackend)
        backend._config_file, backend._context, backend._client_configuration = (
            "/clusters/kubeconfig", None, None)
        with mock.patch.dict(os.environ, {"TRAINCTL_BIN": fake_trainctl(self.folder, SERIES)}):
            self.assertEqual(backend.metrics("tune", "team-a", "PyTorchJob"), SERIES)
        self.assertEqual(called_with(self.folder),
                         ["--backend", "kubernetes", "--kubeconfig", "/clusters/kubeconfig",
                          "-n", "team-a", "metrics", "pytorchjob", "tune", "-o", "json"])

        binary = fake_trainctl(self.folder, "", code=1, message='error: "tune" not found\n')
        with mock.patch.dict(os.environ, {"TRAINCTL_BIN": binary}):
            with self.assertRaisesRegex(RuntimeError, '^"tune" not found$'):
                backend.metrics("tune", "team-a", "PyTorchJob")

        # What the binary cannot be given is refused, not silently ignored.
        backend._client_configuration = object()
        with self.assertRaisesRegex(ValueError, "client_configuration"):
            backend.metrics("tune", "team-a", "PyTorchJob")
        backend._client_configuration = None
        backend._context = "other"
        backend._config = mock.Mock()
        backend._config.list_kube_config_contexts.return_value = ([], {"name": "current"})
        with self.assertRaisesRegex(ValueError, "current context, not 'other'"):
            backend.metrics("tune", "team-a", "PyTorchJob")


if __name__ == "__main__":
    unittest.main()
