"""Tests of trainctl.constants: upstream 1.9.4 names and values, the fixes we made (JAX replica
types, unset base images, namespace looked up at call time) and the MXJob additions."""

import json
import os
import sys
import tempfile
import typing
import unittest
from unittest import mock

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if SDK_DIR not in sys.path:
    sys.path.insert(0, SDK_DIR)

from trainctl import constants as c  # noqa: E402
from trainctl import models  # noqa: E402

SEVEN_KINDS = {
    # kind: (model, plural, container, base image)
    "TFJob": ("KubeflowOrgV1TFJob", "tfjobs", "tensorflow",
              "docker.io/tensorflow/tensorflow:2.9.1"),
    "PyTorchJob": ("KubeflowOrgV1PyTorchJob", "pytorchjobs", "pytorch",
                   "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"),
    "XGBoostJob": ("KubeflowOrgV1XGBoostJob", "xgboostjobs", "xgboost", "TODO"),
    "MPIJob": ("KubeflowOrgV1MPIJob", "mpijobs", "mpi", "TODO"),
    "PaddleJob": ("KubeflowOrgV1PaddleJob", "paddlejobs", "paddle",
                  "docker.io/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"),
    "JAXJob": ("KubeflowOrgV1JAXJob", "jaxjobs", "jax", "JAXJOB_BASE_IMAGE"),
    "MXJob": ("KubeflowOrgV1MXJob", "mxjobs", "mxnet", "TODO"),
}


class UpstreamValuesTest(unittest.TestCase):
    def test_api_and_defaults(self):
        self.assertEqual((c.GROUP, c.VERSION, c.API_VERSION), ("kubeflow.org", "v1",
                                                               "kubeflow.org/v1"))
        self.assertEqual(c.DEFAULT_TIMEOUT, 120)
        self.assertEqual(c.DEFAULT_NAMESPACE, "default")
        self.assertEqual(c.DEFAULT_PIP_INDEX_URL, "https://pypi.org/simple")
        self.assertEqual(c.ISTIO_SIDECAR_INJECTION, "sidecar.istio.io/inject")
        self.assertEqual((c.POD_KIND, c.POD_PHASE_PENDING), ("Pod", "Pending"))
        self.assertEqual(c.ENTRYPOINT_TORCH, "torchrun")
        self.assertEqual(c.ENTRYPOINT_PYTHON, "python -u")
        self.assertEqual(c.DEFAULT_COMMAND, ["bash", "-c"])

    def test_conditions(self):
        self.assertEqual(c.JOB_CONDITIONS, {"Created", "Running", "Restarting", "Succeeded",
                                            "Failed"})
        self.assertEqual(c.JOB_CONDITION_SUCCEEDED, "Succeeded")
        self.assertEqual(c.JOB_CONDITION_RESTARTING, "Restarting")
        self.assertEqual(c.CONDITION_STATUS_TRUE, "True")

    def test_labels(self):
        self.assertEqual(c.JOB_NAME_LABEL, "training.kubeflow.org/job-name")
        self.assertEqual(c.JOB_ROLE_LABEL, "training.kubeflow.org/job-role")
        self.assertEqual(c.JOB_ROLE_MASTER, "master")
        self.assertEqual(c.REPLICA_TYPE_LABEL, "training.kubeflow.org/replica-type")
        self.assertEqual(c.REPLICA_INDEX_LABEL, "training.kubeflow.org/replica-index")
        self.assertEqual(c.LOCAL_QUEUE_LABEL, "kueue.x-k8s.io/queue-name")

    def test_replica_types(self):
        self.assertEqual([c.REPLICA_TYPE_CHIEF, c.REPLICA_TYPE_PS, c.REPLICA_TYPE_MASTER,
                          c.REPLICA_TYPE_WORKER, c.REPLICA_TYPE_SCHEDULER, c.REPLICA_TYPE_SERVER,
                          c.REPLICA_TYPE_LAUNCHER],
                         ["Chief", "PS", "Master", "Worker", "Scheduler", "Server", "Launcher"])
        self.assertEqual(c.TFJOB_REPLICA_TYPES, ("ps", "chief", "worker"))
        self.assertEqual(c.PYTORCHJOB_REPLICA_TYPES, ("master", "worker"))
        self.assertEqual(c.XGBOOSTJOB_REPLICA_TYPES, ("master", "worker"))
        self.assertEqual(c.MPIJOB_REPLICA_TYPES, ("launcher", "worker"))
        self.assertEqual(c.PADDLEJOB_REPLICA_TYPES, ("master", "worker"))

    def test_train_api(self):
        self.assertEqual(c.STORAGE_INITIALIZER, "storage-initializer")
        self.assertEqual(c.PVC_DEFAULT_SIZE, "10Gi")
        self.assertEqual(c.PVC_DEFAULT_ACCESS_MODES, ["ReadWriteOnce", "ReadOnlyMany"])
        self.assertEqual(c.INIT_CONTAINER_MOUNT_PATH, "/workspace")
        self.assertEqual(c.VOLUME_PATH_DATASET, "/workspace/dataset")
        self.assertEqual(c.VOLUME_PATH_MODEL, "/workspace/model")
        mount = c.STORAGE_INITIALIZER_VOLUME_MOUNT
        self.assertIsInstance(mount, models.V1VolumeMount)
        self.assertEqual((mount.name, mount.mount_path), ("storage-initializer", "/workspace"))
        if "STORAGE_INITIALIZER_IMAGE" not in os.environ:
            self.assertEqual(c.STORAGE_INITIALIZER_IMAGE,
                             "ghcr.io/kubeflow/training-v1/storage-initializer")
        if "TRAINER_TRANSFORMER_IMAGE" not in os.environ:
            self.assertEqual(c.TRAINER_TRANSFORMER_IMAGE,
                             "ghcr.io/kubeflow/training-v1/trainer-huggingface")

    def test_per_kind_constants(self):
        for kind, (model, plural, container, _) in SEVEN_KINDS.items():
            prefix = kind.upper()
            self.assertEqual(getattr(c, prefix + "_KIND"), kind)
            self.assertEqual(getattr(c, prefix + "_MODEL"), model)
            self.assertEqual(getattr(c, prefix + "_PLURAL"), plural)
            self.assertEqual(getattr(c, prefix + "_CONTAINER"), container)
        self.assertEqual(c.TFJOB_BASE_IMAGE_GPU, "docker.io/tensorflow/tensorflow:2.9.1-gpu")
        self.assertEqual(c.JAXJOB_BASE_IMAGE,
                         "ghcr.io/kubeflow/training-v1/jaxjob-dist-spmd-mnist:latest")


class JobParametersTest(unittest.TestCase):
    def test_all_seven_kinds(self):
        self.assertEqual(list(c.JOB_PARAMETERS), list(SEVEN_KINDS))
        for kind, (model, plural, container, image) in SEVEN_KINDS.items():
            self.assertEqual(c.JOB_PARAMETERS[kind], {"model": model, "plural": plural,
                                                      "container": container,
                                                      "base_image": image}, kind)
            # The model name resolves to the class, as upstream's getattr(models, ...) does.
            self.assertIs(getattr(models, model), models.KIND_MODELS[kind])

    def test_job_models(self):
        self.assertEqual(c.JOB_MODELS, tuple(v[0] for v in SEVEN_KINDS.values()))
        self.assertEqual(set(typing.get_args(c.JOB_MODELS_TYPE)),
                         set(models.KIND_MODELS.values()))

    def test_default_base_image(self):
        self.assertEqual(c.default_base_image("PyTorchJob"), c.PYTORCHJOB_BASE_IMAGE)
        self.assertEqual(c.default_base_image("TFJob"), c.TFJOB_BASE_IMAGE)
        for kind in ("XGBoostJob", "MPIJob", "JAXJob", "MXJob"):
            with self.assertRaises(ValueError) as ctx:
                c.default_base_image(kind)
            self.assertIn(kind, str(ctx.exception))
            self.assertIn(c.JOB_PARAMETERS[kind]["base_image"], c.BASE_IMAGE_UNSET)
        with self.assertRaises(ValueError):
            c.default_base_image("NoSuchJob")


class ReplicaTypeFixesTest(unittest.TestCase):
    def test_jax_is_a_tuple(self):
        self.assertEqual(c.JAXJOB_REPLICA_TYPES, ("worker",))
        self.assertIsInstance(c.JAXJOB_REPLICA_TYPES, tuple)
        self.assertNotIn("work", c.JAXJOB_REPLICA_TYPES)  # upstream's string let this pass

    def test_mxjob(self):
        self.assertEqual(c.MXJOB_REPLICA_TYPES[:4], ("scheduler", "server", "worker", "tuner"))
        self.assertEqual(c.JOB_DEFAULT_PORTS["MXJob"], ("mxjob-port", 9091))
        self.assertEqual(c.JOB_DEFAULT_PORTS["PyTorchJob"], ("pytorchjob-port", 23456))

    def test_all_replica_types(self):
        all_types = c.ALL_REPLICA_TYPES
        self.assertIsInstance(all_types, tuple)
        self.assertEqual(len(all_types), len(set(all_types)))
        for types in c.JOB_REPLICA_TYPES.values():
            for t in types:
                self.assertIn(t, all_types)
        for t in all_types:
            self.assertEqual(t, t.lower())
        for t in ("master", "worker", "chief", "ps", "launcher", "scheduler", "server", "tuner",
                  "evaluator"):
            self.assertIn(t, all_types)
        self.assertNotIn("Master", all_types)
        self.assertEqual(set(c.JOB_REPLICA_TYPES), set(SEVEN_KINDS))


class CurrentNamespaceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        no_pod = mock.patch.object(c, "SERVICE_ACCOUNT_DIR", os.path.join(self.tmp.name, "none"))
        no_pod.start()
        self.addCleanup(no_pod.stop)

    def kubeconfig(self, text, name="config"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    CONFIG = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "contexts": [{"name": "a", "context": {"cluster": "c", "namespace": "team-a"}},
                           {"name": "b", "context": {"cluster": "c", "namespace": "team-b"}},
                           {"name": "n", "context": {"cluster": "c"}}]}

    def test_json_kubeconfig(self):
        path = self.kubeconfig(json.dumps(self.CONFIG))
        self.assertEqual(c.current_namespace(config_file=path), "team-a")
        self.assertEqual(c.current_namespace(config_file=path, context="b"), "team-b")
        self.assertEqual(c.current_namespace(config_file=path, context="n"), "default")
        self.assertEqual(c.current_namespace(config_file=path, context="missing"), "default")

    def test_kubeconfig_env(self):
        path = self.kubeconfig(json.dumps(self.CONFIG))
        with mock.patch.dict(os.environ, {"KUBECONFIG": path + os.pathsep + "/nonexistent"}):
            self.assertEqual(c.current_namespace(), "team-a")
        with mock.patch.dict(os.environ, {"KUBECONFIG": os.path.join(self.tmp.name, "nope")}):
            self.assertEqual(c.current_namespace(), "default")

    def test_yaml_kubeconfig(self):
        try:
            import yaml  # noqa: F401
        except ImportError:
            self.skipTest("PyYAML not installed")
        path = self.kubeconfig("current-context: b\ncontexts:\n- name: b\n  context:\n"
                               "    namespace: team-yaml\n")
        self.assertEqual(c.current_namespace(config_file=path), "team-yaml")

    def test_garbage_kubeconfig(self):
        path = self.kubeconfig("\x00 not a kubeconfig [")
        self.assertEqual(c.current_namespace(config_file=path), "default")

    def test_in_pod(self):
        pod_dir = os.path.join(self.tmp.name, "sa") + os.sep
        os.makedirs(pod_dir + "serviceaccount")
        ns_file = pod_dir + "serviceaccount/namespace"
        with open(ns_file, "w", encoding="utf-8") as f:
            f.write("pod-ns\n")
        path = self.kubeconfig(json.dumps(self.CONFIG))
        with mock.patch.object(c, "SERVICE_ACCOUNT_DIR", pod_dir), \
                mock.patch.object(c, "SERVICE_ACCOUNT_NAMESPACE_FILE", ns_file), \
                mock.patch.dict(os.environ, {"KUBECONFIG": path}):
            self.assertEqual(c.current_namespace(), "pod-ns")  # stripped
            self.assertEqual(c.current_namespace(config_file=path), "team-a")
            os.remove(ns_file)
            self.assertEqual(c.current_namespace(), "team-a")  # missing file falls through


if __name__ == "__main__":
    unittest.main()
