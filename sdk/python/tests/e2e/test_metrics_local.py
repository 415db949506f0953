"""get_job_metrics end to end on the local backend: jobs run under torchrun by the real runner
print their metrics as trainers do, and the SDK reads them through trainctl's reader
(``trainctl metrics -o json``): a JSON line after tqdm's progress bar on the same log line (as
Hugging Face's Trainer with its default bar and train()'s trainer print it), and hostile lines
(a 1 MB line, JSON nested 10,000 deep, numbers too large for a double) that give bounded
records."""

import os
import re
import shutil
import tempfile
import time
import unittest

from trainctl import TrainingClient


def tqdm_then_json(params):
    # tqdm draws on stderr with "\r" and no newline; the JSON line goes to stdout right after,
    # so it lands on the bar's log line, as a Trainer callback's print does.
    import json

    from tqdm import tqdm
    steps = params["steps"]
    bar = tqdm(total=steps, mininterval=0)
    for step in range(1, steps + 1):
        bar.update(1)
        print(json.dumps({"step": step, "loss": 4.0 / step, "epoch": step / steps}), flush=True)
    bar.close()


def hostile_lines():
    print("step=1 loss=0.5 big=" + "9" * 400, flush=True)
    print("step=2 loss=1e999", flush=True)
    print('{"step": 3, "loss": 0.25, "deep": ' + "[" * 10000 + "]" * 10000 + "}", flush=True)
    print("step=4 loss=0.125 " + "x" * (1 << 20), flush=True)
    print("step=5 loss=0.0625", flush=True)


class MetricsLocalTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="trainctl-sdk-metrics-")
        self.client = TrainingClient(backend="local", state_dir=self.state)

    def tearDown(self):
        for job in self.client.list_jobs():
            try:
                self.client.delete_job(job.metadata.name)
            except RuntimeError:
                pass
        shutil.rmtree(self.state, ignore_errors=True)

    def run_job(self, name, func, parameters=None):
        c = self.client
        c.create_job(name=name, train_func=func, parameters=parameters, num_workers=1,
                     num_procs_per_worker=1)
        job = c.wait_for_job_conditions(name, wait_timeout=120, polling_interval=1)
        self.assertTrue(c.is_job_succeeded(job=job), job.status.conditions)
        return c.get_job_logs(name)[0][f"{name}-master-0"]

    def test_a_json_line_after_tqdms_bar(self):
        log = self.run_job("bar", tqdm_then_json, {"steps": 5})
        # The case as the Trainer leaves it: every JSON line follows a bar on its log line, so
        # no line (nor "\r" piece) starts with "{".
        path = self.client._backend.pods("bar", "default", "PyTorchJob")[0]["_logFile"]
        with open(path, "rb") as f:
            raw = f.read().decode()
        self.assertRegex(raw, r'\r *20%\|[^\n\r]*\| 1/5 \[[^\n\r]*\] ?\{"step": 1, ')
        self.assertFalse([l for l in log.splitlines() if l.strip().startswith("{")], log)
        self.assertEqual(self.client.get_job_metrics("bar"), [
            {"step": 1, "loss": 4.0, "epoch": 0.2},
            {"step": 2, "loss": 2.0, "epoch": 0.4},
            {"step": 3, "loss": 4.0 / 3, "epoch": 0.6},
            {"step": 4, "loss": 1.0, "epoch": 0.8},
            {"step": 5, "loss": 0.8, "epoch": 1.0},
        ])

    def test_hostile_lines_give_bounded_records(self):
        log = self.run_job("hostile", hostile_lines)
        self.assertGreater(len(log), 1 << 20)
        self.assertTrue(re.search(r"^step=4 loss=0\.125 x{1048576}$", log, re.M))
        started = time.monotonic()
        metrics = self.client.get_job_metrics("hostile")
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual(metrics, [
            {"step": 1, "loss": 0.5, "big": None},  # 400 digits: too large, not finite
            {"step": 2, "loss": None},
            {"step": 3, "loss": 0.25},  # the nesting skipped, the line read up to 4 KiB
            {"step": 4, "loss": 0.125},
            {"step": 5, "loss": 0.0625},
        ])


if __name__ == "__main__":
    unittest.main()
