#!/usr/bin/python3
"""Turns a controller's own install (a module's config/default rendered by
hack/cluster/build-controller.sh: JobSet's, Kueue's) into the test cluster's, where the
controller is a process on 127.0.0.1 instead of a Deployment behind a Service.

    controller_manifests.py INSTALL --component jobset|kueue --webhook-port P --ca-file CA \\
        --cert-dir DIR --metrics-address HOST:PORT --health-address HOST:PORT \\
        --manifests-out FILE --config-out FILE --identity-out FILE

Everything else is upstream's, unchanged:
  - kept: the Namespace, the CRD, the ServiceAccount, every Role, ClusterRole and binding, and
    both webhook configurations (rules, object selectors, failure policies as upstream's);
  - every clientConfig that names a Service (the webhooks and the CRD's conversion) names
    https://127.0.0.1:P<same path> instead, with the cluster's CA as caBundle: the API server
    calls the process directly, which serves a certificate for 127.0.0.1 signed by that CA
    (upstream's own certificate rotation writes one for the Service's DNS name only);
  - dropped: the Deployment, the Services and the webhook certificate's Secret (the process
    replaces them) and the ConfigMap, whose Configuration becomes --config-out with what a
    process beside the control plane needs: leader election off, internal certificate
    management off, the webhook server on 127.0.0.1:P with --cert-dir, metrics and health on
    the given loopback addresses.
Kueue's too: its APIService (the visibility API, which the test cluster does not aggregate) is
dropped, and its Configuration enables the integrations of every kind trainctl serves that
Kueue knows (KUEUE_FRAMEWORKS).
--identity-out gets "NAMESPACE SERVICEACCOUNT" of the Deployment: the controller authenticates
as that service account (a client certificate), so upstream's RBAC is what it runs under.

PyYAML (python3-yaml, an SDK test dependency) and the standard library. Deterministic.
"""

import argparse
import base64
import sys

import yaml

DROPPED = {"Deployment", "Service", "Secret", "ConfigMap", "APIService"}
# Kueue's integrations for what `trainctl operator` serves: the kubeflow.org/v1 kinds it knows
# (not MXJob), MPIJob v2beta1, TrainJob; and the children those make, which Kueue's integrations
# expect beside them (as in upstream's default list): JobSet (a TrainJob's) and batch/job (a
# JobSet's and a v2beta1 launcher's; with it off, Kueue's Job webhook panicked on a JobSet's Job).
KUEUE_FRAMEWORKS = [
    "kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob", "kubeflow.org/paddlejob", "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset", "batch/job",
]
CONFIG_KEY = "controller_manager_config.yaml"
# libyaml's parser and emitter where present (the install is 0.8 MB: 0.9 s → 0.2 s).
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def rewrite_client_config(client_config, base_url, ca_bundle):
    """A clientConfig naming a Service → the same path on base_url, trusted through ca_bundle."""
    service = client_config.get("service")
    if service is None:
        return client_config
    return {"url": base_url + service.get("path", "/"), "caBundle": ca_bundle}


def framework_resource(framework):
    """"kubeflow.org/mpijob" → ("kubeflow.org", "mpijobs"): what its webhooks take."""
    group, kind = framework.split("/", 1)
    return group, kind + "s"


def takes(hook, group, resource):
    return any(group in rule.get("apiGroups", []) and resource in rule.get("resources", [])
               for rule in hook.get("rules", []))


def transform(docs, base_url, ca_bundle, without_frameworks=()):
    """(kept objects, upstream's Configuration as a dict, (namespace, service account)). The
    webhooks of a framework in `without_frameworks` are dropped: Kueue serves a framework it does
    not integrate with a webhook that does nothing, but the API server still has to reach it
    (converting the object to the version it names first)."""
    dropped_resources = [framework_resource(f) for f in without_frameworks]
    kept, config, identity = [], None, None
    for doc in docs:
        if not doc:
            continue
        kind = doc.get("kind")
        if kind == "ConfigMap" and CONFIG_KEY in doc.get("data", {}):
            config = yaml.safe_load(doc["data"][CONFIG_KEY])
        if kind == "Deployment":
            pod = doc["spec"]["template"]["spec"]
            identity = (doc["metadata"]["namespace"], pod.get("serviceAccountName", "default"))
        if kind in DROPPED:
            continue
        if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            doc["webhooks"] = [h for h in doc.get("webhooks", [])
                               if not any(takes(h, g, r) for g, r in dropped_resources)]
            for hook in doc.get("webhooks", []):
                hook["clientConfig"] = rewrite_client_config(hook["clientConfig"], base_url, ca_bundle)
        if kind == "CustomResourceDefinition":
            webhook = doc["spec"].get("conversion", {}).get("webhook")
            if webhook and "clientConfig" in webhook:
                webhook["clientConfig"] = rewrite_client_config(webhook["clientConfig"], base_url, ca_bundle)
        kept.append(doc)
    if config is None:
        raise ValueError(f"the install has no ConfigMap with {CONFIG_KEY}")
    if identity is None:
        raise ValueError("the install has no Deployment (whose service account the controller runs as)")
    if not any(d["kind"] == "CustomResourceDefinition" for d in kept):
        raise ValueError("the install has no CustomResourceDefinition")
    return kept, config, identity


def process_config(component, config, webhook_port, cert_dir, metrics_address, health_address,
                   without_frameworks=()):
    """Upstream's Configuration with the settings of a process beside the control plane."""
    config = dict(config)
    if component == "kueue":
        frameworks = [f for f in KUEUE_FRAMEWORKS if f not in without_frameworks]
        config["integrations"] = {**config.get("integrations", {}), "frameworks": frameworks}
    config["leaderElection"] = {**config.get("leaderElection", {}), "leaderElect": False}
    config["internalCertManagement"] = {"enable": False}
    config["webhook"] = {"host": "127.0.0.1", "port": webhook_port, "certDir": cert_dir}
    # Kueue's metrics server reads its certificate from a fixed path (controller.sh).
    config["metrics"] = ({"bindAddress": metrics_address} if component == "kueue"
                         else {"bindAddress": metrics_address, "certDir": cert_dir})
    config["health"] = {"healthProbeBindAddress": health_address}
    return config


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("install")
    parser.add_argument("--component", choices=("jobset", "kueue"), required=True)
    parser.add_argument("--without-framework", action="append", default=[],
                        help="a Kueue integration of KUEUE_FRAMEWORKS to leave off")
    parser.add_argument("--webhook-port", type=int, required=True)
    parser.add_argument("--ca-file", required=True)
    parser.add_argument("--cert-dir", required=True)
    parser.add_argument("--metrics-address", required=True)
    parser.add_argument("--health-address", required=True)
    parser.add_argument("--manifests-out", required=True)
    parser.add_argument("--config-out", required=True)
    parser.add_argument("--identity-out", required=True)
    args = parser.parse_args(argv)

    with open(args.install) as f:
        docs = list(yaml.load_all(f, Loader=LOADER))
    with open(args.ca_file, "rb") as f:
        ca_bundle = base64.b64encode(f.read()).decode()
    try:
        kept, config, identity = transform(docs, f"https://127.0.0.1:{args.webhook_port}", ca_bundle,
                                           args.without_framework)
    except ValueError as e:
        print(f"controller_manifests.py: {args.install}: {e}", file=sys.stderr)
        return 1
    config = process_config(args.component, config, args.webhook_port, args.cert_dir,
                            args.metrics_address, args.health_address, args.without_framework)
    with open(args.manifests_out, "w") as f:
        yaml.dump_all(kept, f, Dumper=DUMPER, sort_keys=False)
    with open(args.config_out, "w") as f:
        yaml.dump(config, f, Dumper=DUMPER, sort_keys=False)
    with open(args.identity_out, "w") as f:
        f.write(f"{identity[0]} {identity[1]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
