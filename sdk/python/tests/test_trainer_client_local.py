"""TrainerClient on the local backend (the real trainctl binary, a private state folder): the
runtimes it lists, every bad argument refused before anything starts (options the runner cannot
honour named with their field and why, a BuiltinTrainer), and the whole API on a plain-Python
runtime installed into the state folder (2 nodes of a function that prints, no training):
train, status, steps, logs (read and followed), events, list, wait, delete, a failing node named
by wait_for_job_status, a container trainer whose options the runner honours, and the packages
of the interpreter that runs functions; and, where the project's venv of the unmodified
``kubeflow`` 0.5.0 SDK exists (hack/upstream-sdk/venv.sh trainer), ``kubeflow.trainer``'s own
``CustomTrainer`` driving this client."""

import contextlib
import dataclasses
import hashlib
import io
import os
import subprocess
import tempfile
import textwrap
import unittest

from trainctl import CustomTrainer, TrainerClient, trainer_types
from trainctl.backends.local import LocalBackend, find_trainctl

PLAIN_RUNTIME = textwrap.dedent("""\
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: ClusterTrainingRuntime
    metadata:
      name: plain-python
      labels:
        trainer.kubeflow.org/framework: python
    spec:
      mlPolicy:
        numNodes: 1
      template:
        spec:
          replicatedJobs:
            - name: node
              template:
                metadata:
                  labels:
                    trainer.kubeflow.org/trainjob-ancestor-step: trainer
                spec:
                  backoffLimit: 0
                  template:
                    spec:
                      restartPolicy: Never
                      containers:
                        - name: node
                          image: python:3.11
                          command: [python, -c, "print('default')"]
    """)


def greet(who, times=1):
    import os
    for _ in range(times):
        print(f"hello {who} from node {os.environ.get('NODE_TAG', '?')}", flush=True)


def fail():
    import sys
    print("about to fail", flush=True)
    sys.exit(3)


TORCHTUNE_RUNTIME = PLAIN_RUNTIME.replace("plain-python", "torchtune-tiny").replace(
    "framework: python", "framework: torchtune")


def pod_patch(metadata=None, **pod_spec):
    """A RuntimePatch of the ``node`` job's pod template."""
    t = trainer_types
    return t.RuntimePatch(t.TrainingRuntimeSpecPatch(t.JobSetTemplatePatch(
        spec=t.JobSetSpecPatch([t.ReplicatedJobPatch("node", t.JobTemplatePatch(
            spec=t.JobSpecPatch(t.PodTemplatePatch(metadata=metadata,
                                                   spec=t.PodSpecPatch(**pod_spec)))))]))))


@dataclasses.dataclass
class CustomTrainer2:
    """Someone else's class with CustomTrainer's fields (as kubeflow.trainer's is)."""
    func: object
    func_args: dict = None
    num_nodes: int = None
    env: dict = None


CustomTrainer2.__name__ = "CustomTrainer"


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

UPSTREAM_SCRIPT = textwrap.dedent("""\
    import sys
    from kubeflow.trainer import CustomTrainer
    from trainctl import TrainerClient

    def hi(who):
        print("hi", who)

    c = TrainerClient(backend="local", state_dir=sys.argv[1])
    name = c.train(runtime="plain-python",
                   trainer=CustomTrainer(func=hi, func_args={"who": "upstream"}, num_nodes=2))
    job = c.wait_for_job_status(name, timeout=60, polling_interval=1)
    print("RESULT", job.status, [s.name for s in job.steps],
          list(c.get_job_logs(name, step="node-1")))
    c.delete_job(name)
    """)


def upstream_python():
    """The python of the kubeflow 0.5.0 venv venv.sh made (read only), or None."""
    pins = os.path.join(REPO, "hack", "requirements", "upstream-sdk-v2.txt")
    try:
        with open(pins, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return None
    cache = os.environ.get("TRAINCTL_CACHE") or os.path.expanduser("~/.cache/trainctl")
    venv = os.path.join(cache, "upstream-sdk", digest)
    python = os.path.join(venv, "bin", "python")
    ready = os.path.isfile(os.path.join(venv, ".complete")) and os.access(python, os.X_OK)
    return python if ready else None


class TrainerClientLocalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.state = cls.tmp.name
        for file, text in (("plain.yaml", PLAIN_RUNTIME), ("tune.yaml", TORCHTUNE_RUNTIME)):
            path = os.path.join(cls.state, file)
            with open(path, "w") as f:
                f.write(text)
            subprocess.run([find_trainctl(), "--state-dir", cls.state, "runtimes", "install",
                            path], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.client = TrainerClient(backend="local", state_dir=self.state)

    def tearDown(self):
        for job in self.client.list_jobs():
            self.client.delete_job(job.name)

    def functions_written(self):
        folder = os.path.join(self.state, ".sdk", "functions", "default")
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    def test_runtimes(self):
        runtimes = {r.name: r for r in self.client.list_runtimes()}
        self.assertLessEqual({"torch-distributed", "jax-distributed", "xgboost-distributed",
                              "deepspeed-distributed", "plain-python"}, set(runtimes))
        torch = self.client.get_runtime("torch-distributed")
        self.assertIsInstance(torch, trainer_types.Runtime)
        self.assertEqual(torch.kind, trainer_types.RuntimeKind.CLUSTER_TRAINING_RUNTIME)
        self.assertEqual(torch.trainer.framework, "torch")
        self.assertEqual(torch.trainer.trainer_type, trainer_types.TrainerType.CUSTOM_TRAINER)
        self.assertEqual(torch.trainer.command, ("torchrun",))
        self.assertEqual(runtimes["deepspeed-distributed"].trainer.command[0], "mpirun")
        self.assertEqual(runtimes["plain-python"].trainer.command, ("python",))
        with self.assertRaisesRegex(ValueError, r"'nope' does not exist.*torch-distributed"):
            self.client.get_runtime("nope")

    def test_bad_input_is_refused_before_anything_starts(self):
        c = self.client
        before = self.functions_written()
        cases = [
            (dict(runtime="no-such-runtime", trainer=CustomTrainer(func=greet)),
             ValueError, r"runtime 'no-such-runtime' does not exist.*these do: .*"
                         r"plain-python, torch-distributed"),
            (dict(trainer=CustomTrainer(func=lambda: print("x"))), ValueError,
             "lambda cannot be serialised"),
            (dict(trainer=CustomTrainer(func=len)), ValueError,
             "trainer.func cannot be serialised: cannot read the source of 'len'"),
            (dict(runtime=CustomTrainer(func=len)), ValueError,  # a trainer passed first
             "trainer.func cannot be serialised"),
            (dict(trainer=CustomTrainer(func="greet")), ValueError, "must be callable"),
            (dict(trainer=CustomTrainer(func=greet, num_nodes=0)), ValueError,
             "num_nodes must be a positive int"),
            (dict(trainer=CustomTrainer(func=greet, func_args=[1])), ValueError,
             "func_args must be a dict"),
            (dict(trainer=object()), ValueError, "object is not supported"),
            (dict(trainer=trainer_types.BuiltinTrainer(
                config=trainer_types.TorchTuneConfig(epochs=1))), ValueError,
             r"BuiltinTrainer \(TorchTune post-training\) does not run on the local backend: "
             r"the runner does not complete upstream's `tune run` command.*"
             r"the torchtune runtimes installed here \(torchtune-tiny\) cannot run either.*"
             r"such as upstream's torchtune-llama3.2-1b"),
            (dict(trainer=CustomTrainer(func=greet), options=[object()]), ValueError,
             r"options\[0\]: object is not a TrainJob option trainctl knows; the options are "
             "Name, Labels, Annotations, TrainerCommand, TrainerArgs, ActiveDeadlineSeconds, "
             "RuntimePatch"),
            (dict(trainer=CustomTrainer(func=greet), options=[trainer_types.Name("Bad_Name")]),
             ValueError, r"options\[0\] Name: the TrainJob name must be an RFC 1035 label"),
            (dict(trainer=CustomTrainer(func=greet), options=[trainer_types.TrainerArgs(["x"])]),
             ValueError, "TrainerArgs goes with a CustomTrainerContainer"),
            # Fields the local runner cannot honour, each named with its option and why.
            (dict(trainer=CustomTrainer(func=greet), options=[
                trainer_types.Labels({"a": "b"}), pod_patch(node_selector={"disk": "ssd"})]),
             ValueError, r"^options\[1\] RuntimePatch sets spec\.runtimePatches\[\]\."
                         r"trainingRuntimeSpec\.template\.spec\.replicatedJobs\[\]\.template"
                         r"\.spec\.template\.spec\.nodeSelector, which the local backend cannot "
                         r"honour: one machine and no scheduler here"),
            (dict(trainer=CustomTrainer(func=greet), options=[pod_patch(
                metadata={"labels": {"a": "b"}}, scheduling_gates=[{"name": "g"}])]),
             ValueError, r"template\.metadata, which the local backend cannot honour: the "
                         r"local runner makes no JobSet, Job or Pod objects.*; options\[0\] "
                         r"RuntimePatch sets .*schedulingGates, .*nothing removes them here"),
            (dict(trainer=CustomTrainer(func=greet), options=[pod_patch(
                containers=[trainer_types.ContainerPatch(
                    "node", security_context={"runAsUser": 0})])]),
             ValueError, r"containers\[\]\.securityContext, which the local backend cannot "
                         r"honour: the local runner applies no security context"),
        ]
        for kwargs, error, message in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaisesRegex(error, message):
                    c.train(**kwargs)
        self.assertEqual(c.list_jobs(), [])
        self.assertEqual(self.functions_written(), before)  # no function file either

    def test_options_reach_the_job_and_the_runner_honours_them(self):
        c, t = self.client, trainer_types
        # The command writes into the patch's emptyDir mount (/scratch: the runner's folder for
        # the volume, rewritten in the args): the job completes only if the patch was applied.
        program = ("import sys; p = sys.argv[1]; open(p, 'w').write('ok'); "
                   "print('wrote', open(p).read(), sys.argv[2:])")
        patch = pod_patch(volumes=[{"name": "scratch", "emptyDir": {}}],
                          containers=[t.ContainerPatch("node", volume_mounts=[
                              {"name": "scratch", "mountPath": "/scratch"}])])
        options = [t.Name("with-options"), t.Labels({"team": "a"}),
                   t.Annotations({"note": "n"}), t.ActiveDeadlineSeconds(600),
                   t.TrainerCommand(["python", "-c", program]),
                   t.TrainerArgs(["/scratch/f", "x"]), patch]
        name = c.train(runtime="plain-python", options=options,
                       trainer=t.CustomTrainerContainer(image="python:3.11"))
        self.assertEqual(name, "with-options")
        job = c.wait_for_job_status(name, timeout=60, polling_interval=1)
        self.assertEqual(list(c.get_job_logs(name)), ["wrote ok ['x']"])
        stored = c._backend.get_job(name, "default", "TrainJob", 30)
        self.assertEqual((stored["metadata"]["labels"], stored["metadata"]["annotations"]),
                         ({"team": "a"}, {"note": "n"}))
        spec = stored["spec"]
        self.assertEqual(spec["activeDeadlineSeconds"], 600)
        self.assertEqual(spec["trainer"]["command"], ["python", "-c", program])
        self.assertEqual(spec["trainer"]["args"], ["/scratch/f", "x"])
        self.assertEqual(spec["runtimePatches"], [{
            "manager": "trainer.kubeflow.org/kubeflow-sdk",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
                "name": "node", "template": {"spec": {"template": {"spec": {
                    "containers": [{"name": "node", "volumeMounts": [
                        {"name": "scratch", "mountPath": "/scratch"}]}],
                    "volumes": [{"name": "scratch", "emptyDir": {}}]}}}}}]}}}}])
        self.assertEqual(job.status, "Complete")
        with self.assertRaisesRegex(ValueError, "Name option: TrainJob default/with-options "
                                                r"already exists \(backend local\)"):
            c.train(runtime="plain-python", trainer=CustomTrainer(func=greet),
                    options=[t.Name("with-options")])
        self.assertNotIn("with-options", self.functions_written())

    def test_runtime_packages_are_those_of_the_interpreter_that_runs_functions(self):
        c = self.client
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertIsNone(c.get_runtime_packages(c.get_runtime("torch-distributed")))
        lines = out.getvalue().splitlines()
        python = c._backend.python
        version = subprocess.run([python, "-c", "import sys; print(sys.version)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(lines[0], f"Python: {version}")
        self.assertEqual(lines[1].split(), ["Package", "Version"])
        self.assertEqual(set(lines[2].replace(" ", "")), {"-"})
        width = lines[1].index("Version")
        rows = {line[:width].strip(): line[width:].strip() for line in lines[3:]
                if not line.startswith("Available GPUs")}
        pip = subprocess.run([python, "-c", "import importlib.metadata as m; "
                              "print(m.version('pip'))"], capture_output=True, text=True)
        if pip.returncode == 0:  # a distribution every venv has, at the version it has
            self.assertEqual(rows.get("pip"), pip.stdout.strip())
        self.assertEqual(list(rows), sorted(rows, key=str.lower))
        with self.assertRaisesRegex(ValueError, "runtime torchtune-tiny runs a BuiltinTrainer"):
            c.get_runtime_packages("torchtune-tiny")
        with self.assertRaisesRegex(ValueError, "'nope' does not exist"):
            c.get_runtime_packages("nope")
        self.assertEqual(c.list_jobs(), [])  # as processes no TrainJob is made
        # In containers the runtime's image is what counts: a TrainJob there, as on a cluster.
        podman = LocalBackend(state_dir=self.state, runtime="podman")
        self.assertEqual(podman.runtime_packages("print(1)", lambda: "from a TrainJob"),
                         "from a TrainJob")

    def test_wait_arguments_and_missing_job(self):
        c = self.client
        with self.assertRaisesRegex(ValueError, "must be a subset"):
            c.wait_for_job_status("x", status={"Succeeded"})
        with self.assertRaisesRegex(ValueError, "strictly less than timeout"):
            c.wait_for_job_status("x", timeout=2, polling_interval=2)
        with self.assertRaisesRegex(RuntimeError, "Failed to get TrainJob: default/ghost"):
            c.get_job("ghost")
        with self.assertRaisesRegex(RuntimeError, "Failed to delete TrainJob: default/ghost"):
            c.delete_job("ghost")

    def test_a_function_on_two_nodes_through_every_method(self):
        c = self.client
        # A trainer of another class with CustomTrainer's name and fields (duck-typed, as
        # kubeflow.trainer's is) and the runtime as a Runtime object.
        name = c.train(runtime=c.get_runtime("plain-python"),
                       trainer=CustomTrainer2(func=greet, func_args={"who": "w", "times": 2},
                                              num_nodes=2, env={"NODE_TAG": "t"}))
        self.assertRegex(name, r"^[a-z][0-9a-f]{11}$")
        seen = []
        job = c.wait_for_job_status(name, timeout=60, polling_interval=1,
                                    callbacks=[seen.append])
        self.assertTrue(seen and all(isinstance(j, trainer_types.TrainJob) for j in seen))
        self.assertEqual(job.status, trainer_types.TRAINJOB_COMPLETE)
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual(job.runtime.name, "plain-python")
        self.assertIsNotNone(job.creation_timestamp.tzinfo)
        self.assertEqual([(s.name, s.status, s.pod_name) for s in job.steps],
                         [("node-0", "Succeeded", f"{name}-node-0"),
                          ("node-1", "Succeeded", f"{name}-node-1")])
        lines = ["hello w from node t"] * 2
        self.assertEqual(list(c.get_job_logs(name)), lines)
        self.assertEqual(list(c.get_job_logs(name, step="node-1")), lines)
        self.assertEqual(list(c.get_job_logs(name, step="node-1", follow=True)), lines)
        self.assertEqual(list(c.get_job_logs(name, step="node-7")), [])
        events = c.get_job_events(name)
        self.assertTrue(events and all(isinstance(e, trainer_types.Event) for e in events))
        self.assertIn(("Pod", f"{name}-node-1"),
                      {(e.involved_object_kind, e.involved_object_name) for e in events})
        self.assertEqual(events, sorted(events, key=lambda e: e.event_time))
        self.assertEqual([j.name for j in c.list_jobs()], [name])
        self.assertEqual([j.name for j in c.list_jobs(runtime="plain-python")], [name])
        self.assertEqual(c.list_jobs(runtime=c.get_runtime("jax-distributed")), [])
        c.delete_job(name)
        self.assertEqual(c.list_jobs(), [])
        with self.assertRaisesRegex(RuntimeError, f"Failed to get TrainJob: default/{name}"):
            c.get_job(name)

    def test_a_failed_node_is_named_by_wait(self):
        c = self.client
        name = c.train(runtime="plain-python", trainer=CustomTrainer(func=fail, num_nodes=2))
        with self.assertRaisesRegex(RuntimeError,
                                    rf"TrainJob {name} is Failed: {name}-node-[01] exited with "
                                    r"code 3; its last lines:\nabout to fail"):
            c.wait_for_job_status(name, timeout=60, polling_interval=1)
        job = c.wait_for_job_status(name, status={"Failed"}, timeout=10, polling_interval=1)
        self.assertEqual(job.status, "Failed")
        with self.assertRaisesRegex(RuntimeError, f"TrainJob {name} is Failed"):
            c.wait_for_job_status(name, status={"Running"}, timeout=2, polling_interval=1)

    @unittest.skipUnless(upstream_python(), "no venv of the kubeflow 0.5.0 SDK here")
    def test_kubeflow_trainers_own_custom_trainer(self):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        script = os.path.join(self.state, "upstream_trainer.py")  # a file: getsource reads it
        with open(script, "w") as f:
            f.write(UPSTREAM_SCRIPT)
        p = subprocess.run([upstream_python(), script, self.state], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("RESULT Complete ['node-0', 'node-1'] ['hi upstream']", p.stdout)


if __name__ == "__main__":
    unittest.main()
