"""The unmodified upstream Python SDK (kubeflow-training 1.9.4 from PyPI) drives the real
`trainctl operator` on the test control plane: every kind that SDK knows, created from its own
model objects and from functions, waited for, read back (job, conditions, is_*, pods by role,
type and index, logs, events), updated and deleted, with its exception types.

Run by the upstream SDK's own venv (hack/upstream-sdk/venv.sh prints its python), never by the
project's: `from kubeflow.training import ...` must be upstream's code. harness.py is stdlib only.
kwok plays the kubelet (pods run for the seconds their annotations say); its log server keeps a
followed stream open forever, so upstream's `follow=True` (which returns only when every stream
ends) is checked in a child process that is stopped once the lines are in.
"""
import json
import os
import subprocess
import sys
import textwrap
import unittest

from harness import (KIND_INFO, KUBECONFIG, OperatorTestCase, kubectl, run_for, wait_for)

import kubeflow.training
from kubeflow.training import TrainingClient
from kubeflow.training import models as m
from kubernetes import client as k8s

KWOK_LOG_LINE = "kwok fake container: this log is served by the kwok node through the API server"

# kind: (replica types and counts, the role pod the SDK's is_master=True must find)
SHAPES = {
    "PyTorchJob": ({"Master": 1, "Worker": 2}, "master-0"),
    "TFJob": ({"Chief": 1, "PS": 1, "Worker": 2}, "chief-0"),
    "XGBoostJob": ({"Master": 1, "Worker": 1}, "master-0"),
    "MPIJob": ({"Launcher": 1, "Worker": 2}, "launcher"),
    "PaddleJob": ({"Master": 1, "Worker": 2}, "master-0"),
    "JAXJob": ({"Worker": 2}, "worker-0"),
}

SPEC_CLASSES = {
    "PyTorchJob": (m.KubeflowOrgV1PyTorchJob, m.KubeflowOrgV1PyTorchJobSpec, "pytorch_replica_specs"),
    "TFJob": (m.KubeflowOrgV1TFJob, m.KubeflowOrgV1TFJobSpec, "tf_replica_specs"),
    "XGBoostJob": (m.KubeflowOrgV1XGBoostJob, m.KubeflowOrgV1XGBoostJobSpec, "xgb_replica_specs"),
    "MPIJob": (m.KubeflowOrgV1MPIJob, m.KubeflowOrgV1MPIJobSpec, "mpi_replica_specs"),
    "PaddleJob": (m.KubeflowOrgV1PaddleJob, m.KubeflowOrgV1PaddleJobSpec, "paddle_replica_specs"),
    "JAXJob": (m.KubeflowOrgV1JAXJob, m.KubeflowOrgV1JAXJobSpec, "jax_replica_specs"),
}


def upstream_job(kind, name, annotations, restart_policy="Never"):
    """A job built only from upstream's model classes, as an upstream user writes it."""
    _, _, container, port_name, port = KIND_INFO[kind]
    counts, _ = SHAPES[kind]
    job_class, spec_class, field = SPEC_CLASSES[kind]
    ports = [k8s.V1ContainerPort(name=port_name, container_port=port)] if port_name else None
    specs = {}
    for rtype, count in counts.items():
        template = k8s.V1PodTemplateSpec(
            metadata=k8s.V1ObjectMeta(annotations=dict(annotations)),
            spec=k8s.V1PodSpec(containers=[k8s.V1Container(
                name=container, image="example.invalid/train:1",
                command=["python3", "train.py"], ports=ports)]))
        specs[rtype] = m.KubeflowOrgV1ReplicaSpec(replicas=count, restart_policy=restart_policy,
                                                  template=template)
    spec = spec_class(run_policy=m.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
                      **{field: specs})
    return job_class(api_version="kubeflow.org/v1", kind=kind,
                     metadata=k8s.V1ObjectMeta(name=name), spec=spec)


def train(params):
    print("training with", params)


class UpstreamSdk(OperatorTestCase):

    def client(self, kind="PyTorchJob"):
        return TrainingClient(config_file=KUBECONFIG, namespace=self.ns, job_kind=kind)

    def test_is_upstreams_sdk(self):
        path = os.path.realpath(kubeflow.training.__file__)
        self.assertIn("site-packages", path)
        self.assertNotIn("sdk/python/trainctl", path)
        from importlib.metadata import version
        self.assertEqual(version("kubeflow-training"), "1.9.4")

    def test_every_kind_from_model_objects(self):
        for kind, (counts, role_pod) in SHAPES.items():
            with self.subTest(kind=kind):
                c = self.client(kind)
                name = kind.lower()[:-3] + "-obj"
                c.create_job(job=upstream_job(kind, name, run_for(1)))
                calls = []
                job = c.wait_for_job_conditions(name, wait_timeout=120, polling_interval=1,
                                                callback=calls.append)
                self.assertTrue(calls)
                self.assertEqual(job.metadata.name, name)
                conditions = c.get_job_conditions(name)
                self.assertGreaterEqual(len(conditions), 2, conditions)
                self.assertTrue(c.is_job_created(name))
                self.assertTrue(c.is_job_succeeded(name))
                self.assertFalse(c.is_job_running(name))
                self.assertFalse(c.is_job_restarting(name))
                self.assertFalse(c.is_job_failed(name))
                statuses = c.get_job(name).status.replica_statuses
                first = next(iter(counts))
                self.assertEqual(statuses[first].succeeded, counts[first], statuses)
                self.assertIn(name, [j.metadata.name for j in c.list_jobs()])
                self.assertEqual(c.get_job_pod_names(name, is_master=True),
                                 [f"{name}-{role_pod}"])
                self.assertEqual(len(c.get_job_pod_names(name)), sum(counts.values()))
                logs, _ = c.get_job_logs(name)
                self.assertEqual(list(logs), [f"{name}-{role_pod}"])
                self.assertIn(KWOK_LOG_LINE, logs[f"{name}-{role_pod}"])
                c.delete_job(name)

    def test_function_jobs_pods_by_type_and_index(self):
        c = self.client()
        c.create_job(name="fn", train_func=train, parameters={"lr": 0.1}, num_workers=3,
                     num_procs_per_worker=2, env_vars={"TEAM": "ml"})
        c.wait_for_job_conditions("fn", wait_timeout=120, polling_interval=1)
        self.assertEqual(sorted(c.get_job_pod_names("fn", is_master=False)),
                         ["fn-master-0", "fn-worker-0", "fn-worker-1"])
        self.assertEqual(c.get_job_pod_names("fn", replica_type="worker", replica_index=1),
                         ["fn-worker-1"])
        with self.assertRaises(ValueError):
            c.get_job_pod_names("fn", replica_type="Master")
        pod = c.get_job_pods("fn", replica_type="master")[0]
        env = {e.name: e.value for e in pod.spec.containers[0].env}
        self.assertEqual(env["TEAM"], "ml")
        self.assertEqual(env["PET_NPROC_PER_NODE"], "2")  # the operator's torchrun wiring
        self.assertEqual(c.get_job("fn").spec.nproc_per_node, "2")

        tf = self.client("TFJob")
        tf.create_job(name="tffn", train_func=train, num_workers=2, num_chief_replicas=1,
                      num_ps_replicas=1, env_vars=[k8s.V1EnvVar(name="TEAM", value="ml")])
        tf.wait_for_job_conditions("tffn", wait_timeout=120, polling_interval=1)
        self.assertEqual(tf.get_job_pod_names("tffn", is_master=True), ["tffn-chief-0"])
        tf_config = {e.name: e.value for e in
                     tf.get_job_pods("tffn", replica_type="worker", replica_index=1)[0]
                     .spec.containers[0].env}["TF_CONFIG"]
        self.assertEqual(json.loads(tf_config)["task"], {"type": "worker", "index": 1})
        c.delete_job("fn")
        tf.delete_job("tffn")

    def test_bad_arguments_raise_value_error(self):
        c = self.client()
        cases = {
            "bad kind": lambda: TrainingClient(config_file=KUBECONFIG, job_kind="FooJob"),
            "job and train_func": lambda: c.create_job(
                job=upstream_job("PyTorchJob", "x", {}), train_func=train),
            "wrong model type": lambda: c.create_job(
                job=type("NotAModel", (), {"kind": "PyTorchJob"})()),
            "num_workers=0": lambda: c.create_job(name="x", train_func=train, num_workers=0),
            "no name": lambda: c.create_job(train_func=train),
            "TFJob nproc": lambda: c.create_job(name="x", train_func=train, job_kind="TFJob",
                                                num_procs_per_worker=2),
            "PyTorch ps": lambda: c.create_job(name="x", train_func=train, num_ps_replicas=1),
            "Paddle function": lambda: c.create_job(name="x", train_func=train,
                                                    job_kind="PaddleJob"),
            "volumes": lambda: c.create_job(name="x", train_func=train,
                                            volumes=[k8s.V1Volume(name="v")]),
            "lower-case condition": lambda: c.wait_for_job_conditions(
                "x", expected_conditions={"succeeded"}),
        }
        for what, call in cases.items():
            with self.subTest(what):
                with self.assertRaises(ValueError):
                    call()
        self.assertEqual(c.list_jobs(), [])  # none of them created anything

    def test_failure_timeout_and_missing_jobs(self):
        c = self.client()
        job = upstream_job("PyTorchJob", "bad", run_for(1, exit_code=3))
        c.create_job(job=job)
        with self.assertRaises(RuntimeError):
            c.wait_for_job_conditions("bad", wait_timeout=120, polling_interval=1)
        self.assertTrue(c.is_job_failed("bad"))
        with self.assertRaises(TimeoutError):
            c.wait_for_job_conditions("bad", expected_conditions={"Running"}, wait_timeout=0)
        c.delete_job("bad")
        wait_for("bad deleted", lambda: "bad" not in [j.metadata.name for j in c.list_jobs()])
        with self.assertRaises(RuntimeError):
            c.get_job("bad")
        with self.assertRaises(RuntimeError):
            c.delete_job("bad")

    def test_logs_follow_verbose_update_delete(self):
        c = self.client()
        c.create_job(job=upstream_job("PyTorchJob", "logs", run_for(3)))
        wait_for("logs Running", lambda: c.is_job_running("logs"), timeout=60)
        wait_for("all pods Running", lambda: [p.status.phase for p in c.get_job_pods("logs")]
                 == ["Running"] * 3, timeout=60)
        follow = textwrap.dedent(f"""
            from kubeflow.training import TrainingClient
            c = TrainingClient(config_file={KUBECONFIG!r}, namespace={self.ns!r})
            c.get_job_logs("logs", is_master=False, follow=True)
            """)
        proc = subprocess.Popen([sys.executable, "-c", follow], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        printed = []
        try:
            for line in proc.stdout:
                printed.append(line)
                if sum(KWOK_LOG_LINE in x for x in printed) == 3:
                    break
        finally:
            proc.kill()
            proc.wait()
        for pod in ("logs-master-0", "logs-worker-0", "logs-worker-1"):
            self.assertIn(f"[Pod {pod}]: {KWOK_LOG_LINE}\n", printed)

        c.wait_for_job_conditions("logs", wait_timeout=60, polling_interval=1)
        logs, events = c.get_job_logs("logs", is_master=False, verbose=True)
        self.assertEqual(sorted(logs), ["logs-master-0", "logs-worker-0", "logs-worker-1"])
        self.assertTrue(any("Created pod: logs-worker-1" in e for e in events["pytorchjob/logs"]),
                        events)
        self.assertIn("pod/logs-master-0", events)

        job = c.get_job("logs")
        job.metadata.labels = {"stage": "two"}
        c.update_job(job, "logs")
        labels = json.loads(kubectl("get", "pytorchjob", "logs", "-n", self.ns, "-o",
                                    "json").stdout)["metadata"].get("labels")
        self.assertEqual(labels, {"stage": "two"})
        c.delete_job("logs")
        wait_for("logs deleted", lambda: "logs" not in [j.metadata.name for j in c.list_jobs()])
        with self.assertRaises(RuntimeError):
            c.get_job("logs")


if __name__ == "__main__":
    unittest.main()
