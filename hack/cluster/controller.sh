#!/usr/bin/env bash
# A controller that upstream ships as a Go module, in the test cluster as a process beside the
# control plane: the real JobSet controller (sigs.k8s.io/jobset, hack/jobset/build.sh) and Kueue
# (sigs.k8s.io/kueue, hack/kueue/build.sh).  Called through jobset.sh and kueue.sh (up.sh with
# TRAINCTL_JOBSET=1 / TRAINCTL_KUEUE=1, down.sh, the CTest fixtures); see docs/control-plane.md.
#
#   controller.sh jobset|kueue up     installs upstream's manifests, made the test cluster's by
#                    controller_manifests.py (CRDs, RBAC and webhook configurations, the webhooks
#                    pointed at 127.0.0.1), and starts the controller (idempotent); returns once
#                    /readyz answers and the API server has had an object through its webhooks
#                    (a server-side dry run)
#   controller.sh jobset|kueue down   stops the controller and deletes its webhook
#                    configurations, so that the cluster without it admits objects again (the
#                    CRDs and RBAC stay)
#
# The controller authenticates as upstream's service account (a client certificate for
# system:serviceaccount:<namespace>:<name>, signed by the cluster's CA), so it runs under
# upstream's RBAC, not as an administrator.  Its webhook server serves a certificate for
# 127.0.0.1 signed by the same CA, which is the webhook configurations' caBundle.  Leader
# election is off.  Ports (lib.sh): JobSet base+90..92, Kueue base+66..68 (webhook, metrics,
# health).
#
# Kueue, as upstream's Deployment runs it, needs two things a process does not have: the
# metrics certificate at the fixed path /etc/kueue/metrics/certs (read when its own certificate
# management is off), given to it in a private mount namespace over an overlay of /etc (the
# machine's /etc is not written), and the kubeflow.org and trainer.kubeflow.org CRDs, applied
# from manifests/crds before it starts so that its integrations are set up at once (it defers
# one whose API is missing, then polls with back-off).  Its visibility API server is off
# (feature gate VisibilityOnDemand): the test cluster aggregates no API.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

component="${1:-}"
cmd="${2:-}"
STATE="$(state_dir)"
PKI="$STATE/pki"
KUBECTL="$(cluster_bin_dir)/kubectl"
timeout_s="${TRAINCTL_UP_TIMEOUT:-120}"

case "$component" in
  jobset)
    TITLE=JobSet BUILD="$here/../jobset/build.sh"
    WEBHOOK_PORT=$JOBSET_WEBHOOK_PORT METRICS_PORT=$JOBSET_METRICS_PORT HEALTH_PORT=$JOBSET_HEALTH_PORT
    CRDS=(jobsets.jobset.x-k8s.io)
    # Upstream's labels on everything its install makes (the kustomization's labels).
    SELECTOR="app.kubernetes.io/name=jobset,app.kubernetes.io/instance=jobset"
    # Upstream's Deployment runs it with --zap-log-level=2; the rest is the config file.
    EXTRA_ARGS=(--zap-log-level=2)
    MANIFEST_ARGS=()
    ;;
  kueue)
    TITLE=Kueue BUILD="$here/../kueue/build.sh"
    WEBHOOK_PORT=$KUEUE_WEBHOOK_PORT METRICS_PORT=$KUEUE_METRICS_PORT HEALTH_PORT=$KUEUE_HEALTH_PORT
    CRDS=(workloads.kueue.x-k8s.io clusterqueues.kueue.x-k8s.io localqueues.kueue.x-k8s.io
          resourceflavors.kueue.x-k8s.io workloadpriorityclasses.kueue.x-k8s.io)
    SELECTOR="app.kubernetes.io/name=kueue"
    EXTRA_ARGS=(--zap-log-level=2 --feature-gates=VisibilityOnDemand=false)
    # Kueue's MPIJob integration reads v2beta1, which the API server converts through the
    # operator's conversion webhook. Only the real node's cluster runs that webhook all along; on
    # kwok alone every MPIJob create would fail while Kueue runs, so it is left off there.
    MANIFEST_ARGS=()
    real_node || MANIFEST_ARGS=(--without-framework kubeflow.org/mpijob)
    ;;
  -h|--help|"") sed -n '2,29p' "$0"; exit 0 ;;
  *) die "usage: controller.sh jobset|kueue up|down" ;;
esac
NAME="$component-controller"
DIR="$STATE/$component"

kubectl_admin() { "$KUBECTL" --kubeconfig="$STATE/kubeconfig" "$@"; }

health() { curl -fsS --max-time 2 "http://127.0.0.1:$HEALTH_PORT/$1" 2>/dev/null; }

# An object the API server sends through the component's mutating and validating webhooks (dry
# run: nothing is stored).  Succeeds only once both answer over TLS with the configurations' CA.
webhooks_answer() {
  case "$component" in
    jobset) kubectl_admin create --dry-run=server -o name -f - >/dev/null 2>&1 <<'EOF2'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: webhook-probe, namespace: default}
spec:
  replicatedJobs:
  - name: probe
    template:
      spec:
        template:
          spec:
            containers: [{name: probe, image: example.invalid/probe:1}]
EOF2
    ;;
    kueue) kubectl_admin create --dry-run=server -o name -f - >/dev/null 2>&1 <<'EOF2'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: webhook-probe}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: probe, resources: [{name: cpu, nominalQuota: 1}]}]
EOF2
    ;;
  esac
}

# Ready: /readyz answers ok and a dry run goes through the webhooks.
component_ready() { [[ "$(health readyz)" == ok ]] && webhooks_answer; }

crd_established() {
  [[ "$(kubectl_admin get crd "$1" \
      -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == True ]]
}

# Polled: `kubectl wait` fails at once on a CRD the API server has not given a status yet.
wait_crds() {
  local crd deadline=$(( SECONDS + timeout_s ))
  for crd in "$@"; do
    until crd_established "$crd"; do
      (( SECONDS < deadline )) || die "$component: the CRD $crd is not Established after ${timeout_s}s"
      sleep 0.2
    done
  done
}

# The command line that starts the controller (as the last arguments of `exec`).
launch_command() {
  local dist="$1"
  local args=("$dist/bin/$NAME" --config="$DIR/config.yaml"
              --kubeconfig="$STATE/config/$NAME.kubeconfig" "${EXTRA_ARGS[@]}")
  if [[ "$component" == kueue ]]; then
    # /etc/kueue/metrics/certs inside a private mount namespace (see the header).
    mkdir -p "$DIR/etc/upper/kueue/metrics/certs" "$DIR/etc/work"
    cp -f "$DIR/certs/tls.crt" "$DIR/certs/tls.key" "$DIR/etc/upper/kueue/metrics/certs/"
    local unshare=(unshare --mount --propagation private)
    [[ "$(id -u)" == 0 ]] || unshare+=(--map-root-user)
    printf '%q ' "${unshare[@]}" bash -c \
      'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc/upper,workdir=$1/etc/work" /etc && shift && exec "$@"' \
      mount-etc "$DIR" "${args[@]}"
  else
    printf '%q ' "${args[@]}"
  fi
}

controller_up() {
  [[ -s "$STATE/kubeconfig" && -s "$PKI/ca.key" ]] ||
    die "$component: no cluster at $STATE (start it with hack/cluster/up.sh, or TRAINCTL_${component^^}=1 hack/cluster/up.sh)"
  local dist t0=$SECONDS
  dist="$("$BUILD")"
  mkdir -p "$DIR/certs"
  chmod 700 "$DIR" "$DIR/certs"

  # Upstream's install, made the test cluster's (also tells which service account to be).
  /usr/bin/python3 "$here/controller_manifests.py" "$dist/install.yaml" --component "$component" \
    --webhook-port "$WEBHOOK_PORT" --ca-file "$PKI/ca.crt" --cert-dir "$DIR/certs" \
    --metrics-address "127.0.0.1:$METRICS_PORT" --health-address "127.0.0.1:$HEALTH_PORT" \
    --manifests-out "$DIR/install.yaml" --config-out "$DIR/config.yaml" --identity-out "$DIR/identity" \
    "${MANIFEST_ARGS[@]}" ||
    die "$component: cannot make the cluster's manifests from $dist/install.yaml"
  local namespace account
  read -r namespace account <"$DIR/identity"

  ca_sign "$NAME" \
    "/O=system:serviceaccounts/O=system:serviceaccounts:$namespace/CN=system:serviceaccount:$namespace:$account" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"
  ca_sign "$component-webhook" "/CN=$component-webhook" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost"
  # The file names controller-runtime's webhook and metrics servers read from their cert dir.
  cp -f "$PKI/$component-webhook.crt" "$DIR/certs/tls.crt"
  cp -f "$PKI/$component-webhook.key" "$DIR/certs/tls.key"
  cert_kubeconfig "$STATE/config/$NAME.kubeconfig" "$NAME"

  if [[ "$component" == kueue ]]; then
    kubectl_admin apply --server-side --force-conflicts --field-manager=trainctl-crds \
      -f "$here/../../manifests/crds" >/dev/null || die "kueue: applying manifests/crds failed"
  fi
  kubectl_admin apply --server-side --force-conflicts --field-manager="trainctl-$component" -f "$DIR/install.yaml" >/dev/null ||
    die "$component: applying $DIR/install.yaml failed"
  wait_crds "${CRDS[@]}"

  local pid port
  if ! pid="$(component_pid "$NAME")"; then
    for port in "$WEBHOOK_PORT" "$METRICS_PORT" "$HEALTH_PORT"; do
      port_in_use "$port" && die "port $port (for $NAME) is already in use by another program; set TRAINCTL_PORT_BASE"
    done
    local logf="$STATE/logs/$NAME.log" i launch
    launch="$(launch_command "$dist")"
    printf '==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NAME" >>"$logf"
    # shellcheck disable=SC2086  # launch is a quoted command line (printf %q)
    setsid bash -c 'echo $$ >"$0"; eval "exec $1"' "$(pid_file "$NAME")" "$launch" \
      >>"$logf" 2>&1 </dev/null 8>&- 9>&- &
    for (( i = 0; i < 50; i++ )); do component_pid "$NAME" >/dev/null && break; sleep 0.1; done
    pid="$(component_pid "$NAME")" || { tail -n 20 "$logf" >&2; die "$NAME did not start (log: $logf)"; }
    log "started $NAME (pid $pid, log: $logf)"
  fi
  wait_component_ready "$NAME" "$timeout_s" "readiness and webhooks" component_ready
  log "$TITLE $(basename "$dist") ready in $(( SECONDS - t0 ))s (webhooks on 127.0.0.1:$WEBHOOK_PORT)"
}

controller_down() {
  stop_component "$NAME"
  # Without the controller its webhooks (failurePolicy Fail) would refuse the objects they take.
  if [[ -s "$STATE/kubeconfig" ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; then
    kubectl_admin delete mutatingwebhookconfigurations,validatingwebhookconfigurations -l "$SELECTOR" \
      --ignore-not-found >/dev/null || log "warning: could not delete $TITLE's webhook configurations"
  fi
}

case "$cmd" in
  up) controller_up ;;
  down) controller_down ;;
  *) die "usage: controller.sh jobset|kueue up|down" ;;
esac
