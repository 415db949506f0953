"""Tests of trainctl.models: upstream-compatible model shape, serialize/deserialize, MXJob, and the
kubernetes / stand-in switch. Runs under unittest or pytest, with or without ``kubernetes``.

Set TRAINCTL_TEST_KUBERNETES_PATH to a directory holding an installed ``kubernetes`` package to
also check the kubernetes path in a subprocess where it is not installed system-wide."""

import copy
import datetime
import json
import os
import subprocess
import sys
import textwrap
import unittest

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if SDK_DIR not in sys.path:
    sys.path.insert(0, SDK_DIR)

from trainctl import models  # noqa: E402
from trainctl.models import kube_standins  # noqa: E402

UTC = datetime.timezone.utc

PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "mnist", "namespace": "team-a", "labels": {"app": "mnist"},
                 "creationTimestamp": "2024-05-01T10:00:00Z", "uid": "1234",
                 "resourceVersion": "42"},
    "spec": {
        "nprocPerNode": "2",
        "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3,
                      "schedulingPolicy": {"queue": "q", "minAvailable": 2}},
        "elasticPolicy": {"minReplicas": 1, "maxReplicas": 3,
                          "rdzvConf": [{"key": "timeout", "value": "90"}]},
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": {
                "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {"containers": [{
                    "name": "pytorch", "image": "pytorch:2", "command": ["python", "-u"],
                    "args": ["train.py"],
                    "env": [{"name": "A", "value": "1"},
                            {"name": "POD", "valueFrom": {"fieldRef": {
                                "fieldPath": "metadata.name"}}}],
                    "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                    "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                    "volumes": [{"name": "data", "emptyDir": {}}]}}},
            "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": {
                "spec": {"containers": [{"name": "pytorch", "image": "pytorch:2"}]}}},
        },
    },
    "status": {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated",
             "message": "created", "lastUpdateTime": "2024-05-01T10:00:00Z",
             "lastTransitionTime": "2024-05-01T10:00:00Z"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded",
             "message": "done", "lastUpdateTime": "2024-05-01T10:05:30.250000Z",
             "lastTransitionTime": "2024-05-01T10:05:30.250000Z"},
        ],
        "replicaStatuses": {"Master": {"succeeded": 1, "selector": "a=b"},
                            "Worker": {"succeeded": 2, "restarts": 1}},
        "startTime": "2024-05-01T10:00:01Z",
        "completionTime": "2024-05-01T10:05:30.250000Z",
    },
}


def run_python(code, env_extra=None, drop=()):
    """Runs ``code`` in a fresh interpreter with the SDK on the path; returns stdout."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join([SDK_DIR] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def minimal_spec(**kw):
    return models.KubeflowOrgV1PyTorchJobSpec(
        pytorch_replica_specs={"Master": models.KubeflowOrgV1ReplicaSpec(replicas=1)},
        run_policy=models.KubeflowOrgV1RunPolicy(), **kw)


class RoundTripTest(unittest.TestCase):
    def setUp(self):
        self.job = models.deserialize(copy.deepcopy(PYTORCH_JOB), "KubeflowOrgV1PyTorchJob")

    def test_builds_typed_objects(self):
        job = self.job
        self.assertIsInstance(job, models.KubeflowOrgV1PyTorchJob)
        self.assertIsInstance(job.metadata, models.V1ObjectMeta)
        self.assertEqual(job.metadata.namespace, "team-a")
        master = job.spec.pytorch_replica_specs["Master"]
        self.assertIsInstance(master, models.KubeflowOrgV1ReplicaSpec)
        self.assertIsInstance(master.template, models.V1PodTemplateSpec)
        container = master.template.spec.containers[0]
        self.assertIsInstance(container, models.V1Container)
        self.assertEqual(container.ports[0].container_port, 23456)
        self.assertEqual(container.env[1].value_from.field_ref.field_path, "metadata.name")
        self.assertEqual(container.volume_mounts[0].mount_path, "/data")
        self.assertEqual(job.spec.elastic_policy.rdzv_conf[0].value, "90")
        self.assertEqual(job.spec.run_policy.scheduling_policy.min_available, 2)

    def test_status(self):
        status = self.job.status
        self.assertIsInstance(status, models.KubeflowOrgV1JobStatus)
        self.assertEqual([c.type for c in status.conditions], ["Created", "Succeeded"])
        self.assertIsInstance(status.conditions[0], models.KubeflowOrgV1JobCondition)
        self.assertEqual(status.conditions[1].last_transition_time,
                         datetime.datetime(2024, 5, 1, 10, 5, 30, 250000, tzinfo=UTC))
        self.assertIsNotNone(status.start_time.tzinfo)
        self.assertEqual(set(status.replica_statuses), {"Master", "Worker"})
        self.assertEqual(status.replica_statuses["Master"].succeeded, 1)
        self.assertEqual(status.replica_statuses["Worker"].restarts, 1)
        self.assertIsInstance(self.job.metadata.creation_timestamp, datetime.datetime)

    def test_serialize_gives_back_the_json(self):
        out = models.serialize(self.job)
        self.assertEqual(out, PYTORCH_JOB)
        json.dumps(out)  # JSON-ready
        again = models.serialize(models.deserialize(out, models.KubeflowOrgV1PyTorchJob))
        self.assertEqual(again, out)

    def test_deserialize_accepts_json_text(self):
        job = models.deserialize(json.dumps(PYTORCH_JOB), "KubeflowOrgV1PyTorchJob")
        self.assertEqual(job, self.job)

    def test_list_and_dict_type_strings(self):
        items = models.deserialize([PYTORCH_JOB, PYTORCH_JOB], "list[KubeflowOrgV1PyTorchJob]")
        self.assertEqual(len(items), 2)
        self.assertEqual(items[0], self.job)
        specs = models.deserialize(PYTORCH_JOB["spec"]["pytorchReplicaSpecs"],
                                   "dict(str, KubeflowOrgV1ReplicaSpec)")
        self.assertEqual(specs["Worker"].replicas, 2)
        job_list = models.deserialize({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList",
                                       "metadata": {"continue": "tok"}, "items": [PYTORCH_JOB]},
                                      "KubeflowOrgV1PyTorchJobList")
        self.assertEqual(job_list.items[0].metadata.name, "mnist")
        self.assertEqual(job_list.metadata._continue, "tok")
        self.assertEqual(models.serialize(job_list)["metadata"], {"continue": "tok"})

    def test_to_dict_round_trip(self):
        rebuilt = models.deserialize(self.job.to_dict(), "KubeflowOrgV1PyTorchJob")
        self.assertEqual(rebuilt, self.job)


class ModelShapeTest(unittest.TestCase):
    def test_required_in_constructor(self):
        with self.assertRaises(ValueError) as ctx:
            models.KubeflowOrgV1PyTorchJobSpec(run_policy=models.KubeflowOrgV1RunPolicy())
        self.assertEqual(str(ctx.exception),
                         "Invalid value for `pytorch_replica_specs`, must not be `None`")
        with self.assertRaises(ValueError) as ctx:
            models.KubeflowOrgV1PyTorchJobSpec(pytorch_replica_specs={})
        self.assertEqual(str(ctx.exception), "Invalid value for `run_policy`, must not be `None`")
        with self.assertRaises(ValueError) as ctx:
            models.KubeflowOrgV1JobCondition(type="Created")
        self.assertEqual(str(ctx.exception), "Invalid value for `status`, must not be `None`")
        with self.assertRaises(ValueError) as ctx:
            models.KubeflowOrgV1JobCondition(status="True")
        self.assertEqual(str(ctx.exception), "Invalid value for `type`, must not be `None`")
        with self.assertRaises(ValueError):
            models.KubeflowOrgV1TFJobList()

    def test_required_per_kind(self):
        expected = {
            "KubeflowOrgV1PyTorchJobSpec": {"pytorch_replica_specs", "run_policy"},
            "KubeflowOrgV1TFJobSpec": {"tf_replica_specs", "run_policy"},
            "KubeflowOrgV1XGBoostJobSpec": {"xgb_replica_specs", "run_policy"},
            "KubeflowOrgV1MPIJobSpec": {"mpi_replica_specs"},
            "KubeflowOrgV1PaddleJobSpec": {"paddle_replica_specs", "run_policy"},
            "KubeflowOrgV1JAXJobSpec": {"jax_replica_specs", "run_policy"},
            "KubeflowOrgV1MXJobSpec": {"mx_replica_specs", "run_policy"},
            "KubeflowOrgV1JobCondition": {"status", "type"},
            "KubeflowOrgV1ReplicaSpec": set(),
            "KubeflowOrgV1JobStatus": set(),
        }
        for name, required in expected.items():
            self.assertEqual(set(getattr(models, name).required_attributes), required, name)
        # MPIJobSpec without run_policy is fine, as upstream.
        spec = models.KubeflowOrgV1MPIJobSpec(mpi_replica_specs={})
        self.assertIsNone(spec.run_policy)

    def test_required_in_setter(self):
        spec = minimal_spec()
        with self.assertRaises(ValueError) as ctx:
            spec.run_policy = None
        self.assertIn("`run_policy`", str(ctx.exception))
        self.assertIsNotNone(spec.run_policy)
        spec.elastic_policy = None  # optional: fine
        self.assertIsNone(spec.elastic_policy)

    def test_validation_off(self):
        class Config:
            client_side_validation = False
        spec = models.KubeflowOrgV1PyTorchJobSpec(local_vars_configuration=Config())
        self.assertIsNone(spec.run_policy)
        spec.run_policy = None

    def test_to_dict_snake_case(self):
        job = models.KubeflowOrgV1PyTorchJob(
            api_version="kubeflow.org/v1", kind="PyTorchJob",
            metadata=models.V1ObjectMeta(name="x"),
            spec=minimal_spec(nproc_per_node="2"))
        d = job.to_dict()
        self.assertEqual(set(d), {"api_version", "kind", "metadata", "spec", "status"})
        self.assertIsNone(d["status"])
        self.assertEqual(d["spec"]["nproc_per_node"], "2")
        self.assertEqual(d["spec"]["pytorch_replica_specs"]["Master"]["replicas"], 1)
        self.assertIn("restart_policy", d["spec"]["pytorch_replica_specs"]["Master"])
        self.assertEqual(d["metadata"]["name"], "x")
        self.assertIn("clean_pod_policy", d["spec"]["run_policy"])
        keys = job.to_dict(serialize=True)
        self.assertIn("apiVersion", keys)
        self.assertIn("pytorchReplicaSpecs", keys["spec"])
        self.assertEqual(eval(repr(job)), d)  # repr is the pretty-printed dict
        self.assertEqual(job.to_str(), repr(job))

    def test_serialize_drops_none_of_models_keeps_none_of_dicts(self):
        spec = minimal_spec()
        self.assertEqual(models.serialize(spec),
                         {"pytorchReplicaSpecs": {"Master": {"replicas": 1}}, "runPolicy": {}})
        self.assertEqual(models.serialize({"a": None, "b": (1, 2)}), {"a": None, "b": [1, 2]})
        when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
        self.assertEqual(models.serialize(when), "2024-01-02T03:04:05Z")
        self.assertEqual(models.serialize(when.replace(tzinfo=None)), "2024-01-02T03:04:05Z")
        plus2 = datetime.timezone(datetime.timedelta(hours=2))
        self.assertEqual(models.serialize(when.replace(tzinfo=plus2)), "2024-01-02T03:04:05+02:00")
        with self.assertRaises(TypeError):
            models.serialize(object())

    def test_equality(self):
        a, b = minimal_spec(), minimal_spec()
        self.assertEqual(a, b)
        self.assertFalse(a != b)
        b.nproc_per_node = "4"
        self.assertNotEqual(a, b)
        self.assertTrue(a != b)
        self.assertNotEqual(models.KubeflowOrgV1RDZVConf(key="k"),
                            models.KubeflowOrgV1ReplicaStatus())
        self.assertNotEqual(models.KubeflowOrgV1RDZVConf(key="k"), {"key": "k", "value": None})

    def test_positional_and_bad_arguments(self):
        spec = models.KubeflowOrgV1ReplicaSpec(2, "Never")
        self.assertEqual((spec.replicas, spec.restart_policy), (2, "Never"))
        with self.assertRaises(TypeError):
            models.KubeflowOrgV1ReplicaSpec(replica=1)
        with self.assertRaises(TypeError):
            models.KubeflowOrgV1ReplicaSpec(1, replicas=1)

    def test_field_names_match_upstream(self):
        self.assertEqual(list(models.KubeflowOrgV1RunPolicy.openapi_types), [
            "active_deadline_seconds", "backoff_limit", "clean_pod_policy", "managed_by",
            "scheduling_policy", "suspend", "ttl_seconds_after_finished"])
        self.assertEqual(models.KubeflowOrgV1ElasticPolicy.attribute_map["n_proc_per_node"],
                         "nProcPerNode")
        self.assertEqual(models.KubeflowOrgV1JobStatus.openapi_types["replica_statuses"],
                         "dict(str, KubeflowOrgV1ReplicaStatus)")
        self.assertEqual(models.KubeflowOrgV1JobStatus.openapi_types["conditions"],
                         "list[KubeflowOrgV1JobCondition]")
        self.assertEqual(models.KubeflowOrgV1PyTorchJobList.openapi_types["metadata"],
                         "V1ListMeta")
        for cls in models.KUBEFLOW_MODELS.values():
            self.assertEqual(set(cls.openapi_types), set(cls.attribute_map), cls.__name__)
            self.assertTrue(cls.__name__.startswith("KubeflowOrgV1"))

    def test_all_upstream_models_present(self):
        upstream = """ElasticPolicy JAXJob JAXJobList JAXJobSpec JobCondition JobStatus MPIJob
            MPIJobList MPIJobSpec PaddleElasticPolicy PaddleJob PaddleJobList PaddleJobSpec
            PyTorchJob PyTorchJobList PyTorchJobSpec RDZVConf ReplicaSpec ReplicaStatus RunPolicy
            SchedulingPolicy TFJob TFJobList TFJobSpec XGBoostJob XGBoostJobList
            XGBoostJobSpec""".split()
        ours = set(models.KUBEFLOW_MODELS)
        for name in upstream:
            self.assertIn("KubeflowOrgV1" + name, ours)
            self.assertIn("KubeflowOrgV1" + name, models.__all__)
        extra = {"KubeflowOrgV1" + n for n in ("MXJob", "MXJobList", "MXJobSpec",
                                                "TrainerStatus", "TrainerMetric")}
        self.assertEqual(ours - {"KubeflowOrgV1" + n for n in upstream}, extra)


class KindsAndMXJobTest(unittest.TestCase):
    def test_kind_models(self):
        self.assertEqual(set(models.KIND_MODELS), {
            "PyTorchJob", "TFJob", "XGBoostJob", "MPIJob", "PaddleJob", "JAXJob", "MXJob"})
        for kind, cls in models.KIND_MODELS.items():
            self.assertEqual(cls.__name__, "KubeflowOrgV1" + kind)
            self.assertEqual(models.KIND_LIST_MODELS[kind].__name__, cls.__name__ + "List")
            spec_cls = getattr(models, cls.openapi_types["spec"])
            self.assertIn(models.REPLICA_SPECS_ATTRIBUTE[kind], spec_cls.openapi_types)
            self.assertEqual(cls.openapi_types["status"], "KubeflowOrgV1JobStatus")

    def test_mxjob(self):
        self.assertEqual(models.KubeflowOrgV1MXJobSpec.attribute_map, {
            "job_mode": "jobMode", "mx_replica_specs": "mxReplicaSpecs",
            "run_policy": "runPolicy"})
        data = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                "metadata": {"name": "mx"},
                "spec": {"jobMode": "MXTrain", "runPolicy": {},
                         "mxReplicaSpecs": {t: {"replicas": 1, "template": {"spec": {
                             "containers": [{"name": "mxnet", "image": "mx",
                                             "ports": [{"name": "mxjob-port",
                                                        "containerPort": 9091}]}]}}}
                             for t in ("Scheduler", "Server", "Worker")}}}
        job = models.deserialize(data, "KubeflowOrgV1MXJob")
        self.assertIsInstance(job, models.KubeflowOrgV1MXJob)
        self.assertEqual(job.spec.job_mode, "MXTrain")
        self.assertEqual(set(job.spec.mx_replica_specs), {"Scheduler", "Server", "Worker"})
        self.assertEqual(models.serialize(job), data)
        with self.assertRaises(ValueError):
            models.KubeflowOrgV1MXJobSpec(job_mode="MXTrain", run_policy=None,
                                          mx_replica_specs={})
        spec = models.KubeflowOrgV1MXJobSpec(mx_replica_specs={},
                                             run_policy=models.KubeflowOrgV1RunPolicy())
        self.assertIsNone(spec.job_mode)


class ServerDataTest(unittest.TestCase):
    def test_missing_status_and_unknown_fields(self):
        data = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "futureField": {"x": 1},
                "metadata": {"name": "t", "someNewMeta": True},
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "unknown": 3}},
                         "newSpecThing": 1}}
        job = models.deserialize(data, "KubeflowOrgV1TFJob")
        self.assertIsNone(job.status)
        self.assertIsNone(job.spec.run_policy)  # required, but absent from the server's object
        self.assertEqual(job.spec.tf_replica_specs["Worker"].replicas, 1)
        self.assertNotIn("futureField", models.serialize(job))
        with self.assertRaises(ValueError):  # validation is back on after building
            job.spec.run_policy = None

    def test_nulls_and_odd_shapes(self):
        data = {"kind": "PyTorchJob", "metadata": None, "spec": None,
                "status": {"conditions": None, "replicaStatuses": None,
                           "startTime": "not a time", "completionTime": 5}}
        job = models.deserialize(data, models.KubeflowOrgV1PyTorchJob)
        self.assertIsNone(job.status.conditions)
        self.assertIsNone(job.status.replica_statuses)
        self.assertEqual(job.status.start_time, "not a time")
        self.assertEqual(job.status.completion_time, 5)
        odd = models.deserialize({"status": {"conditions": "oops",
                                             "replicaStatuses": ["x"]}},
                                 "KubeflowOrgV1PyTorchJob")
        self.assertEqual(odd.status.conditions, "oops")
        self.assertEqual(odd.status.replica_statuses, ["x"])
        cond = models.deserialize({"message": "no type or status"}, "KubeflowOrgV1JobCondition")
        self.assertIsNone(cond.type)
        self.assertIsNone(models.deserialize(None, "KubeflowOrgV1PyTorchJob"))
        self.assertEqual(models.deserialize("x", "NoSuchType"), "x")
        self.assertEqual(models.deserialize("nope{", "KubeflowOrgV1PyTorchJob"), "nope{")
        self.assertEqual(models.deserialize("3", "int"), 3)
        self.assertEqual(models.deserialize("false", "bool"), False)

    def test_untyped_upstream_fields(self):
        # Upstream's own ApiClient fails on these two type names; ours keeps the data.
        spec = models.deserialize({
            "pytorchReplicaSpecs": {}, "runPolicy": {
                "schedulingPolicy": {"minResources": {"cpu": "2", "memory": "1Gi"}}},
            "elasticPolicy": {"metrics": [{"type": "Resource",
                                           "resource": {"name": "cpu"}}]}},
            "KubeflowOrgV1PyTorchJobSpec")
        self.assertEqual(spec.run_policy.scheduling_policy.min_resources,
                         {"cpu": "2", "memory": "1Gi"})
        metric = spec.elastic_policy.metrics[0]
        self.assertEqual(models.serialize(metric), {"type": "Resource",
                                                    "resource": {"name": "cpu"}})

    def test_datetime_forms(self):
        parse = models.deserialize
        self.assertEqual(parse("2024-01-01T00:00:00Z", "datetime"),
                         datetime.datetime(2024, 1, 1, tzinfo=UTC))
        self.assertEqual(parse("2024-01-01T00:00:00.123456789Z", "datetime").microsecond,
                         123456)
        self.assertEqual(parse("2024-01-01T02:00:00+02:00", "datetime"),
                         datetime.datetime(2024, 1, 1, tzinfo=UTC))
        self.assertIsNotNone(parse("2024-01-01T00:00:00", "datetime").tzinfo)


class KubernetesObjectsTest(unittest.TestCase):
    NAMES = ["V1ObjectMeta", "V1PodTemplateSpec", "V1PodSpec", "V1Container", "V1EnvVar",
             "V1EnvVarSource", "V1ResourceRequirements", "V1Volume", "V1VolumeMount",
             "V1ContainerPort", "V1Pod", "V1PodStatus", "V1ContainerStatus", "V1ContainerState",
             "V1ContainerStateTerminated", "V1ContainerStateRunning", "V1ContainerStateWaiting",
             "V1PodList", "V1DeleteOptions", "V1ObjectReference", "CoreV1Event",
             "V1PersistentVolumeClaim", "V1PersistentVolumeClaimSpec", "V1ListMeta",
             "V1LabelSelector"]

    def test_names_exported(self):
        for name in self.NAMES:
            cls = getattr(models, name)
            self.assertTrue(isinstance(cls.openapi_types, dict), name)
            self.assertIn(name, models.__all__)

    def test_pod_round_trip(self):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "mnist-master-0", "labels": {
                   "training.kubeflow.org/replica-type": "master"}},
               "spec": {"containers": [{"name": "pytorch", "image": "i"}],
                        "hostIPC": True, "restartPolicy": "Never"},
               "status": {"phase": "Failed", "podIP": "10.0.0.1",
                          "containerStatuses": [{
                              "name": "pytorch", "ready": False, "restartCount": 2,
                              "image": "i", "imageID": "sha", "containerID": "c://1",
                              "state": {"terminated": {"exitCode": 3, "reason": "Error",
                                                       "finishedAt": "2024-01-01T00:00:09Z"}}}]}}
        obj = models.deserialize(pod, "V1Pod")
        self.assertIsInstance(obj, models.V1Pod)
        self.assertTrue(obj.spec.host_ipc)
        self.assertEqual(obj.status.pod_ip, "10.0.0.1")
        term = obj.status.container_statuses[0].state.terminated
        self.assertEqual(term.exit_code, 3)
        self.assertEqual(term.finished_at, datetime.datetime(2024, 1, 1, 0, 0, 9, tzinfo=UTC))
        self.assertEqual(models.serialize(obj), pod)
        self.assertEqual(obj.to_dict()["status"]["container_statuses"][0]["restart_count"], 2)

    def test_mixed_tree_to_dict(self):
        template = models.V1PodTemplateSpec(spec=models.V1PodSpec(containers=[
            models.V1Container(name="pytorch", env=[models.V1EnvVar(name="A", value="1")])]))
        spec = models.KubeflowOrgV1ReplicaSpec(replicas=1, template=template)
        d = spec.to_dict()
        self.assertEqual(d["template"]["spec"]["containers"][0]["env"][0],
                         {"name": "A", "value": "1", "value_from": None})
        self.assertEqual(models.serialize(spec), {"replicas": 1, "template": {"spec": {
            "containers": [{"name": "pytorch", "env": [{"name": "A", "value": "1"}]}]}}})

    def test_kubernetes_required_fields(self):
        with self.assertRaises(ValueError):
            models.V1Container(image="x")  # name is required, in kubernetes and stand-ins
        container = models.deserialize({"image": "x"}, "V1Container")
        self.assertEqual(container.image, "x")

    def test_in_process_mode_matches_environment(self):
        try:
            import kubernetes.client as kc  # noqa: F401
            importable = True
        except Exception:
            importable = False
        forced_off = os.environ.get(models.ENV_NO_KUBERNETES, "").lower() in (
            "1", "true", "yes", "on")
        self.assertEqual(models.USING_KUBERNETES, importable and not forced_off)
        if models.USING_KUBERNETES:
            self.assertTrue(models.V1Pod.__module__.startswith("kubernetes."))
            self.assertTrue(models.V1Affinity.__module__.startswith("kubernetes."))
        else:
            self.assertIs(models.V1Pod, kube_standins.V1Pod)
            with self.assertRaises(AttributeError):
                models.V1Affinity  # noqa: B018


class StandinSubprocessTest(unittest.TestCase):
    CHECK = """
        import json
        from trainctl import models, constants
        from trainctl.models import kube_standins
        job = models.deserialize(json.loads(%r), "KubeflowOrgV1PyTorchJob")
        print(json.dumps({
            "using": models.USING_KUBERNETES,
            "meta_module": type(job.metadata).__module__,
            "container_module": models.V1Container.__module__,
            "round_trip": models.serialize(job) == json.loads(%r),
            "succeeded": job.status.replica_statuses["Master"].succeeded,
            "mount": constants.STORAGE_INITIALIZER_VOLUME_MOUNT.mount_path,
        }))
    """ % (json.dumps(PYTORCH_JOB), json.dumps(PYTORCH_JOB))

    def test_forced_standins(self):
        out = json.loads(run_python(self.CHECK, {"TRAINCTL_SDK_NO_KUBERNETES": "1"}))
        self.assertFalse(out["using"])
        self.assertEqual(out["meta_module"], "trainctl.models.kube_standins")
        self.assertEqual(out["container_module"], "trainctl.models.kube_standins")
        self.assertTrue(out["round_trip"])
        self.assertEqual(out["succeeded"], 1)
        self.assertEqual(out["mount"], "/workspace")

    def test_with_kubernetes_when_available(self):
        extra = os.environ.get("TRAINCTL_TEST_KUBERNETES_PATH")
        env = {}
        if extra:
            env["PYTHONPATH"] = os.pathsep.join([SDK_DIR, extra])
        probe = run_python("""
            try:
                import kubernetes.client
                print("yes")
            except Exception:
                print("no")
        """, env)
        if probe.strip() != "yes":
            self.skipTest("kubernetes is not importable (set TRAINCTL_TEST_KUBERNETES_PATH)")
        out = json.loads(run_python(self.CHECK, env, drop=("TRAINCTL_SDK_NO_KUBERNETES",)))
        self.assertTrue(out["using"])
        self.assertTrue(out["meta_module"].startswith("kubernetes.client"))
        self.assertTrue(out["round_trip"])
        self.assertEqual(out["succeeded"], 1)


if __name__ == "__main__":
    unittest.main()
