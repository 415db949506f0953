"""Metrics from a job's own output, through the real entry points: `trainctl run` records
the metric lines rank 0 prints (Katib's name=value, Keras' name: value, a Hugging Face dict,
a progress bar's \\r redraws), `trainctl metrics` shows them as series, and the annotations
choose the replica or turn it off."""

import json
import unittest

from harness import TrainctlTestCase

PRINTS = r"""
import sys, time
for step in range(1, 4):
    print(f"step={step} loss={1.0 / step:.4f} lr=1e-4", flush=True)
print(" - loss: 0.2000 - accuracy: 0.9100", flush=True)
print({'loss': 0.1, 'learning_rate': 5e-05, 'epoch': 7.0}, flush=True)
sys.stdout.write("10%|#  | 1/10 [00:01<00:09, loss=0.09]\r20%|## | 2/10 [00:02<00:08, loss=0.08]\n")
print("eta 0:00:12 at http://localhost:8080 loss=nan", flush=True)
"""

# What rank 0 of a Hugging Face job under torchrun prints besides its metrics (the lines of a
# real run): glog prefixes, the trainer's and peft's counts, tqdm's bar with the JSON line
# after it on the same line.
PREFIXES = r"""
import sys
print("W20261129 05:33:14.015846 16122 reducer.cpp:1298] Warning: find_unused_parameters=True "
      "was specified in DDP constructor", flush=True)
print("I1129 05:01:02.123456 1234 reducer.cpp:1298] Reducer buckets have been rebuilt in this "
      "iteration.", flush=True)
print("trainer: 2 process(es), device cpu, process group gloo, output /tmp/out", flush=True)
print("trainable params: 4,096 || all params: 122,496 || trainable%: 3.3437", flush=True)
print("  exitcode  : 7 (pid: 18643)", flush=True)
for step in (1, 2):
    sys.stderr.write(f"\r  {step * 3}%|▎ | {step}/30 [00:00<00:05, 4.96it/s]")
    sys.stderr.flush()
    print('{"step": %d, "loss": %s, "learning_rate": 5e-05}' % (step, 4.18 / step), flush=True)
"""

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  annotations: {{{annotations}}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [python3, -c, {prints}]
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [python3, -c, "print('rank', 'worker', 'loss=42')"]
"""


def job(name, annotations=""):
    return JOB.format(name=name, annotations=annotations, prints=json.dumps(PRINTS))


class MetricsTest(TrainctlTestCase):

    def test_rank_zero_output_becomes_series(self):
        ran = self.trainctl("run", self.write("m.yaml", job("curve")), "-q")
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        shown = self.trainctl("metrics", "curve", "-o", "json")
        self.assertEqual(shown.returncode, 0, self.explain(shown))
        doc = json.loads(shown.stdout)
        self.assertEqual(doc["replica"], "master-0")
        loss = doc["series"]["loss"]
        # Three Katib lines, Keras, the dict (its epoch is the step), two \r redraws, and a
        # nan that is recorded but not plotted; the workers' loss=42 is not rank 0's.
        self.assertEqual(loss["value"], [1.0, 0.5, 0.3333, 0.2, 0.1, 0.09, 0.08, None])
        self.assertEqual(loss["step"][:5], [1.0, 2.0, 3.0, 4.0, 7.0])
        self.assertEqual(doc["series"]["accuracy"]["value"], [0.91])
        self.assertEqual(doc["series"]["learning_rate"]["value"], [5e-05])
        self.assertNotIn("epoch", doc["series"])
        self.assertNotIn("eta", doc["series"])
        table = self.trainctl("metrics", "pytorchjob/curve")
        self.assertEqual(table.returncode, 0, self.explain(table))
        self.assertIn("From master-0 (8 metric lines)", table.stdout)
        self.assertRegex(table.stdout, r"lr\s+0\.0001\s+3\s+3")

    def test_log_prefixes_are_not_metrics_and_json_after_a_bar_is(self):
        ran = self.trainctl("run", self.write("p.yaml", JOB.format(
            name="prefixes", annotations="", prints=json.dumps(PREFIXES))), "-q")
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        doc = json.loads(self.trainctl("metrics", "prefixes", "-o", "json").stdout)
        self.assertEqual(sorted(doc["series"]), ["learning_rate", "loss"])
        self.assertEqual(doc["series"]["loss"]["step"], [1.0, 2.0])
        self.assertEqual(doc["series"]["loss"]["value"], [4.18, 2.09])
        self.assertEqual(doc["records"], 2)

    def test_annotations_choose_the_replica_or_turn_it_off(self):
        ran = self.trainctl("run", self.write(
            "w.yaml", job("w1", '"trainctl.dev/metrics-replica": worker-1')), "-q")
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        doc = json.loads(self.trainctl("metrics", "w1", "-o", "json").stdout)
        self.assertEqual((doc["replica"], doc["series"]["loss"]["value"]), ("worker-1", [42.0]))
        # Another rank's curve, read from its log on demand.
        other = json.loads(self.trainctl("metrics", "w1", "-r", "worker-0", "-o", "json").stdout)
        self.assertEqual((other["replica"], other["series"]["loss"]["value"]), ("worker-0", [42.0]))
        none = self.trainctl("metrics", "w1", "-r", "worker-7")
        self.assertEqual(none.returncode, 1)
        self.assertIn('no log for replica "worker-7"', none.stderr)

        ran = self.trainctl("run", self.write(
            "off.yaml", job("quiet", '"trainctl.dev/metrics": "off"')), "-q")
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        off = self.trainctl("metrics", "quiet")
        self.assertEqual(off.returncode, 1)
        self.assertIn("metrics are off for quiet", off.stderr)

        bad = self.trainctl("run", self.write(
            "bad.yaml", job("bad", '"trainctl.dev/metrics-replica": worker-9')), "-q")
        self.assertEqual(bad.returncode, 2, self.explain(bad))
        self.assertIn("bad.yaml", bad.stderr)
        self.assertIn("metadata.annotations[trainctl.dev/metrics-replica]", bad.stderr)
        self.assertIn("worker-0…1", bad.stderr)

    def test_missing_job_and_bad_output_flag(self):
        missing = self.trainctl("metrics", "nope")
        self.assertEqual(missing.returncode, 1)
        self.assertIn('"nope" not found', missing.stderr)
        self.assertEqual(self.trainctl("metrics", "nope", "-o", "yaml").returncode, 2)


if __name__ == "__main__":
    unittest.main()
