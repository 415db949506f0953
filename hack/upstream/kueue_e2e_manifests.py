#!/usr/bin/python3
"""Manifests for Kueue's own e2e suite on the real node (hack/upstream/kueue-e2e.sh), from
standard input to standard output:

    kueue_e2e_manifests.py install --deployment NS/NAME --image REF   a controller's install
        (Kueue's or JobSet's install.yaml, as hack/cluster/build-controller.sh rendered it) as
        upstream's release installs it, but for two changes: the container `manager` of the
        Deployment NS/NAME runs REF (built here: images.sh kueue-e2e), and APIServices are
        dropped (Kueue's visibility API: the test cluster aggregates no API, and an APIService
        without a server would make discovery fail, and with it namespace deletion)
    kueue_e2e_manifests.py without-crds          the same objects but the
        CustomResourceDefinitions: what the suite's set-up removes afterwards (CRDs stay, with
        the objects other suites made)
    kueue_e2e_manifests.py no-cpu-requests       every Deployment's containers request no CPU
        (their limits stay): the real node has the machine's CPUs, 2 here, and the JAX spec's
        two workers ask for 1 each, which Kueue's 500m and the operator's 100m would leave
        unschedulable

PyYAML (python3-yaml) and the standard library. Deterministic.
"""

import argparse
import sys

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def install(docs, deployment, image):
    """Upstream's objects with the controller's image replaced and no APIService. Fails when
    the install has no such Deployment or container: the suite would wait for nothing."""
    out, replaced = [], 0
    for doc in docs:
        if doc.get("kind") == "APIService":
            continue
        meta = doc.get("metadata", {})
        if doc.get("kind") == "Deployment" and f"{meta.get('namespace')}/{meta.get('name')}" == deployment:
            for container in doc["spec"]["template"]["spec"]["containers"]:
                if container.get("name") == "manager":
                    container["image"] = image
                    replaced += 1
        out.append(doc)
    if replaced != 1:
        raise SystemExit(f"kueue_e2e_manifests.py: the install has no Deployment {deployment} "
                         "with a container 'manager'")
    return out


def without_crds(docs):
    return [d for d in docs if d.get("kind") != "CustomResourceDefinition"]


def no_cpu_requests(docs):
    """Requests of 0 CPU, set (not removed: a container with limits only requests its limits)."""
    for doc in docs:
        if doc.get("kind") != "Deployment":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            container.setdefault("resources", {}).setdefault("requests", {})["cpu"] = "0"
    return docs


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    install_args = sub.add_parser("install")
    install_args.add_argument("--deployment", required=True)
    install_args.add_argument("--image", required=True)
    sub.add_parser("without-crds")
    sub.add_parser("no-cpu-requests")
    args = parser.parse_args(argv)
    docs = [d for d in yaml.load_all(sys.stdin, Loader=LOADER) if d]
    if args.command == "install":
        docs = install(docs, args.deployment, args.image)
    elif args.command == "without-crds":
        docs = without_crds(docs)
    else:
        docs = no_cpu_requests(docs)
    yaml.dump_all(docs, sys.stdout, Dumper=DUMPER, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
