#!/usr/bin/python3
"""Generates the kubeflow.org CustomResourceDefinitions in manifests/crds/.

    hack/gen-crds.py           write manifests/crds/kubeflow.org_<plural>.yaml
    hack/gen-crds.py --check   exit 1 (listing the files) if the committed files differ

Standard library only and deterministic: the same script always writes the same bytes.

The schemas are structural (apiextensions.k8s.io/v1) but deliberately not complete: a replica
spec's `template` keeps whatever the user wrote (x-kubernetes-preserve-unknown-fields) instead of
carrying the whole core PodTemplateSpec schema, except for `template.metadata.labels` and
`.annotations`, which are typed maps so that they are certainly kept. Sub-objects whose exact
shape trainctl does not interpret (metric specs, minResources, labelSelector) also keep unknown
fields rather than dropping data.

Every kind is served as v1 (the storage version). MPIJob is also served as v2beta1 (the MPI
Operator v2's API): the API server converts between the two through the operator's conversion
webhook (operator/conversion_review.h), whose caBundle the operator fills in.
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


def pod_template():
    return obj(
        description=(
            "Pod template (core/v1 PodTemplateSpec). Kept as written; only metadata.labels and "
            "metadata.annotations are typed."
        ),
        preserve=True,
        properties={
            "metadata": obj(
                preserve=True,
                properties={
                    "labels": string_map("Labels copied onto the replica's pods."),
                    "annotations": string_map("Annotations copied onto the replica's pods."),
                },
            )
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
    state = {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"}
    age = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
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
    doc = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural(kind)}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "trainctl"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": kind + "List",
                "plural": plural(kind),
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": versions,
        },
    }
    if kind in CONVERSION:
        doc["spec"]["conversion"] = CONVERSION[kind]
    return doc


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
    return {OUT_DIR / f"{GROUP}_{plural(k['kind'])}.yaml": render(crd(k)) for k in KINDS}


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
