#!/usr/bin/env bash
# The real JobSet controller (sigs.k8s.io/jobset, built by hack/jobset/build.sh) in the test
# cluster, as a process beside the control plane.  Called by up.sh when TRAINCTL_JOBSET=1 and by
# down.sh; see docs/control-plane.md ("JobSet").
#
#   jobset.sh up     installs JobSet's manifests (hack/jobset/manifests.py: upstream's CRD, RBAC
#                    and webhook configurations, the webhooks pointed at 127.0.0.1) and starts
#                    the controller (idempotent); returns once the API server has had a JobSet
#                    through both webhooks (a server-side dry run)
#   jobset.sh down   stops the controller and deletes its webhook configurations, so that the
#                    cluster without it admits pods and JobSets again (the CRD and RBAC stay)
#
# The controller authenticates as upstream's service account (a client certificate for
# system:serviceaccount:<namespace>:<name>, signed by the cluster's CA), so it runs under
# upstream's RBAC, not as an administrator.  Its webhook server serves a certificate for
# 127.0.0.1 signed by the same CA, which is the webhook configurations' caBundle.  Leader
# election is off; webhook, metrics and health ports are base+90, +91, +92 (lib.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

cmd="${1:-}"
STATE="$(state_dir)"
PKI="$STATE/pki"
DIR="$STATE/jobset"
NAME=jobset-controller
KUBECTL="$(cluster_bin_dir)/kubectl"
timeout_s="${TRAINCTL_UP_TIMEOUT:-120}"
# Upstream's labels on everything its install makes (the kustomization's commonLabels).
SELECTOR="app.kubernetes.io/name=jobset,app.kubernetes.io/instance=jobset"

kubectl_admin() { "$KUBECTL" --kubeconfig="$STATE/kubeconfig" "$@"; }

health() { curl -fsS --max-time 2 "http://127.0.0.1:$JOBSET_HEALTH_PORT/$1" 2>/dev/null; }

# A JobSet the API server sends through the mutating and the validating webhook (dry run: nothing
# is stored).  Succeeds only once both answer over TLS with the CA of the configurations.
webhooks_answer() {
  kubectl_admin create --dry-run=server -o name -f - >/dev/null 2>&1 <<'EOF'
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
EOF
}

# Ready: /readyz answers ok and a dry run goes through the webhooks.
component_ready() { [[ "$(health readyz)" == ok ]] && webhooks_answer; }

jobset_up() {
  [[ -s "$STATE/kubeconfig" && -s "$PKI/ca.key" ]] ||
    die "jobset: no cluster at $STATE (start it with hack/cluster/up.sh, or TRAINCTL_JOBSET=1 hack/cluster/up.sh)"
  local dist t0=$SECONDS
  dist="$("$here/../jobset/build.sh")"
  mkdir -p "$DIR/certs"
  chmod 700 "$DIR/certs"

  # Upstream's install, made the test cluster's (also tells which service account to be).
  /usr/bin/python3 "$here/../jobset/manifests.py" "$dist/install.yaml" \
    --webhook-port "$JOBSET_WEBHOOK_PORT" --ca-file "$PKI/ca.crt" --cert-dir "$DIR/certs" \
    --metrics-address "127.0.0.1:$JOBSET_METRICS_PORT" --health-address "127.0.0.1:$JOBSET_HEALTH_PORT" \
    --manifests-out "$DIR/install.yaml" --config-out "$DIR/config.yaml" --identity-out "$DIR/identity" ||
    die "jobset: cannot make the cluster's manifests from $dist/install.yaml"
  local namespace account
  read -r namespace account <"$DIR/identity"

  ca_sign jobset-controller \
    "/O=system:serviceaccounts/O=system:serviceaccounts:$namespace/CN=system:serviceaccount:$namespace:$account" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"
  ca_sign jobset-webhook "/CN=jobset-webhook" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,DNS:localhost"
  # The file names controller-runtime's webhook and metrics servers read from their cert dir.
  cp -f "$PKI/jobset-webhook.crt" "$DIR/certs/tls.crt"
  cp -f "$PKI/jobset-webhook.key" "$DIR/certs/tls.key"
  cert_kubeconfig "$STATE/config/$NAME.kubeconfig" jobset-controller

  kubectl_admin apply --server-side --force-conflicts --field-manager=trainctl-jobset -f "$DIR/install.yaml" >/dev/null ||
    die "jobset: applying $DIR/install.yaml failed"
  # Polled: `kubectl wait` fails at once on a CRD the API server has not given a status yet.
  local deadline=$(( SECONDS + timeout_s ))
  until [[ "$(kubectl_admin get crd jobsets.jobset.x-k8s.io \
      -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" == True ]]; do
    (( SECONDS < deadline )) || die "jobset: the CRD jobsets.jobset.x-k8s.io is not Established after ${timeout_s}s"
    sleep 0.2
  done

  local pid port
  if ! pid="$(component_pid "$NAME")"; then
    for port in "$JOBSET_WEBHOOK_PORT" "$JOBSET_METRICS_PORT" "$JOBSET_HEALTH_PORT"; do
      port_in_use "$port" && die "port $port (for $NAME) is already in use by another program; set TRAINCTL_PORT_BASE"
    done
    local logf="$STATE/logs/$NAME.log" i
    printf '==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NAME" >>"$logf"
    # Upstream's Deployment runs it with --zap-log-level=2; the rest is the config file.
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$(pid_file "$NAME")" "$dist/bin/$NAME" \
      --config="$DIR/config.yaml" --kubeconfig="$STATE/config/$NAME.kubeconfig" --zap-log-level=2 \
      >>"$logf" 2>&1 </dev/null 8>&- 9>&- &
    for (( i = 0; i < 50; i++ )); do component_pid "$NAME" >/dev/null && break; sleep 0.1; done
    pid="$(component_pid "$NAME")" || { tail -n 20 "$logf" >&2; die "$NAME did not start (log: $logf)"; }
    log "started $NAME (pid $pid, log: $logf)"
  fi
  wait_component_ready "$NAME" "$timeout_s" "readiness and webhooks" component_ready
  log "JobSet $(basename "$dist") ready in $(( SECONDS - t0 ))s (webhooks on 127.0.0.1:$JOBSET_WEBHOOK_PORT)"
}

jobset_down() {
  stop_component "$NAME"
  # Without the controller its webhooks (failurePolicy Fail) would refuse every JobSet and
  # every pod labelled with a JobSet's name.
  if [[ -s "$STATE/kubeconfig" ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; then
    kubectl_admin delete mutatingwebhookconfigurations,validatingwebhookconfigurations -l "$SELECTOR" \
      --ignore-not-found >/dev/null || log "warning: could not delete JobSet's webhook configurations"
  fi
}

case "$cmd" in
  up) jobset_up ;;
  down) jobset_down ;;
  -h|--help) sed -n '2,17p' "$0" ;;
  *) die "usage: jobset.sh up|down" ;;
esac
