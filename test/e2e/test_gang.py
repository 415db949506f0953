"""Gang restart through `trainctl run` with a real PyTorch DDP training over gloo (issue #38,
docs/status-machine.md "Gang restart"): rank 1 dies once after a checkpoint. With
`trainctl.dev/restart-scope: Gang` every replica is stopped and started again as attempt 1 on a
fresh rendezvous port, resumes from the checkpoint and the job Succeeds; without it (upstream's
behaviour: only the failed replica restarts, in place) the survivor is left in a collective
with a dead peer and the job fails at its backoffLimit."""
import json
import os
import unittest

from harness import REPO, TrainctlTestCase, last_condition, results

SCRIPT = os.path.join(REPO, "test", "e2e", "scripts", "resumable_ddp.py")

REPLICA = """    {type}:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [python3, {script}, --checkpoints, {checkpoints}, --die-at, "25", --timeout-seconds, "15"]
"""

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  annotations: {annotations}
spec:
  runPolicy: {{backoffLimit: 1}}
  pytorchReplicaSpecs:
"""


class GangRestartTest(TrainctlTestCase):

    def manifest(self, name, annotations):
        checkpoints = os.path.join(self.work, "checkpoints-" + name)
        os.makedirs(checkpoints)
        replicas = "".join(REPLICA.format(type=t, script=json.dumps(SCRIPT), checkpoints=json.dumps(checkpoints))
                           for t in ("Master", "Worker"))
        return self.write(f"{name}.yaml", JOB.format(name=name, annotations=json.dumps(annotations)) + replicas)

    def logs(self, name, replica):
        return self.trainctl("logs", name, "--replica", replica).stdout

    def test_gang_resumes_every_replica_from_the_checkpoint_and_succeeds(self):
        path = self.manifest("gang", {"trainctl.dev/restart-scope": "Gang"})
        job, proc = self.run_json(path, timeout=240)
        self.assertEqual(last_condition(job)["type"], "Succeeded", self.explain(proc))
        self.assertEqual(job["metadata"]["annotations"]["trainctl.dev/restart-attempt"], "1")
        master, worker = self.logs("gang", "master-0"), self.logs("gang", "worker-0")
        self.assertIn("rank 1 dies at step 25", worker)
        for log, rank in ((master, 0), (worker, 1)):
            self.assertIn(f"attempt 0 rank {rank} resumed from step 0", log)
            self.assertIn(f"attempt 1 rank {rank} resumed from step 20", log)
        out = [r for r in results(master + worker)]
        self.assertEqual([(r["rank"], r["attempt"], r["resumed_from"]) for r in out], [(0, 1, 20), (1, 1, 20)])
        self.assertEqual(out[0]["params_sha256"], out[1]["params_sha256"])
        replicas = self.stored_replicas("default", "pytorchjobs", "gang")
        self.assertEqual({r["labels"]["trainctl.dev/restart-attempt"] for r in replicas}, {"1"})
        self.assertEqual({r["restarts"] for r in replicas}, {0}, "no replica restarted in place")
        described = self.trainctl("describe", "pytorchjob", "gang").stdout
        self.assertIn("GangRestart", described)

    def test_without_gang_the_survivor_is_stuck_and_the_job_fails(self):
        path = self.manifest("replica", {})
        job, proc = self.run_json(path, timeout=240)
        self.assertEqual(last_condition(job)["type"], "Failed", self.explain(proc))
        self.assertIn("backoff limit", last_condition(job)["message"])
        self.assertNotIn("trainctl.dev/restart-attempt", job["metadata"].get("annotations", {}))


if __name__ == "__main__":
    unittest.main()
