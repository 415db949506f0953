#!/usr/bin/python3
"""Generates the CustomResourceDefinitions in manifests/crds/.

    hack/gen-crds.py           write manifests/crds/<group>_<plural>.yaml
    hack/gen-crds.py --check   exit 1 (listing the files) if the committed files differ

Standard library only and deterministic: the same script always writes the same bytes.

The schemas are structural (apiextensions.k8s.io/v1) but deliberately not complete: a replica
spec's `template` keeps whatever the user wrote (x-kubernetes-preserve-unknown-fields) instead of
carrying the whole core PodTemplateSpec schema, except for `template.metadata.labels` and
`.annotations`, which are typed maps so that they are certainly kept, and the defaults of the
core schema inside containers (a port's protocol TCP, …), which Kueue relies on. Sub-objects whose exact
shape trainctl does not interpret (metric specs, minResources, labelSelector) also keep unknown
fields rather than dropping data.

kubeflow.org: every kind is served as v1 (the storage version). MPIJob is also served as v2beta1
(the MPI Operator v2's API): the API server converts between the two through the operator's
conversion webhook (operator/conversion_review.h), whose caBundle the operator fills in.

trainer.kubeflow.org/v1alpha1 (Kubeflow Trainer v2.3.0): TrainJob, TrainingRuntime and
ClusterTrainingRuntime with upstream's names, scope, defaults, CEL rules (their messages as
upstream words them: users see them), limits and list keys. Inside a runtime's JobSet template,
Job and pod specs (and a runtime patch's volumes, affinity and security contexts) keep unknown
fields instead of embedding the core/v1 schemas; replicated jobs and every metadata are typed.
Not listed in manifests/kustomization.yaml yet: the operator does not serve that group.
"""

import argparse
import json
import re
import sys
from pathlib import Path

GROUP = "kubeflow.org"
VERSION = "v1"
ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "manifests" / "crds"

# ---------------------------------------------------------------------------------------------
# Schema building blocks


def string(description=None, enum=None, fmt=None):
    s = {"type": "string"}
    if fmt:
        s["format"] = fmt
    if enum:
        s["enum"] = list(enum)
    if description:
        s["description"] = description
    return s


def int32(description=None):
    s = {"type": "integer", "format": "int32"}
    if description:
        s["description"] = description
    return s


def int64(description=None):
    s = {"type": "integer", "format": "int64"}
    if description:
        s["description"] = description
    return s


def boolean(description=None, default=None):
    s = {"type": "boolean"}
    if default is not None:
        s["default"] = default
    if description:
        s["description"] = description
    return s


def obj(properties=None, description=None, required=None, preserve=False, **extra):
    s = {"type": "object"}
    if description:
        s["description"] = description
    if properties:
        s["properties"] = properties
    if required:
        s["required"] = list(required)
    if preserve:
        s["x-kubernetes-preserve-unknown-fields"] = True
    s.update(extra)
    return s


def string_map(description):
    return obj(description=description, additionalProperties={"type": "string"})


def free_object(description):
    return obj(description=description, preserve=True)


def array(items, description=None):
    s = {"type": "array", "items": items}
    if description:
        s["description"] = description
    return s


def scheduling_policy():
    return obj(
        description="Gang-scheduling hints, used when the operator runs with --gang-scheduler-name.",
        properties={
            "minAvailable": int32("Minimum number of pods scheduled together (default: all replicas)."),
            "queue": string(
                "Volcano queue of the PodGroup. Immutable once set.",
            )
            | {
                "x-kubernetes-validations": [
                    {
                        "rule": "self == oldSelf",
                        "message": "spec.runPolicy.schedulingPolicy.queue is immutable",
                    }
                ]
            },
            "minResources": free_object(
                "Resource name to quantity; the PodGroup's minimum resources."
            ),
            "priorityClass": string("PriorityClass name of the PodGroup."),
            "scheduleTimeoutSeconds": int32("scheduler-plugins PodGroup schedule timeout."),
        },
    )


CLEAN_POD_POLICY = ("All", "Running", "None")


def run_policy():
    return obj(
        description="Lifecycle of the job and its pods, shared by every kind.",
        properties={
            "cleanPodPolicy": string(
                "Pods to delete when the job finishes (default None).", enum=CLEAN_POD_POLICY
            ),
            "ttlSecondsAfterFinished": int32(
                "Delete the job this many seconds after it finished; unset keeps it."
            ),
            "activeDeadlineSeconds": int64(
                "Fail the job once it has been running this many seconds."
            ),
            "backoffLimit": int32("Retries before the job is marked Failed."),
            "schedulingPolicy": scheduling_policy(),
            "suspend": boolean("true deletes the job's pods and keeps it idle.", default=False),
            "managedBy": string(
                "Controller that reconciles the job; any value other than "
                "kubeflow.org/training-operator leaves the job to another controller."
            ),
        },
    )


def defaulted_container():
    """A core/v1 Container kept as written, with the defaults the API server gives one in a CRD
    that embeds the whole core schema (upstream's kubeflow.org CRDs, Kueue's Workload). Kueue
    compares a job's containers with those of the job's Workload and remakes a Workload that
    differs, so both must be defaulted alike (a port without a protocol is TCP)."""

    def named_ref():
        return obj(preserve=True, properties={"name": string() | {"default": ""}})

    def probe():
        grpc = obj(preserve=True, properties={"service": string() | {"default": ""}})
        return obj(preserve=True, properties={"grpc": grpc})

    value_from = obj(
        preserve=True,
        properties={
            "configMapKeyRef": named_ref(),
            "secretKeyRef": named_ref(),
            "fileKeyRef": obj(preserve=True, properties={"optional": boolean(default=False)}),
        },
    )
    return obj(
        preserve=True,
        properties={
            "ports": array(obj(preserve=True, properties={"protocol": string() | {"default": "TCP"}})),
            "env": array(obj(preserve=True, properties={"valueFrom": value_from})),
            "envFrom": array(
                obj(preserve=True, properties={"configMapRef": named_ref(), "secretRef": named_ref()})
            ),
            "livenessProbe": probe(),
            "readinessProbe": probe(),
            "startupProbe": probe(),
        },
    )


def pod_template():
    return obj(
        description=(
            "Pod template (core/v1 PodTemplateSpec). Kept as written; metadata.labels and "
            "metadata.annotations are typed, and containers get the core defaults."
        ),
        preserve=True,
        properties={
            "metadata": obj(
                preserve=True,
                properties={
                    "labels": string_map("Labels copied onto the replica's pods."),
                    "annotations": string_map("Annotations copied onto the replica's pods."),
                },
            ),
            "spec": obj(
                preserve=True,
                properties={
                    "containers": array(defaulted_container()),
                    "initContainers": array(defaulted_container()),
                },
            ),
        },
    )


def replica_spec():
    return obj(
        description="One replica type: how many pods, from which template, restarted how.",
        properties={
            "replicas": int32("Number of pods of this type (default 1)."),
            "restartPolicy": string(
                "Always, OnFailure, Never, or ExitCode (exit codes 1-127 are permanent "
                "failures, 128 and above are restarted).",
                enum=("Always", "OnFailure", "Never", "ExitCode"),
            ),
            "template": pod_template(),
        },
    )


def replica_specs(types):
    return obj(
        description="Replica specs keyed by replica type (" + ", ".join(types) + ").",
        additionalProperties=replica_spec(),
    )


def metrics():
    return array(
        free_object("An autoscaling/v2 MetricSpec."),
        "Metrics for the HorizontalPodAutoscaler that scales the Worker replicas.",
    )


def pytorch_elastic_policy():
    return obj(
        description="torchrun elastic launch settings; with metrics, an HPA scales the Workers.",
        properties={
            "minReplicas": int32("Lower bound of the Worker count."),
            "maxReplicas": int32("Upper bound of the Worker count."),
            "rdzvBackend": string("Rendezvous backend: c10d, etcd or etcd-v2."),
            "rdzvPort": int32("Rendezvous port (default: the Worker's pytorchjob-port)."),
            "rdzvHost": string("Rendezvous host (default: <job>-worker-0)."),
            "rdzvId": string("Rendezvous id."),
            "rdzvConf": array(
                obj(properties={"key": string(), "value": string()}),
                "Extra rendezvous configuration, passed as key=value pairs.",
            ),
            "standalone": boolean("Use torchrun --standalone."),
            "nProcPerNode": int32("Deprecated: use spec.nprocPerNode."),
            "maxRestarts": int32("torchrun --max-restarts."),
            "metrics": metrics(),
        },
    )


def paddle_elastic_policy():
    return obj(
        description="Elastic bounds of the Worker count.",
        properties={
            "minReplicas": int32(),
            "maxReplicas": int32(),
            "maxRestarts": int32(),
            "metrics": metrics(),
        },
    )


def condition():
    return obj(
        description="One observed state of the job.",
        required=("type", "status"),
        properties={
            "type": string("Created, Running, Restarting, Succeeded, Suspended or Failed."),
            "status": string("True, False or Unknown."),
            "reason": string("<Kind><State>, for example PyTorchJobRunning."),
            "message": string("Human-readable detail."),
            "lastUpdateTime": string(fmt="date-time"),
            "lastTransitionTime": string(fmt="date-time"),
        },
    )


def replica_status():
    return obj(
        description="Pod counts of one replica type.",
        properties={
            "active": int32("Running pods."),
            "succeeded": int32("Pods that succeeded."),
            "failed": int32("Pods that failed."),
            "labelSelector": free_object("Deprecated; never set."),
            "selector": string("Label selector of this type's pods (used by the scale subresource)."),
            "restarts": int32(
                "trainctl extension: every retry of this type so far (replicas recreated after a "
                "failure, and container restarts in place), counted against runPolicy.backoffLimit."
            ),
            "pastRestarts": int32(
                "trainctl extension: the part of restarts that belongs to replicas no longer there "
                "(recreated ones, with their in-place restarts)."
            ),
        },
    )


def job_status():
    return obj(
        description="Observed state of the job, written by the operator.",
        properties={
            "conditions": array(condition(), "Conditions in the order they were first added."),
            "replicaStatuses": obj(
                description="Pod counts keyed by replica type.",
                additionalProperties=replica_status(),
            ),
            "startTime": string(fmt="date-time"),
            "completionTime": string(fmt="date-time"),
            "lastReconcileTime": string(fmt="date-time"),
        },
    )


# ---------------------------------------------------------------------------------------------
# The kinds


KINDS = [
    {
        "kind": "PyTorchJob",
        "map": "pytorchReplicaSpecs",
        "types": ("Master", "Worker"),
        "scale": True,
        "extra": lambda: {
            "elasticPolicy": pytorch_elastic_policy(),
            "nprocPerNode": string(
                "Processes per pod: auto, cpu, gpu or an integer (default auto)."
            ),
        },
    },
    {
        "kind": "TFJob",
        "map": "tfReplicaSpecs",
        "types": ("Chief", "Master", "PS", "Worker", "Evaluator"),
        "extra": lambda: {
            "successPolicy": string(
                'When the job succeeds: "" (chief, or worker 0, succeeded) or AllWorkers.'
            ),
            "enableDynamicWorker": boolean("Sparse TF_CONFIG, so that Workers can be added."),
        },
    },
    {
        "kind": "XGBoostJob",
        "map": "xgbReplicaSpecs",
        "types": ("Master", "Worker"),
        "extra": dict,
    },
    {
        "kind": "MPIJob",
        "map": "mpiReplicaSpecs",
        "types": ("Launcher", "Worker"),
        "age_first": True,
        "extra": lambda: {
            "slotsPerWorker": int32("Slots per worker in the hostfile (default 1)."),
            "cleanPodPolicy": string(
                "Legacy copy of runPolicy.cleanPodPolicy; runPolicy wins when both are set.",
                enum=CLEAN_POD_POLICY,
            ),
            "mainContainer": string("Container that kubexec.sh runs commands in."),
        },
    },
    {
        "kind": "PaddleJob",
        "map": "paddleReplicaSpecs",
        "types": ("Master", "Worker"),
        "scale": True,
        "extra": lambda: {"elasticPolicy": paddle_elastic_policy()},
    },
    {
        "kind": "JAXJob",
        "map": "jaxReplicaSpecs",
        "types": ("Worker",),
        "scale": True,
        "extra": dict,
    },
    {
        "kind": "MXJob",
        "map": "mxReplicaSpecs",
        "types": ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
        "extra": lambda: {
            "jobMode": string("MXTrain or MXTune.", enum=("MXTrain", "MXTune")),
        },
    },
]


MPI_V2_SPEC = {
    "slotsPerWorker": lambda: int32("Slots per worker in the hostfile (default 1)."),
    "runLauncherAsWorker": lambda: boolean(
        "The launcher is also a worker: it is in the hostfile and runs ranks.", default=False
    ),
    "sshAuthMountPath": lambda: string(
        "Where the SSH key Secret is mounted in every pod (default /root/.ssh)."
    ),
    "launcherCreationPolicy": lambda: string(
        "When the launcher is made: AtStartup (default) or WaitForWorkersReady.",
        enum=("AtStartup", "WaitForWorkersReady"),
    ),
    "mpiImplementation": lambda: string(
        "OpenMPI (default), Intel or MPICH: the hostfile's format and the launcher's env.",
        enum=("OpenMPI", "Intel", "MPICH"),
    ),
}

# The conversion webhook the operator serves (its Service, as for the validating webhooks).
CONVERSION = {
    "MPIJob": {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "trainctl-operator",
                    "namespace": "trainctl-system",
                    "path": "/convert-kubeflow-org-mpijob",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
}


def job_schema(description, spec):
    """A job object's top-level schema: its spec and the common status."""
    return obj(
        description=description,
        required=("spec",),
        properties={
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": job_status(),
        },
    )


def mpi_v2beta1_version(columns):
    """MPIJob as kubeflow.org/v2beta1 (mpi-operator v0.8.0's fields); served, not stored."""
    spec_props = {name: make() for name, make in MPI_V2_SPEC.items()}
    spec_props["runPolicy"] = run_policy()
    spec_props["mpiReplicaSpecs"] = replica_specs(("Launcher", "Worker"))
    spec = obj(
        description="Desired state of the MPIJob (kubeflow.org/v2beta1).",
        required=("mpiReplicaSpecs",),
        properties=dict(sorted(spec_props.items())),
    )
    schema = job_schema(
        "MPIJob as the MPI Operator v2 defines it (kubeflow.org/v2beta1, served by trainctl, "
        "stored as v1 through its conversion webhook).",
        spec,
    )
    return {
        "name": "v2beta1",
        "served": True,
        "storage": False,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}},
        "additionalPrinterColumns": columns,
    }


def plural(kind):
    return kind.lower() + "s"


# kubectl get's columns for every kind with conditions: the last condition's type, and the age.
STATE_AND_AGE_COLUMNS = (
    {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def crd_document(group, kind, scope, versions):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural(kind)}.{group}",
            "labels": {"app.kubernetes.io/part-of": "trainctl"},
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": kind + "List",
                "plural": plural(kind),
                "singular": kind.lower(),
            },
            "scope": scope,
            "versions": versions,
        },
    }


def crd(k):
    kind = k["kind"]
    spec_props = {"runPolicy": run_policy()}
    spec_props.update(k["extra"]())
    spec_props[k["map"]] = replica_specs(k["types"])
    spec = obj(
        description=f"Desired state of the {kind}.",
        required=(k["map"],),
        properties=dict(sorted(spec_props.items())),
    )
    schema = job_schema(
        f"{kind}: a distributed training job (kubeflow.org/v1, served by trainctl).", spec
    )
    state, age = STATE_AND_AGE_COLUMNS
    subresources = {"status": {}}
    if k.get("scale"):
        subresources["scale"] = {
            "specReplicasPath": f".spec.{k['map']}.Worker.replicas",
            "statusReplicasPath": ".status.replicaStatuses.Worker.active",
            "labelSelectorPath": ".status.replicaStatuses.Worker.selector",
        }
    columns = [age, state] if k.get("age_first") else [state, age]
    versions = [
        {
            "name": VERSION,
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": schema},
            "subresources": subresources,
            "additionalPrinterColumns": columns,
        }
    ]
    if kind == "MPIJob":
        versions.append(mpi_v2beta1_version(columns))
    doc = crd_document(GROUP, kind, "Namespaced", versions)
    if kind in CONVERSION:
        doc["spec"]["conversion"] = CONVERSION[kind]
    return doc


# ---------------------------------------------------------------------------------------------
# trainer.kubeflow.org/v1alpha1: Kubeflow Trainer v2.3.0's TrainJob and its runtimes

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
# The CEL messages are upstream's, word for word: they are what a refused request says.
IMMUTABLE = "field is immutable"  # TrainJob's own immutable fields
JOBSET_IMMUTABLE = "Value is immutable"  # JobSet's, inside a runtime's template
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def cel(schema, *rules):
    """`schema` with CEL rules added, each a (rule, message) pair."""
    s = dict(schema)
    s["x-kubernetes-validations"] = s.get("x-kubernetes-validations", []) + [
        {"rule": rule, "message": message} for rule, message in rules
    ]
    return s


def immutable(schema, message=IMMUTABLE):
    return cel(schema, ("self == oldSelf", message))


def list_map(items, keys, description=None, max_items=None):
    """A list merged by `keys` (server-side apply, strategic merge): each key is unique."""
    s = array(items, description)
    if max_items:
        s["maxItems"] = max_items
    s["x-kubernetes-list-type"] = "map"
    s["x-kubernetes-list-map-keys"] = list(keys)
    return s


def atomic_list(items, description=None, max_items=None):
    s = array(items, description)
    if max_items:
        s["maxItems"] = max_items
    s["x-kubernetes-list-type"] = "atomic"
    return s


def atomic(schema):
    return schema | {"x-kubernetes-map-type": "atomic"}


def quantity(description=None):
    s = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": True,
    }
    if description:
        s["description"] = description
    return s


def name_field(description):
    return string(description) | {"minLength": 1, "maxLength": 253}


def object_meta(description):
    """The part of an ObjectMeta a template carries (other metadata fields are pruned)."""
    return obj(
        description=description,
        properties={
            "labels": string_map("Labels."),
            "annotations": string_map("Annotations."),
            "name": string(),
            "namespace": string(),
            "finalizers": array(string()),
        },
    )


def local_object_reference(description):
    return atomic(obj(description=description, properties={"name": string("Name.") | {"default": ""}}))


def key_selector(what):
    return atomic(
        obj(
            description=f"A key of a {what}.",
            required=("key",),
            properties={
                "key": string(),
                "name": string() | {"default": ""},
                "optional": boolean(f"The {what} or its key may be missing."),
            },
        )
    )


def env_var():
    """core/v1 EnvVar, typed: trainctl merges these into the runtime's containers."""
    return obj(
        description="One environment variable.",
        required=("name",),
        properties={
            "name": string("Variable name."),
            "value": string("Literal value ($(VAR) references are expanded)."),
            "valueFrom": obj(
                description="Where the value comes from instead of `value`.",
                properties={
                    "configMapKeyRef": key_selector("ConfigMap"),
                    "secretKeyRef": key_selector("Secret"),
                    "fieldRef": atomic(
                        obj(
                            description="A field of the pod.",
                            required=("fieldPath",),
                            properties={"apiVersion": string(), "fieldPath": string()},
                        )
                    ),
                    "resourceFieldRef": atomic(
                        obj(
                            description="A resource limit or request of a container.",
                            required=("resource",),
                            properties={
                                "containerName": string(),
                                "divisor": quantity(),
                                "resource": string(),
                            },
                        )
                    ),
                    "fileKeyRef": atomic(
                        obj(
                            description="A key of an env file in an emptyDir volume.",
                            required=("key", "path", "volumeName"),
                            properties={
                                "key": string(),
                                "optional": boolean(default=False),
                                "path": string(),
                                "volumeName": string(),
                            },
                        )
                    ),
                },
            ),
        },
    )


def env_list(description):
    return list_map(env_var(), ("name",), description, max_items=128)


def resource_requirements(description):
    return obj(
        description=description,
        properties={
            "limits": obj(description="Resource name to limit.", additionalProperties=quantity()),
            "requests": obj(
                description="Resource name to request.", additionalProperties=quantity()
            ),
            "claims": list_map(
                obj(
                    required=("name",),
                    properties={"name": string(), "request": string()},
                ),
                ("name",),
                "Resource claims of the pod this container uses.",
            ),
        },
    )


def runtime_ref():
    return immutable(
        obj(
            description="The runtime this TrainJob is made from.",
            required=("name",),
            properties={
                "name": name_field(
                    "Runtime name (a TrainingRuntime must be in the TrainJob's namespace)."
                ),
                "apiGroup": string("API group of the runtime.")
                | {"default": TRAINER_GROUP, "maxLength": 253},
                "kind": string("ClusterTrainingRuntime or TrainingRuntime.")
                | {"default": "ClusterTrainingRuntime", "maxLength": 253},
            },
        )
    )


STORAGE_URI_RULE = (
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "storageUri may be empty, or it must be a valid URI (scheme://...)",
)


def asset_initializer(what, step):
    return obj(
        description=f"Overrides for the runtime's {what} initializer (the `{step}` step).",
        properties={
            "storageUri": cel(
                string(f"Where the {what} comes from, scheme://... (hf://, s3://, ...).")
                | {"maxLength": 2048},
                STORAGE_URI_RULE,
            ),
            "env": env_list(f"Merged into the {what} initializer's environment."),
            "secretRef": local_object_reference(
                f"Secret in the TrainJob's namespace with the credentials to fetch the {what}."
            ),
        },
    )


def trainer_override():
    items = string() | {"maxLength": 1048576}
    return immutable(
        obj(
            description="Overrides for the runtime's trainer step (its `node` container).",
            properties={
                "image": string("Container image.") | {"maxLength": 500},
                "command": atomic_list(items, "Entrypoint.", max_items=128),
                "args": atomic_list(items, "Arguments of the entrypoint.", max_items=128),
                "env": env_list("Merged into the trainer's environment."),
                "numNodes": int32("Number of training nodes (replaces mlPolicy.numNodes)."),
                "resourcesPerNode": resource_requirements("Resources of each node's trainer."),
                "numProcPerNode": int32("Processes (MPI: slots) per node."),
            },
        )
    )


def volume_mount():
    return obj(
        required=("mountPath", "name"),
        properties={
            "name": string("Volume name."),
            "mountPath": string(),
            "mountPropagation": string(),
            "readOnly": boolean(),
            "recursiveReadOnly": string(),
            "subPath": string(),
            "subPathExpr": string(),
        },
    )


def container_patch():
    return obj(
        description="Additions to one container of the runtime, by name.",
        required=("name",),
        properties={
            "name": name_field("Container name (the runtime must have it)."),
            "env": env_list(
                "Merged into the container's environment (not for node, dataset-initializer "
                "or model-initializer: use trainer and initializer)."
            ),
            "volumeMounts": list_map(volume_mount(), ("name",), max_items=128),
            "securityContext": free_object("core/v1 SecurityContext."),
        },
    )


def toleration():
    return obj(
        properties={
            "key": string(),
            "operator": string(),
            "value": string(),
            "effect": string(),
            "tolerationSeconds": int64(),
        }
    )


def pod_spec_patch():
    return obj(
        description="What a manager may add to the pods of one replicated job.",
        properties={
            "serviceAccountName": immutable(string() | {"maxLength": 253}),
            "volumes": immutable(
                list_map(
                    obj(
                        description="core/v1 Volume.",
                        required=("name",),
                        properties={"name": string()},
                        preserve=True,
                    ),
                    ("name",),
                    max_items=128,
                )
            ),
            "initContainers": immutable(list_map(container_patch(), ("name",), max_items=64)),
            "containers": immutable(list_map(container_patch(), ("name",), max_items=64)),
            "imagePullSecrets": immutable(
                list_map(local_object_reference("A pull Secret."), ("name",), max_items=64)
            ),
            "securityContext": immutable(free_object("core/v1 PodSecurityContext.")),
            "nodeSelector": string_map("Node labels the pods must match."),
            "affinity": free_object("core/v1 Affinity."),
            "tolerations": atomic_list(toleration(), max_items=128),
            "schedulingGates": list_map(
                obj(required=("name",), properties={"name": string()}),
                ("name",),
                max_items=16,
            ),
            "terminationGracePeriodSeconds": immutable(int64() | {"minimum": 0}),
        },
    )


def runtime_patch():
    replicated_job_patch = obj(
        required=("name",),
        properties={
            "name": name_field("Replicated job to patch."),
            "template": obj(
                properties={
                    "metadata": object_meta("Labels and annotations for the Job."),
                    "spec": obj(
                        properties={
                            "template": obj(
                                properties={
                                    "metadata": object_meta("Labels and annotations for the pods."),
                                    "spec": pod_spec_patch(),
                                }
                            )
                        }
                    ),
                }
            ),
        },
    )
    return obj(
        description="One manager's patch of the runtime, applied to this TrainJob only.",
        required=("manager",),
        properties={
            "manager": immutable(name_field("Who owns this patch (e.g. kueue.x-k8s.io/manager).")),
            "time": string("When the patch was last written.", fmt="date-time"),
            "trainingRuntimeSpec": obj(
                properties={
                    "template": obj(
                        properties={
                            "metadata": object_meta("Labels and annotations for the JobSet."),
                            "spec": obj(
                                properties={
                                    "replicatedJobs": list_map(
                                        replicated_job_patch, ("name",), max_items=100
                                    )
                                }
                            ),
                        }
                    )
                }
            ),
        },
    )


MANAGED_BY = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")


def trainjob_spec():
    return obj(
        description="Desired state of the TrainJob.",
        required=("runtimeRef",),
        properties={
            "runtimeRef": runtime_ref(),
            "initializer": immutable(
                obj(
                    description="Dataset and model initializers, run before the trainer.",
                    properties={
                        "dataset": asset_initializer("dataset", "dataset-initializer"),
                        "model": asset_initializer("model", "model-initializer"),
                    },
                )
            ),
            "trainer": trainer_override(),
            "runtimePatches": list_map(
                runtime_patch(), ("manager",), "Patches of the runtime, one per manager.", 16
            ),
            "suspend": boolean("true keeps the TrainJob (and its JobSet) suspended.", default=False),
            "activeDeadlineSeconds": immutable(
                int64("Seconds the TrainJob may be active (reset on resume) before it fails.")
                | {"minimum": 1}
            ),
            "managedBy": immutable(
                cel(
                    string(
                        "Controller of the TrainJob; kueue.x-k8s.io/multikueue leaves it to Kueue."
                    )
                    | {"default": MANAGED_BY[0], "maxLength": 253},
                    (
                        "self in [" + ", ".join(f"'{v}'" for v in MANAGED_BY) + "]",
                        "ManagedBy must be " + " or ".join(MANAGED_BY) + " if set",
                    ),
                )
            ),
        },
    )


def meta_condition():
    """metav1.Condition, with its API constraints."""
    return obj(
        description="One observed state of the TrainJob.",
        required=("lastTransitionTime", "message", "reason", "status", "type"),
        properties={
            "type": string("Suspended, Complete, Failed, ...")
            | {
                "maxLength": 316,
                "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            },
            "status": string(enum=("True", "False", "Unknown")),
            "reason": string("CamelCase reason.")
            | {
                "minLength": 1,
                "maxLength": 1024,
                "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "message": string("Human-readable detail.") | {"maxLength": 32768},
            "observedGeneration": int64() | {"minimum": 0},
            "lastTransitionTime": string(fmt="date-time"),
        },
    )


def trainjob_status():
    count = int32() | {"minimum": 0}
    counts = ("active", "failed", "ready", "succeeded", "suspended")
    metric = obj(
        required=("name", "value"),
        properties={
            "name": string("Metric name.") | {"minLength": 1, "maxLength": 64},
            "value": string("Metric value, as a string.") | {"minLength": 1, "maxLength": 64},
        },
    )
    return obj(
        description="Observed state of the TrainJob, written by the controller.",
        properties={
            "conditions": list_map(meta_condition(), ("type",), "Conditions, by type.", 8),
            "jobsStatus": list_map(
                obj(
                    description="Child Job counts of one replicated job.",
                    required=("name",) + counts,
                    properties={"name": name_field("Replicated job.")}
                    | {c: count for c in counts},
                ),
                ("name",),
                "Per replicated job of the JobSet.",
                100,
            ),
            "trainerStatus": cel(
                obj(
                    description="Progress reported by the trainer.",
                    properties={
                        "progressPercentage": int32() | {"minimum": 0, "maximum": 100},
                        "estimatedRemainingSeconds": int32() | {"minimum": 0},
                        "metrics": atomic_list(metric, max_items=256),
                        "lastUpdatedTime": string(fmt="date-time"),
                    },
                ),
                (
                    "has(self.lastUpdatedTime)",
                    "lastUpdatedTime is required when trainerStatus is present",
                ),
            ),
        },
        minProperties=1,
    )


def ml_policy():
    policies = ("torch", "mpi", "jax", "xgboost", "flux")
    target = obj(
        required=("containerNames", "jobName"),
        properties={
            "jobName": name_field("Replicated job."),
            "containerNames": cel(
                array(string() | {"maxLength": 63}, "Containers of that job.")
                | {"minItems": 1, "maxItems": 8, "x-kubernetes-list-type": "set"},
                (
                    "!self.exists(c, c == 'node')",
                    "containerNames must not include the main node container because PET_* "
                    "envs are always injected into it",
                ),
            ),
        },
    )
    return cel(
        obj(
            description="The framework's launch parameters; at most one policy.",
            properties={
                "numNodes": int32("Number of training nodes (default 1)."),
                "torch": obj(
                    description="torchrun (PET_* env).",
                    properties={
                        "envInjection": obj(
                            description="Other containers that also get the PET_* env.",
                            properties={
                                "targets": list_map(target, ("jobName",), max_items=16)
                            },
                        )
                    },
                ),
                "mpi": obj(
                    description="MPI over SSH from a launcher.",
                    properties={
                        "numProcPerNode": int32("Slots per node in the hostfile.")
                        | {"default": 1},
                        "mpiImplementation": string("Hostfile format.", enum=("OpenMPI", ""))
                        | {"default": "OpenMPI"},
                        "sshAuthMountPath": string("Where the SSH key is mounted.")
                        | {"default": "/root/.ssh", "maxLength": 4096},
                        "runLauncherAsNode": boolean(
                            "The launcher also runs a training process.", default=False
                        ),
                    },
                ),
                "flux": obj(
                    description="Flux framework.",
                    properties={
                        "numProcPerNode": cel(
                            int32("Processes per node.") | {"default": 1},
                            ("self >= 1", "NumProcPerNode in fluxPolicy must be >= 1"),
                        )
                    },
                ),
                "jax": obj(description="JAX distributed (no parameters)."),
                "xgboost": obj(description="XGBoost's collective, DMLC_* env (no parameters)."),
            },
        ),
        (
            "[" + ", ".join(f"has(self.{p})" for p in policies) + "].filter(x, x).size() <= 1",
            "Only one of the policy can be configured",
        ),
    )


def pod_group_policy():
    return obj(
        description="Gang scheduling of the TrainJob's pods.",
        properties={
            "coscheduling": obj(
                description="scheduler-plugins' coscheduling PodGroup.",
                properties={
                    "scheduleTimeoutSeconds": int32("Seconds to schedule the whole group.")
                    | {"default": 60}
                },
            ),
            "volcano": obj(
                description="Volcano PodGroup.",
                properties={
                    "networkTopology": obj(
                        description="Volcano network topology constraint.",
                        properties={
                            "mode": string("hard or soft.", enum=("hard", "soft"))
                            | {"default": "hard"},
                            "highestTierAllowed": {"type": "integer", "default": 1},
                        },
                    )
                },
            ),
        },
    )


def named_containers(description):
    return list_map(
        obj(
            description="core/v1 Container (with the core schema's defaults, as upstream's).",
            required=("name",),
            properties={"name": string(), **defaulted_container()["properties"]},
            preserve=True,
        ),
        ("name",),
        description,
    )


def runtime_pod_template():
    return obj(
        description="Pod template (core/v1 PodTemplateSpec); the spec keeps what was written.",
        properties={
            "metadata": object_meta("Labels and annotations for the pods."),
            "spec": obj(
                description="core/v1 PodSpec.",
                required=("containers",),
                preserve=True,
                properties={
                    "containers": named_containers("Containers, by name."),
                    "initContainers": named_containers("Init containers, by name."),
                },
            ),
        },
    )


def replicated_job():
    dependency = obj(
        required=("name", "status"),
        properties={
            "name": string("Replicated job waited for."),
            "status": string("Ready or Complete.", enum=("Ready", "Complete")),
        },
    )
    return obj(
        description="A group of identical Jobs.",
        required=("name", "template"),
        properties={
            "name": string("Replicated job name (e.g. node, dataset-initializer, launcher)."),
            "groupName": string("Group label of the replicated job.") | {"default": "default"},
            "replicas": int32("Number of Jobs.") | {"default": 1},
            "dependsOn": immutable(
                list_map(dependency, ("name",), "Replicated jobs to wait for.", 5),
                JOBSET_IMMUTABLE,
            ),
            "template": obj(
                description="batch/v1 JobTemplateSpec; the Job spec keeps what was written.",
                properties={
                    "metadata": object_meta("Labels and annotations for the Jobs."),
                    "spec": obj(
                        description="batch/v1 JobSpec.",
                        required=("template",),
                        preserve=True,
                        properties={"template": runtime_pod_template()},
                    ),
                },
            ),
        },
    )


def jobset_spec():
    failure_rule = obj(
        required=("action", "name"),
        properties={
            "name": string(),
            "action": string(
                enum=(
                    "FailJobSet",
                    "RestartJobSet",
                    "RestartJobSetAndIgnoreMaxRestarts",
                    "RestartJob",
                    "RestartJobAndIgnoreMaxRestarts",
                )
            ),
            "onJobFailureReasons": array(string()),
            "onJobFailureMessagePatterns": array(string()),
            "targetReplicatedJobs": atomic_list(string()),
        },
    )
    claim_policy = cel(
        obj(
            properties={
                "templates": atomic_list(
                    obj(
                        description="core/v1 PersistentVolumeClaim template.",
                        preserve=True,
                        properties={"metadata": object_meta("Claim metadata.")},
                    ),
                    max_items=50,
                ),
                "retentionPolicy": obj(
                    properties={
                        "whenDeleted": string(enum=("Delete", "Retain")) | {"default": "Delete"}
                    }
                ),
            }
        ),
        (
            "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
            "namespace cannot be set for VolumeClaimPolicies templates",
        ),
    )
    return cel(
        obj(
            description="jobset.x-k8s.io/v1alpha2 JobSetSpec.",
            properties={
                "replicatedJobs": list_map(replicated_job(), ("name",), "The JobSet's jobs."),
                "network": immutable(
                    obj(
                        properties={
                            "enableDNSHostnames": boolean(),
                            "publishNotReadyAddresses": boolean(),
                            "subdomain": string(),
                        }
                    ),
                    JOBSET_IMMUTABLE,
                ),
                "successPolicy": immutable(
                    obj(
                        required=("operator",),
                        properties={
                            "operator": string(enum=("All", "Any")),
                            "targetReplicatedJobs": atomic_list(string()),
                        },
                    ),
                    JOBSET_IMMUTABLE,
                ),
                "failurePolicy": immutable(
                    obj(
                        properties={
                            "maxRestarts": int32(),
                            "restartStrategy": string(
                                enum=("Recreate", "BlockingRecreate", "InPlaceRestart")
                            )
                            | {"default": "Recreate"},
                            "rules": array(failure_rule),
                        }
                    ),
                    JOBSET_IMMUTABLE,
                ),
                "startupPolicy": immutable(
                    obj(
                        required=("startupPolicyOrder",),
                        properties={"startupPolicyOrder": string(enum=("AnyOrder", "InOrder"))},
                    ),
                    JOBSET_IMMUTABLE,
                ),
                "suspend": boolean(),
                "coordinator": obj(
                    required=("replicatedJob",),
                    properties={
                        "replicatedJob": string(),
                        "jobIndex": {"type": "integer"},
                        "podIndex": {"type": "integer"},
                    },
                ),
                "managedBy": string(),
                "ttlSecondsAfterFinished": int32() | {"minimum": 0},
                "volumeClaimPolicies": immutable(
                    atomic_list(claim_policy, max_items=50), JOBSET_IMMUTABLE
                ),
            },
        ),
        (
            "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
            "self.replicatedJobs.exists(x, has(x.dependsOn)))",
            "StartupPolicy and DependsOn APIs are mutually exclusive",
        ),
    )


def training_runtime_spec():
    return obj(
        description="A blueprint of TrainJobs: ML policy, gang scheduling and the JobSet.",
        properties={
            "mlPolicy": ml_policy(),
            "podGroupPolicy": pod_group_policy(),
            "template": obj(
                description="The JobSet each TrainJob of this runtime becomes.",
                properties={
                    "metadata": object_meta("Labels and annotations for the JobSet."),
                    "spec": jobset_spec(),
                },
                minProperties=1,
            ),
        },
        minProperties=1,
    )


def resource_schema(description, spec, status=None, rules=()):
    props = {
        "apiVersion": string(),
        "kind": string(),
        "metadata": {"type": "object"},
        "spec": spec,
    }
    if status:
        props["status"] = status
    schema = obj(description=description, properties=props)
    return cel(schema, *rules) if rules else schema


TRAINER_KINDS = [
    {
        "kind": "TrainJob",
        "scope": "Namespaced",
        "schema": lambda: resource_schema(
            "TrainJob: a training job made from a runtime (trainer.kubeflow.org/v1alpha1).",
            trainjob_spec(),
            trainjob_status(),
            rules=(
                (
                    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
                    "metadata.name must match RFC 1035 DNS label format",
                ),
                ("size(self.metadata.name) <= 63", "metadata.name must be no more than 63 characters"),
            ),
        ),
        "status": True,
    },
    {
        "kind": "TrainingRuntime",
        "scope": "Namespaced",
        "schema": lambda: resource_schema(
            "TrainingRuntime: a runtime for the TrainJobs of its own namespace.",
            training_runtime_spec(),
        ),
    },
    {
        "kind": "ClusterTrainingRuntime",
        "scope": "Cluster",
        "schema": lambda: resource_schema(
            "ClusterTrainingRuntime: a runtime for the TrainJobs of every namespace.",
            training_runtime_spec(),
        ),
    },
]


def trainer_crd(k):
    version = {
        "name": TRAINER_VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": k["schema"]()},
    }
    if k.get("status"):
        version["subresources"] = {"status": {}}
        version["additionalPrinterColumns"] = list(STATE_AND_AGE_COLUMNS)
    return crd_document(TRAINER_GROUP, k["kind"], k["scope"], [version])


# ---------------------------------------------------------------------------------------------
# A small YAML writer (block style; strings quoted whenever a YAML reader could misread them)

PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*$")
RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        if PLAIN.match(v) and v.lower() not in RESERVED:
            return v
        return json.dumps(v)
    raise TypeError(f"cannot write {type(v).__name__}")


def emit(value, indent, lines):
    pad = "  " * indent
    if isinstance(value, dict):
        for key, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{scalar(key)}:")
                emit(v, indent + (1 if isinstance(v, dict) else 0), lines)
            else:
                lines.append(f"{pad}{scalar(key)}: {empty_or_scalar(v)}")
    else:
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub = []
                emit(item, indent + 1, sub)
                first = sub[0]
                sub[0] = pad + "- " + first[len(pad) + 2 :]
                lines.extend(sub)
            else:
                lines.append(f"{pad}- {empty_or_scalar(item)}")


def empty_or_scalar(v):
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return scalar(v)


def render(doc):
    lines = ["# Generated by hack/gen-crds.py; do not edit by hand."]
    emit(doc, 0, lines)
    return "\n".join(lines) + "\n"


def outputs():
    files = {OUT_DIR / f"{GROUP}_{plural(k['kind'])}.yaml": render(crd(k)) for k in KINDS}
    for k in TRAINER_KINDS:
        files[OUT_DIR / f"{TRAINER_GROUP}_{plural(k['kind'])}.yaml"] = render(trainer_crd(k))
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of writing them")
    args = parser.parse_args()
    files = outputs()
    if args.check:
        stale = [p for p, text in files.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        extra = sorted(set(OUT_DIR.glob("*.yaml")) - set(files)) if OUT_DIR.is_dir() else []
        for p in stale:
            print(f"gen-crds: {p.relative_to(ROOT)} is out of date", file=sys.stderr)
        for p in extra:
            print(f"gen-crds: {p.relative_to(ROOT)} is not generated", file=sys.stderr)
        if stale or extra:
            print("gen-crds: run hack/gen-crds.py", file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for p, text in files.items():
        p.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
