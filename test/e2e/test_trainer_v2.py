"""Kubeflow Trainer v2 on this machine: `trainctl run` of a TrainJob resolved against its runtime
(the built-in ones, one in the same file, --runtimes, or one installed with `trainctl runtimes
install`), the runtime's replicated jobs as process groups in order, `get/describe/logs` of
`trainjob`/`tj`, and bad input with exit 2 and the field path."""

import json
import os
import unittest

from harness import REPO, TrainctlTestCase, results

API = "apiVersion: trainer.kubeflow.org/v1alpha1\n"

# A plain runtime (no mlPolicy) whose initializer writes a file the trainer nodes then read:
# the trainer depends on the initializer Complete, as upstream's initializers do.
INIT_RUNTIME = API + """\
kind: TrainingRuntime
metadata: {name: with-init, namespace: team}
spec:
  mlPolicy: {numNodes: 2}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
          spec:
            template:
              spec:
                containers:
                - name: dataset-initializer
                  image: busybox
                  command: [python3, -c, "import os,time; time.sleep(1); open('dataset.txt','w').write(os.environ.get('STORAGE_URI', 'none'))"]
      - name: node
        dependsOn: [{name: dataset-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: busybox
                  command: [python3, -c, "import json; print('RESULT', json.dumps({'data': open('dataset.txt').read()}))"]
"""


def trainjob(spec, name="tj", namespace=None):
    meta = f"name: {name}" + (f", namespace: {namespace}" if namespace else "")
    return API + "kind: TrainJob\nmetadata: {" + meta + "}\nspec:\n" + spec


class TrainJobRunTest(TrainctlTestCase):

    def test_the_torch_example_trains_on_two_nodes_of_the_built_in_runtime(self):
        example = os.path.join(REPO, "examples", "pytorch", "trainjob.yaml")
        proc = self.trainctl("run", example, "-o", "json", timeout=600)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        ranks = results(proc.stderr + proc.stdout)
        self.assertEqual(sorted(r["rank"] for r in ranks), [0, 1, 2, 3])
        self.assertEqual({r["world_size"] for r in ranks}, {4})
        self.assertEqual(len({r["params_sha256"] for r in ranks}), 1, "DDP keeps ranks equal")
        self.assertGreater(min(r["test_accuracy"] for r in ranks), 0.85)
        job = json.loads(proc.stdout)
        self.assertEqual(job["kind"], "TrainJob")
        self.assertEqual(job["apiVersion"], "trainer.kubeflow.org/v1alpha1")
        self.assertEqual(job["status"]["conditions"][-1]["type"], "Succeeded")
        self.assertIn("torch-digits-node-1", proc.stderr + proc.stdout)
        # Read like every kind, by its name, plural and short name.
        for kind in ("trainjob", "trainjobs", "tj"):
            got = self.trainctl("get", kind, "torch-digits")
            self.assertEqual(got.returncode, 0, self.explain(got))
            self.assertIn("Succeeded", got.stdout)
        described = self.trainctl("describe", "tj", "torch-digits")
        self.assertIn("Kind:               TrainJob", described.stdout)
        self.assertIn("torch-digits-node-0", described.stdout)
        logs = self.trainctl("logs", "tj", "torch-digits", "-r", "node-1")
        self.assertEqual(logs.returncode, 0, self.explain(logs))
        self.assertEqual(sorted(r["rank"] for r in results(logs.stdout)), [2, 3])

    def test_the_mpi_example_reduces_over_four_ranks_of_the_built_in_mpi_runtime(self):
        # deepspeed-distributed's MPI wiring: the launcher (a node too) and one `node`, 2 slots
        # each; mpirun forks the 4 ranks here and MPI Reduce sums their shares of pi.
        example = os.path.join(REPO, "examples", "mpi", "trainjob.yaml")
        proc = self.trainctl("run", example, "--replace", timeout=300)
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        [result] = results(proc.stderr + proc.stdout)
        self.assertEqual(result["ranks"], 4)
        self.assertLess(result["error"], 1e-9)
        # Both hosts' slots on one local line; the node only held its place, stopped once the
        # launcher succeeded, and the launcher's success is the job's (the runtime's policy).
        folder = os.path.join(self.state, "default", "trainjobs", "pi-mpi")
        with open(os.path.join(folder, "hostfile")) as f:
            self.assertEqual(f.read(), "localhost slots=4\n")
        described = self.trainctl("describe", "tj", "pi-mpi")
        self.assertEqual(described.returncode, 0, self.explain(described))
        self.assertRegex(described.stdout, r"State:\s+Succeeded")
        self.assertRegex(described.stdout, r"pi-mpi-launcher-0\s+Succeeded\s+0 .*mpirun -n 4")
        self.assertRegex(described.stdout, r"pi-mpi-node-0\s+Stopped .*sleep infinity")
        # What mpirun was given: upstream's OMPI env, the hostfile and slots of this machine.
        dry = self.trainctl("run", "--dry-run", "-o", "json",
                            os.path.join(REPO, "examples", "mpi", "trainjob.yaml"))
        self.assertEqual(dry.returncode, 0, self.explain(dry))
        replicas = {r["type"]: r for r in json.loads(dry.stdout)["replicas"]}
        env = {e["name"]: e["value"] for e in replicas["launcher"]["env"]}
        self.assertEqual(env["OMPI_MCA_orte_set_default_slots"], "2")
        self.assertEqual(env["OMPI_MCA_plm"], "isolated")
        self.assertTrue(env["OMPI_MCA_orte_default_hostfile"].endswith("/trainjobs/pi-mpi/hostfile"))
        self.assertEqual(replicas["node"]["command"][-1], "infinity")

    def test_an_initializer_completes_before_the_trainer_nodes_start(self):
        self.write("tj.yaml", INIT_RUNTIME + "---\n" + trainjob(
            "  runtimeRef: {name: with-init, kind: TrainingRuntime}\n"
            "  initializer: {dataset: {storageUri: 'hf://org/data'}}\n", namespace="team"))
        proc = self.trainctl("run", "tj.yaml", "-o", "json")
        self.assertEqual(proc.returncode, 0, self.explain(proc))
        got = results(proc.stderr + proc.stdout)
        self.assertEqual([r["data"] for r in got], ["hf://org/data"] * 2,
                         "both nodes read what the initializer wrote from storageUri")
        replicas = self.stored_replicas("team", "trainjobs", "tj")
        self.assertEqual(sorted(r["name"] for r in replicas),
                         ["tj-dataset-initializer-0", "tj-node-0", "tj-node-1"])

    def test_runtimes_from_a_folder_and_installed_ones(self):
        os.makedirs(os.path.join(self.work, "rt"))
        self.write("rt/init.yaml", INIT_RUNTIME)
        self.write("tj.yaml", trainjob(
            "  runtimeRef: {name: with-init, kind: TrainingRuntime}\n", namespace="team"))
        missing = self.trainctl("run", "tj.yaml")
        self.assertEqual(missing.returncode, 2, self.explain(missing))
        given = self.trainctl("run", "tj.yaml", "--runtimes", "rt")
        self.assertEqual(given.returncode, 0, self.explain(given))
        self.assertEqual(self.trainctl("delete", "tj", "tj", "-n", "team").returncode, 0)
        installed = self.trainctl("runtimes", "install", "rt")
        self.assertEqual(installed.returncode, 0, self.explain(installed))
        self.assertIn("TrainingRuntime team/with-init installed", installed.stdout)
        listed = self.trainctl("runtimes", "list")
        self.assertIn("team/with-init", listed.stdout)
        self.assertIn("torch-distributed", listed.stdout)
        self.assertIn("built-in", listed.stdout)
        again = self.trainctl("run", "tj.yaml")
        self.assertEqual(again.returncode, 0, self.explain(again))
        bad = self.write("bad-rt.yaml", INIT_RUNTIME.replace("trainjob-ancestor-step: trainer",
                                                             "trainjob-ancestor-step: other"))
        refused = self.trainctl("runtimes", "install", bad)
        self.assertEqual(refused.returncode, 2, self.explain(refused))
        self.assertIn("spec.template.spec.replicatedJobs", refused.stderr)
        self.assertIn("so a TrainJob has no step to train in", refused.stderr)

    def test_a_trainjob_and_a_pytorchjob_of_one_name_do_not_collide(self):
        self.write("tj.yaml", trainjob(
            "  runtimeRef: {name: torch-distributed}\n"
            "  trainer: {command: [python3, -c, 'print(1)']}\n", name="same"))
        self.write("pt.yaml", """\
            apiVersion: kubeflow.org/v1
            kind: PyTorchJob
            metadata: {name: same}
            spec:
              pytorchReplicaSpecs:
                Master:
                  replicas: 1
                  template:
                    spec:
                      containers: [{name: pytorch, image: x, command: [python3, -c, 'print(2)']}]
            """)
        self.assertEqual(self.trainctl("run", "tj.yaml").returncode, 0)
        self.assertEqual(self.trainctl("run", "pt.yaml").returncode, 0)
        listed = self.trainctl("get", "-o", "json")
        kinds = sorted(j["kind"] for j in json.loads(listed.stdout)["items"])
        self.assertEqual(kinds, ["PyTorchJob", "TrainJob"])
        history = self.trainctl("history")
        self.assertEqual(history.returncode, 0, self.explain(history))
        rows = [line.split() for line in history.stdout.splitlines()[1:] if line.strip()]
        self.assertEqual(sorted((r[1], r[2]) for r in rows),
                         [("PyTorchJob", "same"), ("TrainJob", "same")],
                         "both runs are kept in the history, apart")


class TrainJobBadInputTest(TrainctlTestCase):

    def expect_invalid(self, text, *fragments):
        self.write("tj.yaml", text)
        proc = self.trainctl("run", "tj.yaml")
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertTrue(proc.stderr.startswith("error: tj.yaml"), self.explain(proc))
        for fragment in fragments:
            self.assertIn(fragment, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.state, "default", "trainjobs")),
                         "an invalid TrainJob left state behind")

    def test_a_runtime_that_does_not_exist_is_named_with_where_it_was_sought(self):
        self.expect_invalid(trainjob("  runtimeRef: {name: torch-distributd}\n"),
                            'spec.runtimeRef.name: Not found: "torch-distributd"',
                            "among the ClusterTrainingRuntimes")

    def test_a_training_runtime_of_another_namespace(self):
        self.expect_invalid(INIT_RUNTIME + "---\n" + trainjob(
            "  runtimeRef: {name: with-init, kind: TrainingRuntime}\n"),
            "the TrainingRuntimes of namespace default", "TrainingRuntime team/with-init")

    def test_num_nodes_below_one(self):
        self.expect_invalid(trainjob("  runtimeRef: {name: torch-distributed}\n"
                                     "  trainer: {numNodes: 0}\n"),
                            "spec.trainer.numNodes: Invalid value: 0")

    def test_an_override_the_policy_cannot_take(self):
        self.expect_invalid(trainjob("  runtimeRef: {name: torch-distributed}\n"
                                     "  trainer: {env: [{name: PET_NNODES, value: '3'}]}\n"),
                            "spec.trainer.env", "must not have reserved envs",
                            "[PET_NNODES]")
        self.expect_invalid(trainjob("  runtimeRef: {name: xgboost-distributed}\n"
                                     "  trainer: {numProcPerNode: 2}\n"),
                            "spec.trainer.numProcPerNode: Forbidden")

    def test_a_runtime_without_a_trainer_step(self):
        self.expect_invalid(
            INIT_RUNTIME.replace("trainjob-ancestor-step: trainer", "trainjob-ancestor-step: x")
            + "---\n" + trainjob("  runtimeRef: {name: with-init, kind: TrainingRuntime}\n",
                                 namespace="team"),
            "so a TrainJob has no step to train in")

    def test_a_flux_runtime_is_refused_until_it_runs_here(self):
        flux = INIT_RUNTIME.replace("mlPolicy: {numNodes: 2}",
                                    "mlPolicy: {numNodes: 2, flux: {}}")
        self.expect_invalid(flux + "---\n" + trainjob(
            "  runtimeRef: {name: with-init, kind: TrainingRuntime}\n", namespace="team"),
            "the runtime with-init", "has mlPolicy flux, which trainctl run does not run yet")

    def test_a_bad_name_and_managed_by(self):
        self.expect_invalid(trainjob("  runtimeRef: {name: torch-distributed}\n"
                                     "  managedBy: example.com/other\n", name="Bad_Name"),
                            "metadata.name must match RFC 1035 DNS label format",
                            "ManagedBy must be trainer.kubeflow.org/trainjob-controller")


if __name__ == "__main__":
    unittest.main()
