#!/usr/bin/env bash
# Upstream Kubeflow Trainer v2's controller manager (hack/upstream/build.sh --trainer, unmodified)
# as a process beside the test cluster, for side-by-side measurements with `trainctl operator`.
# Needs a cluster with the real JobSet controller (TRAINCTL_JOBSET=1 hack/cluster/up.sh).  Never
# used by the product or by make test.
#
#   trainer.sh up     installs upstream's TrainJob, TrainingRuntime and ClusterTrainingRuntime CRDs
#                     (over trainctl's, if installed), its ClusterRole, ServiceAccount and binding,
#                     and its two webhook configurations pointed at 127.0.0.1; starts the
#                     controller (idempotent); returns once the API server has had a TrainJob
#                     through both webhooks (a server-side dry run)
#   trainer.sh down   stops the controller and deletes its webhook configurations (the CRDs, RBAC
#                     and namespace stay)
#
# Everything the API server and the controller see is upstream's manifests/base (crds, rbac,
# webhook with its kustomize patches, manager's controller_manager_config.yaml), except what a
# process on 127.0.0.1 needs instead of a Deployment behind a Service:
#   - the webhooks' clientConfig is https://127.0.0.1:<base+93><same path> with the cluster's CA
#     as caBundle; the process serves a certificate for 127.0.0.1 signed by that CA, from
#     $TMPDIR/k8s-webhook-server/serving-certs (controller-runtime's default directory: the
#     Configuration has no field for it);
#   - its Configuration: certManagement off (upstream's rotator writes a certificate for the
#     Service's DNS name and patches the configurations' caBundle), leader election off (one
#     replica), metrics on 127.0.0.1:<base+94> over plain HTTP, health on 127.0.0.1:<base+95>;
#     groupKindConcurrency and clientConnection (qps 50, burst 100) stay upstream's.
# The webhooks stay on (failurePolicy Fail, as upstream): a TrainJob's create goes through
# upstream's defaulting and validation, as on a real install.  The controller authenticates as
# upstream's service account kubeflow-system/kubeflow-trainer-controller-manager (a token of it;
# the name is too long for a certificate's CN), so it runs under upstream's ClusterRole.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"

cmd="${1:-}"
STATE="$(state_dir)"
PKI="$STATE/pki"
DIR="$STATE/trainer"
NAME=trainer-controller-manager
NAMESPACE=kubeflow-system
ACCOUNT=kubeflow-trainer-controller-manager
KUBECTL="$(cluster_bin_dir)/kubectl"
timeout_s="${TRAINCTL_UP_TIMEOUT:-120}"
TRAINER_WEBHOOK_PORT=$(( $(port_base) + 93 ))
TRAINER_METRICS_PORT=$(( $(port_base) + 94 ))
TRAINER_HEALTH_PORT=$(( $(port_base) + 95 ))
# The webhook configurations' names (upstream's patches and cmd/trainer-controller-manager).
WEBHOOKS="mutatingwebhookconfiguration/defaulter.trainer.kubeflow.org validatingwebhookconfiguration/validator.trainer.kubeflow.org"

kubectl_admin() { "$KUBECTL" --kubeconfig="$STATE/kubeconfig" "$@"; }

health() { curl -fsS --max-time 2 "http://127.0.0.1:$TRAINER_HEALTH_PORT/$1" 2>/dev/null; }

# A TrainJob the API server sends through the mutating and the validating webhook (dry run).  Its
# runtime does not exist, so upstream's validation denies it: a denial is an answer; a webhook
# that cannot be called is not.
webhooks_answer() {
  local out
  out="$(kubectl_admin create --dry-run=server -o name -f - 2>&1 <<'EOF'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: webhook-probe, namespace: default}
spec:
  runtimeRef: {name: webhook-probe-absent}
EOF
)" && return 0
  [[ "$out" == *"denied the request"* && "$out" != *"failed calling webhook"* ]]
}

# Upstream's manifests/base made the test cluster's (see the header): INSTALL and CONFIG.
render() { # dist install_out config_out
  /usr/bin/python3 - "$@" "$TRAINER_WEBHOOK_PORT" "$TRAINER_METRICS_PORT" "$TRAINER_HEALTH_PORT" \
    "$PKI/ca.crt" "$NAMESPACE" <<'EOF'
import base64, glob, os, sys
import yaml
dist, install_out, config_out, webhook_port, metrics_port, health_port, ca_file, namespace = sys.argv[1:]
m = os.path.join(dist, "manifests")

def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

def apply_patch(doc, ops):
    """kustomize's JSON 6902 patches as upstream writes them (replace and add)."""
    for op in ops:
        *parents, last = op["path"].strip("/").split("/")
        target = doc
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if op["op"] not in ("replace", "add"):
            raise ValueError(f"unsupported patch op {op['op']}")
        if isinstance(target, list):
            target[int(last)] = op["value"]
        else:
            target[last] = op["value"]

docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
for crd in sorted(glob.glob(os.path.join(dist, "crds", "trainer.kubeflow.org_*.yaml"))):
    docs += load(crd)
for name in ("service_account.yaml", "role.yaml", "role_binding.yaml"):
    for doc in load(os.path.join(m, "rbac", name)):
        if doc["kind"] in ("ServiceAccount",):
            doc["metadata"]["namespace"] = namespace
        for subject in doc.get("subjects", []):
            if subject.get("kind") == "ServiceAccount":
                subject["namespace"] = namespace
        docs.append(doc)
patches = {"MutatingWebhookConfiguration": load(os.path.join(m, "webhook", "patch_mutating.yaml"))[0],
           "ValidatingWebhookConfiguration": load(os.path.join(m, "webhook", "patch_validating.yaml"))[0]}
with open(ca_file, "rb") as f:
    ca_bundle = base64.b64encode(f.read()).decode()
base_url = f"https://127.0.0.1:{webhook_port}"
for doc in load(os.path.join(m, "webhook", "manifests.yaml")):
    apply_patch(doc, patches[doc["kind"]])
    for hook in doc["webhooks"]:
        service = hook["clientConfig"]["service"]
        hook["clientConfig"] = {"url": base_url + service.get("path", "/"), "caBundle": ca_bundle}
    docs.append(doc)
with open(install_out, "w") as f:
    yaml.safe_dump_all(docs, f, sort_keys=False)

with open(os.path.join(m, "manager", "controller_manager_config.yaml")) as f:
    config = yaml.safe_load(f)
config["health"]["healthProbeBindAddress"] = f"127.0.0.1:{health_port}"
config["metrics"] = {"bindAddress": f"127.0.0.1:{metrics_port}", "secureServing": False}
config["webhook"] = {"port": int(webhook_port), "host": "127.0.0.1"}
config["leaderElection"] = {"leaderElect": False}
config["certManagement"] = {"enable": False}
config.pop("statusServer", None)  # served only with the TrainJobStatus feature gate (off)
with open(config_out, "w") as f:
    yaml.safe_dump(config, f, sort_keys=False)
EOF
}

# Ready: /readyz answers ok and a dry run goes through the webhooks.
component_ready() { [[ "$(health readyz)" == ok ]] && webhooks_answer; }

trainer_up() {
  [[ -s "$STATE/kubeconfig" && -s "$PKI/ca.key" ]] ||
    die "trainer: no cluster at $STATE (start it with TRAINCTL_JOBSET=1 hack/cluster/up.sh)"
  [[ "$(curl -fsS --max-time 2 "http://127.0.0.1:$JOBSET_HEALTH_PORT/readyz" 2>/dev/null)" == ok ]] ||
    die "trainer: no JobSet controller answers on 127.0.0.1:$JOBSET_HEALTH_PORT (hack/cluster/jobset.sh up)"
  local binary dist t0=$SECONDS
  binary="$("$here/build.sh" --trainer)"
  dist="$(dirname "$(dirname "$binary")")"
  mkdir -p "$DIR/tmp/k8s-webhook-server/serving-certs"
  chmod 700 "$DIR/tmp"
  render "$dist" "$DIR/install.yaml" "$DIR/config.yaml" ||
    die "trainer: cannot make the cluster's manifests from $dist/manifests"

  ca_sign trainer-webhook "/CN=trainer-webhook" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost"
  cp -f "$PKI/trainer-webhook.crt" "$DIR/tmp/k8s-webhook-server/serving-certs/tls.crt"
  cp -f "$PKI/trainer-webhook.key" "$DIR/tmp/k8s-webhook-server/serving-certs/tls.key"

  kubectl_admin apply --server-side --force-conflicts --field-manager=trainctl-trainer -f "$DIR/install.yaml" >/dev/null ||
    die "trainer: applying $DIR/install.yaml failed"
  # A token of the service account (its name is too long for a certificate's CN).
  local token
  token="$(kubectl_admin -n "$NAMESPACE" create token "$ACCOUNT" --duration=24h)" ||
    die "trainer: cannot make a token for $NAMESPACE/$ACCOUNT"
  cat >"$STATE/config/$NAME.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainctl
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $ACCOUNT
  user: {token: "$token"}
contexts:
- name: trainctl
  context: {cluster: trainctl, user: $ACCOUNT}
current-context: trainctl
EOF
  chmod 600 "$STATE/config/$NAME.kubeconfig"
  local deadline=$(( SECONDS + timeout_s )) crd
  for crd in trainjobs trainingruntimes clustertrainingruntimes; do
    until [[ "$(kubectl_admin get crd "$crd.trainer.kubeflow.org" \
        -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == True ]]; do
      (( SECONDS < deadline )) || die "trainer: the CRD $crd.trainer.kubeflow.org is not Established after ${timeout_s}s"
      sleep 0.2
    done
  done

  local pid port
  if ! pid="$(component_pid "$NAME")"; then
    for port in "$TRAINER_WEBHOOK_PORT" "$TRAINER_METRICS_PORT" "$TRAINER_HEALTH_PORT"; do
      port_in_use "$port" && die "port $port (for $NAME) is already in use by another program; set TRAINCTL_PORT_BASE"
    done
    local logf="$STATE/logs/$NAME.log" i
    mkdir -p "$STATE/logs" "$STATE/run"
    printf '==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NAME" >>"$logf"
    # Upstream's Deployment runs it with --config and --zap-log-level=2.
    TMPDIR="$DIR/tmp" KUBECONFIG="$STATE/config/$NAME.kubeconfig" \
      setsid bash -c 'echo $$ >"$0"; exec "$@"' "$(pid_file "$NAME")" "$binary" \
      --config="$DIR/config.yaml" --zap-log-level=2 >>"$logf" 2>&1 </dev/null 8>&- 9>&- &
    for (( i = 0; i < 50; i++ )); do component_pid "$NAME" >/dev/null && break; sleep 0.1; done
    pid="$(component_pid "$NAME")" || { tail -n 20 "$logf" >&2; die "$NAME did not start (log: $logf)"; }
    log "started $NAME (pid $pid, log: $logf)"
  fi
  wait_component_ready "$NAME" "$timeout_s" "readiness and webhooks" component_ready
  log "Trainer $(basename "$dist") ready in $(( SECONDS - t0 ))s (webhooks on 127.0.0.1:$TRAINER_WEBHOOK_PORT, metrics on 127.0.0.1:$TRAINER_METRICS_PORT)"
}

trainer_down() {
  stop_component "$NAME"
  # Without the controller its webhooks (failurePolicy Fail) would refuse every TrainJob and
  # runtime, trainctl's included.
  if [[ -s "$STATE/kubeconfig" ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    kubectl_admin delete $WEBHOOKS --ignore-not-found >/dev/null ||
      log "warning: could not delete Trainer's webhook configurations"
  fi
}

case "$cmd" in
  up) trainer_up ;;
  down) trainer_down ;;
  -h|--help) sed -n '2,29p' "$0" ;;
  *) die "usage: trainer.sh up|down" ;;
esac
