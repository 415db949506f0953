"""Progress reported by the training, through the real entry points: `trainctl run` serves
Trainer v2.3's runtime status endpoint on loopback (HTTPS with a CA of the run's own, a token of
the run's own) and gives the three variables to the trainer's processes; a script reporting the
way upstream's e2e script and transformers do (urllib, ssl with the CA file, the bearer token)
lands in `describe -o json` as status.trainerStatus and in `get`'s PROGRESS and ETA; a wrong
token, another job's path and hostile bodies are refused; a TrainJob's initializer is not given
the variables, its trainer is."""

import json
import unittest

from harness import TrainctlTestCase

# The replica reports three times, then probes what the endpoint refuses, and prints the codes.
REPORTER = r"""
import json, os, ssl, sys, urllib.error, urllib.request
from datetime import datetime, timezone
url = os.environ["KUBEFLOW_TRAINER_SERVER_URL"]
print("url", url, flush=True)
ctx = ssl.create_default_context(cafile=os.environ["KUBEFLOW_TRAINER_SERVER_CA_CERT"])
token = open(os.environ["KUBEFLOW_TRAINER_SERVER_TOKEN"]).read().strip()
def post(body, token=token, url=url):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
def report(p, eta):
    return {"trainerStatus": {"progressPercentage": p, "estimatedRemainingSeconds": eta,
            "metrics": [{"name": "loss", "value": str(1.0 / (p + 1))}],
            "lastUpdatedTime": datetime.now(timezone.utc).isoformat()}}
codes = [post(report(p, 3600 - p)) for p in (10, 20, 42)]
codes += [post(report(43, 1), token="x" * 64), post(report(43, 1), url=url.replace(
    "/" + os.environ["JOB"] + "/status", "/other/status")), post(b"[" * 5000),
    post(b"x" * 70000), post(report(101, 1))]
print("codes", json.dumps(codes), flush=True)
"""

PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: reporter
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
            command: [python3, -c, {script}]
            env:
            - name: JOB
              value: reporter
"""

TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: plain
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer
          spec:
            template:
              spec:
                containers:
                - name: dataset-initializer
                  image: unused-locally
                  command: [python3, -c, "import os; print('init sees', os.environ.get('KUBEFLOW_TRAINER_SERVER_URL'))"]
      - name: node
        dependsOn:
        - name: dataset-initializer
          status: Complete
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: unused-locally
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: tj-reporter
spec:
  runtimeRef:
    name: plain
    kind: TrainingRuntime
  trainer:
    command: [python3, -c, {script}]
    env:
    - name: JOB
      value: tj-reporter
"""


class ProgressTest(TrainctlTestCase):

    def codes(self, log):
        for line in log.splitlines():
            if "codes " in line:
                return json.loads(line.split("codes ", 1)[1])
        self.fail("the replica printed no codes:\n" + log)

    def test_a_v1_job_reports_and_the_cli_shows_it(self):
        ran = self.trainctl("run", self.write("p.yaml", PYTORCHJOB.format(
            script=json.dumps(REPORTER))))
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        # Accepted three times; then 401 (wrong token), 403 (another job), 400 (too deep),
        # 413 (too large), 422 (progress 101).
        self.assertEqual(self.codes(ran.stdout + ran.stderr), [200, 200, 200, 401, 403, 400, 413,
                                                               422])
        described = self.trainctl("describe", "pytorchjob", "reporter", "-o", "json")
        doc = json.loads(described.stdout)
        self.assertIn("/apis/kubeflow.org/v1/namespaces/default/pytorchjobs/reporter/status",
                      ran.stdout + ran.stderr)  # the URL the replica printed names its job
        status = doc["job"]["status"]["trainerStatus"]
        self.assertEqual(status["progressPercentage"], 42)
        self.assertEqual(status["estimatedRemainingSeconds"], 3558)
        self.assertEqual(status["metrics"], [{"name": "loss", "value": str(1.0 / 43)}])
        self.assertRegex(status["lastUpdatedTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        table = self.trainctl("get", "pytorchjobs")
        self.assertRegex(table.stdout, r"NAME\s+STATE\s+AGE\s+PROGRESS\s+ETA")
        self.assertRegex(table.stdout, r"reporter\s+Succeeded\s+\S+\s+42%\s+-")
        text = self.trainctl("describe", "pytorchjob", "reporter").stdout
        self.assertRegex(text, r"Progress:\s+42% \(reported \S+ ago\)")
        self.assertIn("loss=" + str(1.0 / 43), text)

    def test_a_trainjob_reports_from_its_trainer_not_its_initializer(self):
        ran = self.trainctl("run", self.write("tj.yaml", TRAINJOB.format(
            script=json.dumps(REPORTER))))
        self.assertEqual(ran.returncode, 0, self.explain(ran))
        self.assertIn("init sees None", ran.stdout + ran.stderr)
        self.assertEqual(self.codes(ran.stdout + ran.stderr)[:3], [200, 200, 200])
        doc = json.loads(self.trainctl("describe", "trainjob", "tj-reporter", "-o", "json").stdout)
        self.assertEqual(doc["job"]["status"]["trainerStatus"]["progressPercentage"], 42)


if __name__ == "__main__":
    unittest.main()
