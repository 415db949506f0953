#!/usr/bin/env bash
# A real node for the test cluster: a kubelet with containerd and runc, CNI bridge networking,
# CoreDNS for service names and kube-proxy for service addresses, beside (or instead of) the
# kwok nodes.  Called by up.sh and down.sh when TRAINCTL_REAL_NODE=1; see
# docs/control-plane.md ("A real node").
#
#   node.sh check   prints nothing and exits 0 when this machine can run the node; otherwise
#                   one line naming what is missing (exit 3)
#   node.sh up      starts the registry, containerd, CoreDNS, kube-proxy and the kubelet
#                   (idempotent), pushes the pause image, waits until the node is Ready
#   node.sh down    deletes the node's pods, stops every node process, and removes what the
#                   node made on this machine (bridge, network namespaces, mounts, cgroups,
#                   iptables chains, log links, kernel settings): nothing is left behind
#   node.sh leftovers  lists what a node left on this machine (empty after a clean down)
#   node.sh forget-stale  drops from containerd every image the registry holds a newer build
#                   of under the same name (after images.sh rebuilt one the node had pulled)
#
# One real node per machine: the kubelet's kernel settings and kube-proxy's iptables chains
# are global, so up refuses while another kubelet runs.
#
# Network: the node's pods get addresses on a bridge this script creates ($NODE_BRIDGE,
# $NODE_CIDR).  Forwarding is on while the node runs (a Service address between two pods is
# routed), but everything a pod sends out of any other interface is dropped, so nothing
# reaches anything outside this machine.  containerd reaches image registries only through
# the loopback registry (every registry name is mapped to it, and any other address goes to a
# proxy that refuses), so nothing is ever pulled from outside this machine.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
# A command that fails unexpectedly ends the script (set -e): say which, never exit silently.
# (Not in subshells: a failing command substitution a loop reads from does not end the script.)
set -E
trap '(( BASH_SUBSHELL )) || log "node.sh: failed at line $LINENO: $BASH_COMMAND"' ERR

cmd="${1:-}"
STATE="$(state_dir)"
# down.sh may run without the port base the node was started with: node.sh up records it.
if [[ -z "${TRAINCTL_PORT_BASE:-}" && -s "$STATE/node/port-base" ]]; then
  TRAINCTL_PORT_BASE="$(cat "$STATE/node/port-base")"
  export TRAINCTL_PORT_BASE
  # shellcheck source=lib.sh
  source "$here/lib.sh"
fi
NODE_DIR="$STATE/node"
PKI="$STATE/pki"
timeout_s="${TRAINCTL_UP_TIMEOUT:-120}"

# --------------------------------------------------------------------------
# What the node needs from this machine.  One line naming the first thing missing.
node_problem() {
  [[ "$(id -u)" == 0 ]] || { echo "the real node needs root (containerd, runc, network namespaces)"; return; }
  local tool
  for tool in containerd runc ctr docker-registry iptables ip6tables conntrack socat umoci skopeo buildah mmdebstrap \
    catatonit apt-get ip; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (hack/install-deps.sh test installs it)"; return; }
  done
  (( $(port_base) % 100 == 0 )) ||
    { echo "TRAINCTL_PORT_BASE=$(port_base) must be a multiple of 100 for a real node (its subnet is derived from it)"; return; }
  local other
  other="$(other_kubelet)"
  [[ -z "$other" ]] || { echo "another kubelet runs on this machine ($other); one real node at a time"; return; }
  local plugin
  for plugin in bridge host-local loopback portmap; do
    [[ -x "$CNI_BIN_DIR/$plugin" ]] || { echo "CNI plugin $CNI_BIN_DIR/$plugin is missing (package containernetworking-plugins)"; return; }
  done
  local controller
  for controller in cpu cpuacct cpuset memory pids; do
    if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
      grep -qw "${controller/cpuacct/cpu}" /sys/fs/cgroup/cgroup.controllers ||
        { echo "cgroup controller $controller is not available (/sys/fs/cgroup/cgroup.controllers)"; return; }
    else
      [[ -d "/sys/fs/cgroup/$controller" ]] ||
        { echo "cgroup controller $controller is not mounted (/sys/fs/cgroup/$controller)"; return; }
    fi
  done
  grep -qw overlay /proc/filesystems || { echo "the kernel has no overlay filesystem (containerd's snapshotter needs it)"; return; }
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] ||
    { echo "bridge netfilter is not available (/proc/sys/net/bridge); kube-proxy needs it"; return; }
  iptables -t nat -S >/dev/null 2>&1 || { echo "iptables cannot read the nat table: $(iptables -t nat -S 2>&1 | head -1)"; return; }
  local name port owner
  for name in registry coredns-health coredns-ready kubelet kubelet-healthz kube-proxy-healthz kube-proxy-metrics containerd-stream; do
    port="$(node_port "$name")"
    owner="${name%%-*}"
    [[ "$name" == kube-proxy-* ]] && owner=kube-proxy
    if ! node_pid "$owner" >/dev/null 2>&1 && port_in_use "$port"; then
      echo "port $port (for $name) is in use by another program; set TRAINCTL_PORT_BASE"; return
    fi
  done
}

# A kubelet that is not this node's (another state directory, or a real installation).
other_kubelet() {
  local pid cmdline
  for pid in $(pgrep -x kubelet || true); do
    # A kubelet just stopped is a zombie until PID 1 reaps it (an empty command line).
    alive "$pid" || continue
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
    [[ "$cmdline" == *"$STATE/"* ]] || { echo "pid $pid"; return; }
  done
}

# --------------------------------------------------------------------------
# Processes: the same pid-file scheme as up.sh's components, under $NODE_DIR/run.
node_pid() { # name
  local f="$NODE_DIR/run/$1.pid" pid cmdline
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"$STATE/"* ]] || return 1
  alive "$pid" || return 1
  echo "$pid"
}

start_node_process() { # name program args...
  local name="$1"; shift
  node_pid "$name" >/dev/null && return 0
  local logf="$STATE/logs/node-$name.log" pid i
  printf '==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" >>"$logf"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$NODE_DIR/run/$name.pid" "$@" \
    >>"$logf" 2>&1 </dev/null 8>&- 9>&- &
  for (( i = 0; i < 50; i++ )); do node_pid "$name" >/dev/null && break; sleep 0.1; done
  pid="$(node_pid "$name")" || { tail -n 20 "$logf" >&2; die "node: $name did not start (log: $logf)"; }
  log "node: started $name (pid $pid, log: $logf)"
}

wait_until() { # description command...
  local what="$1"; shift
  local deadline=$(( SECONDS + timeout_s ))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "node: timed out after ${timeout_s}s waiting for $what (logs: $STATE/logs/node-*.log)"
    sleep 0.3
  done
}

kubectl_admin() { "$(cluster_bin_dir)/kubectl" --kubeconfig="$STATE/kubeconfig" "$@"; }

# --------------------------------------------------------------------------
# Configuration files.
# Whether this process may lower its OOM score (CAP_SYS_RESOURCE); tried in a child.
oom_score_lowerable() {
  (
    now="$(cat /proc/self/oom_score_adj)"
    (( now > -1000 )) && echo $(( now - 1 )) >/proc/self/oom_score_adj
  ) 2>/dev/null
}

write_node_config() {
  mkdir -p "$NODE_DIR"/{run,config,certs.d,cni,kubelet,pod-logs,containerd}
  local client="keyUsage=critical,digitalSignature,keyEncipherment"
  ca_sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client" "extendedKeyUsage=clientAuth"
  ca_sign kubelet-serving "/CN=$NODE_NAME" "$client" "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:$NODE_IP,IP:127.0.0.1,DNS:$NODE_NAME"
  ca_sign kube-proxy "/CN=system:kube-proxy" "$client" "extendedKeyUsage=clientAuth"
  ca_sign coredns "/O=system:masters/CN=trainctl-coredns" "$client" "extendedKeyUsage=clientAuth"
  cert_kubeconfig "$NODE_DIR/config/kubelet.kubeconfig" kubelet
  cert_kubeconfig "$NODE_DIR/config/kube-proxy.kubeconfig" kube-proxy
  cert_kubeconfig "$NODE_DIR/config/coredns.kubeconfig" coredns

  # Every registry name resolves to the loopback registry (containerd's hosts directory);
  # an image it does not hold is a real pull error.
  local registry
  for registry in "${MAPPED_REGISTRIES[@]}"; do
    mkdir -p "$NODE_DIR/certs.d/$registry"
    printf 'server = "http://127.0.0.1:%s"\n[host."http://127.0.0.1:%s"]\n  capabilities = ["pull", "resolve"]\n' \
      "$(node_port registry)" "$(node_port registry)" >"$NODE_DIR/certs.d/$registry/hosts.toml"
  done

  cat >"$NODE_DIR/config/containerd.toml" <<EOF
version = 2
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
[grpc]
  address = "$NODE_DIR/run/containerd.sock"
[ttrpc]
  address = "$NODE_DIR/run/containerd.sock.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:$PAUSE_TAG"
  stream_server_address = "127.0.0.1"
  stream_server_port = "$(node_port containerd-stream)"
  # Where root may not lower an OOM score (sandboxes like this machine's), a container's score
  # is clamped at containerd's own instead of failing the container (the kubelet asks -998 for
  # a pod's sandbox and -997 for Guaranteed pods).
  restrict_oom_score_adj = $(oom_score_lowerable && echo false || echo true)
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$CNI_BIN_DIR"
  conf_dir = "$NODE_DIR/cni"
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "$NODE_DIR/certs.d"
EOF

  # The bridge plugin attaches pods to the bridge made below; no masquerade, and the bridge is
  # not made the host's gateway (which would turn on forwarding).
  cat >"$NODE_DIR/cni/10-trainctl.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "trainctl",
  "plugins": [
    {"type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": false, "ipMasq": false,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$NODE_DIR/cni-ipam",
              "ranges": [[{"subnet": "$NODE_CIDR", "rangeStart": "$NODE_RANGE_START", "gateway": "$NODE_IP"}]],
              "routes": [{"dst": "0.0.0.0/0", "gw": "$NODE_IP"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

  printf 'nameserver %s\n' "$NODE_IP" >"$NODE_DIR/config/resolv.conf"

  cat >"$NODE_DIR/config/Corefile" <<EOF
.:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:$(node_port coredns-health)
    ready 127.0.0.1:$(node_port coredns-ready)
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $NODE_DIR/config/coredns.kubeconfig trainctl
        pods insecure
        ttl 5
    }
    cache 5
}
EOF

  cat >"$NODE_DIR/config/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $(node_port kubelet)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $(node_port kubelet-healthz)
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$NODE_DIR/run/containerd.sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
resolvConf: $NODE_DIR/config/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
cgroupRoot: /$CGROUP_ROOT
registerNode: true
serializeImagePulls: false
imageGCHighThresholdPercent: 100
# No node-pressure eviction ("0%" turns a signal off). In CI's run of 2026-11-26 every pod
# after the first few was Failed without a container status while the node stayed Ready: the
# signature of a pressure condition's admission check (on cgroup v1 the kubelet counts active
# page cache as used memory; a test run reads gigabytes). A test node that is really out of
# memory or disk fails its pods with the real error instead; docs/control-plane.md.
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%", imagefs.inodesFree: "0%"}
nodeStatusReportFrequency: 10s
localStorageCapacityIsolation: true
EOF
}

# --------------------------------------------------------------------------
# The kubelet's cgroups live under /$CGROUP_ROOT in every hierarchy (cgroupfs driver), so its
# QoS cgroups never mix with another kubelet's and down removes exactly these.
cgroup_dirs() {
  local d
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    echo "/sys/fs/cgroup/$CGROUP_ROOT"
  else
    for d in /sys/fs/cgroup/*/; do
      # Every hierarchy, the hybrid layout's cgroup2 `unified` one too (runc mirrors there).
      if [[ -f "$d/cgroup.procs" ]]; then echo "${d%/}/$CGROUP_ROOT"; fi
    done
  fi
}
ensure_cgroup_root() {
  local d f
  for d in $(cgroup_dirs); do
    mkdir -p "$d"
    # cgroup v1's cpuset starts empty in a new cgroup: give it its parent's CPUs and memory nodes.
    for f in cpuset.cpus cpuset.mems; do
      if [[ -f "$d/$f" && -z "$(cat "$d/$f")" ]]; then cat "$(dirname "$d")/$f" >"$d/$f"; fi
    done
  done
}
remove_cgroup_root() {
  local d
  for d in $(cgroup_dirs); do
    [[ -d "$d" ]] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

ensure_bridge() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
    log "node: created bridge $NODE_BRIDGE ($NODE_IP/${NODE_CIDR#*/})"
  fi
  # Read whole, then matched: `ip … | grep -q` fails under pipefail when grep stops reading
  # early (ip gets SIGPIPE), and the address was then added twice ("Address already assigned").
  local addresses
  addresses=$(ip addr show dev "$NODE_BRIDGE")
  [[ "$addresses" == *"inet $NODE_IP/"* ]] || ip addr add "$NODE_IP/${NODE_CIDR#*/}" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
}

# Pods may reach each other and this machine, never anything beyond it: forwarding is on while
# the node runs (a Service address between two pods is routed), and everything a pod sends out
# of an interface other than the bridge is counted and dropped in $EGRESS_CHAIN.  down restores
# the forwarding setting it found.
EGRESS_CHAIN="TC-EGRESS-$(port_base)"
ensure_egress_rules() {
  iptables -N "$EGRESS_CHAIN" 2>/dev/null || true
  iptables -F "$EGRESS_CHAIN"
  iptables -A "$EGRESS_CHAIN" -j DROP
  iptables -C FORWARD -i "$NODE_BRIDGE" ! -o "$NODE_BRIDGE" -j "$EGRESS_CHAIN" 2>/dev/null ||
    iptables -I FORWARD 1 -i "$NODE_BRIDGE" ! -o "$NODE_BRIDGE" -j "$EGRESS_CHAIN"
  # Between two pods (bridged, or routed through a Service address), whatever FORWARD's policy.
  iptables -C FORWARD -i "$NODE_BRIDGE" -o "$NODE_BRIDGE" -j ACCEPT 2>/dev/null ||
    iptables -I FORWARD 2 -i "$NODE_BRIDGE" -o "$NODE_BRIDGE" -j ACCEPT
  echo 1 >/proc/sys/net/ipv4/ip_forward
  echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
}

# Kernel settings the node's programs change (the kubelet's kernel tunables, forwarding,
# kube-proxy's bridge and conntrack settings): saved before the first start, restored by down.
NODE_SYSCTLS=(net/ipv4/ip_forward net/ipv4/conf/all/accept_redirects vm/overcommit_memory vm/panic_on_oom kernel/panic
  kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes
  net/ipv4/conf/all/route_localnet net/bridge/bridge-nf-call-iptables
  net/netfilter/nf_conntrack_max net/netfilter/nf_conntrack_tcp_timeout_established
  net/netfilter/nf_conntrack_tcp_timeout_close_wait)
save_sysctls() {
  [[ -s "$NODE_DIR/sysctl.before" ]] && return 0
  local key
  for key in "${NODE_SYSCTLS[@]}"; do
    [[ -r "/proc/sys/$key" ]] && printf '%s %s\n' "$key" "$(cat "/proc/sys/$key")"
  done >"$NODE_DIR/sysctl.before.tmp"
  mv "$NODE_DIR/sysctl.before.tmp" "$NODE_DIR/sysctl.before"
}
changed_sysctls() { # prints "key was now" for each setting that differs from the saved one
  [[ -s "$NODE_DIR/sysctl.before" ]] || return 0
  local key value
  while read -r key value; do
    [[ "$(cat "/proc/sys/$key" 2>/dev/null)" == "$value" ]] || echo "$key $value $(cat "/proc/sys/$key" 2>/dev/null)"
  done <"$NODE_DIR/sysctl.before"
}
restore_sysctls() {
  [[ -s "$NODE_DIR/sysctl.before" ]] || return 0
  local key value
  while read -r key value; do
    echo "$value" >"/proc/sys/$key" 2>/dev/null || log "node: could not restore $key to $value"
  done <"$NODE_DIR/sysctl.before"
  if [[ -z "$(changed_sysctls)" ]]; then rm -f "$NODE_DIR/sysctl.before"; fi
}
remove_egress_rules() {
  while iptables -D FORWARD -i "$NODE_BRIDGE" ! -o "$NODE_BRIDGE" -j "$EGRESS_CHAIN" 2>/dev/null; do :; done
  while iptables -D FORWARD -i "$NODE_BRIDGE" -o "$NODE_BRIDGE" -j ACCEPT 2>/dev/null; do :; done
  iptables -F "$EGRESS_CHAIN" 2>/dev/null || true
  iptables -X "$EGRESS_CHAIN" 2>/dev/null || true
}

# containerd keeps the images it pulled in the node's folder, and pods pull only what is not
# there (IfNotPresent): an image rebuilt since (images.sh) would not be seen. Drops every image
# whose digest is no longer the registry's for its name.
forget_stale_images() {
  local ctr=(ctr -a "$NODE_DIR/run/containerd.sock" -n k8s.io) ref digest repo tag headers code now
  while read -r ref _ digest _; do
    [[ "$ref" == *@* || "$ref" == sha256:* || "$ref" != */*:* ]] && continue
    repo="${ref#*/}" tag="${repo##*:}" repo="${repo%:*}"
    # An answer is needed either way: a name the registry no longer has (404) is dropped too,
    # so that a pod asking for it gets the pull error it would get on a fresh node.
    headers="$(curl -sI --max-time 5 \
      -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
      -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
      -H 'Accept: application/vnd.oci.image.index.v1+json' \
      -H 'Accept: application/vnd.docker.distribution.manifest.list.v2+json' \
      "http://127.0.0.1:$(node_port registry)/v2/$repo/manifests/$tag" 2>/dev/null | tr -d '\r' || true)"
    code="$(awk 'NR == 1 {print $2}' <<<"$headers")"
    now="$(awk -F': ' 'tolower($1) == "docker-content-digest" {print $2}' <<<"$headers")"
    if [[ "$code" == 404 || ( "$code" == 200 && -n "$now" && "$now" != "$digest" ) ]]; then
      "${ctr[@]}" images rm "$ref" "${ref%:*}@$digest" >/dev/null 2>&1 || true
      if [[ "$code" == 404 ]]; then
        log "node: dropped $ref (the registry no longer has it)"
      else
        log "node: dropped $ref (rebuilt since it was pulled)"
      fi
    fi
  done < <("${ctr[@]}" images ls 2>/dev/null | tail -n +2)
  true
}

# The API server listens on loopback only; pods reach it through the `kubernetes` Service,
# whose endpoint is this relay on the bridge address.
start_relay() {
  # -lf names the state directory on its command line (how node_pid knows it is ours).
  start_node_process apiserver-relay socat -lf "$STATE/logs/node-apiserver-relay.log" \
    "TCP-LISTEN:$APISERVER_PORT,bind=$NODE_IP,reuseaddr,fork" "TCP:127.0.0.1:$APISERVER_PORT"
}

registry_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$(node_port registry)/v2/" >/dev/null; }
node_ready() {
  [[ "$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

node_up() {
  local problem
  problem="$(node_problem)"
  [[ -z "$problem" ]] || { echo "$problem" >&2; exit 3; }
  local bin
  bin="$("$here/build.sh")"
  write_node_config
  port_base >"$NODE_DIR/port-base"
  save_sysctls
  ensure_bridge
  ensure_egress_rules
  ensure_cgroup_root
  [[ -e "$NODE_DIR/var-log-containers.existed" || -e "$NODE_DIR/var-log-containers.made" ]] ||
    if [[ -d /var/log/containers ]]; then touch "$NODE_DIR/var-log-containers.existed"; else touch "$NODE_DIR/var-log-containers.made"; fi

  # The registry: its storage is in the cache, so images built once are kept between runs.
  mkdir -p "$REGISTRY_DIR"
  cat >"$NODE_DIR/config/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $REGISTRY_DIR}
  delete: {enabled: true}
http:
  addr: 127.0.0.1:$(node_port registry)
EOF
  start_node_process registry docker-registry serve "$NODE_DIR/config/registry.yml"
  wait_until "the registry on 127.0.0.1:$(node_port registry)" registry_ready
  "$here/images.sh" pause busybox alpine examples kubectl-delivery >&2

  # Any registry address that is not mapped to loopback goes to a proxy that refuses.
  start_node_process containerd env HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    NO_PROXY=127.0.0.1,localhost containerd --config "$NODE_DIR/config/containerd.toml"
  wait_until "containerd" ctr -a "$NODE_DIR/run/containerd.sock" version
  forget_stale_images
  start_relay
  start_node_process coredns "$bin/coredns" -conf "$NODE_DIR/config/Corefile"
  wait_until "CoreDNS ready" curl -fsS --max-time 2 "http://127.0.0.1:$(node_port coredns-ready)/ready"
  start_node_process kube-proxy "$bin/kube-proxy" \
    --kubeconfig="$NODE_DIR/config/kube-proxy.kubeconfig" --hostname-override="$NODE_NAME" \
    --proxy-mode=iptables --cluster-cidr="$NODE_CIDR" --bind-address="$NODE_IP" \
    --healthz-bind-address="127.0.0.1:$(node_port kube-proxy-healthz)" \
    --metrics-bind-address="127.0.0.1:$(node_port kube-proxy-metrics)" \
    --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0s \
    --conntrack-tcp-timeout-close-wait=0s --iptables-localhost-nodeports=false
  start_node_process kubelet "$bin/kubelet" \
    --config="$NODE_DIR/config/kubelet.yaml" --kubeconfig="$NODE_DIR/config/kubelet.kubeconfig" \
    --root-dir="$NODE_DIR/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
    --node-labels="type=real" --v=1
  wait_until "node $NODE_NAME Ready" node_ready
}

# --------------------------------------------------------------------------
stop_node_process() { # grace name
  local grace="$1" name="$2" pid i
  pid="$(node_pid "$name")" || { rm -f "$NODE_DIR/run/$name.pid"; return 0; }
  log "node: stopping $name (pid $pid)"
  # Its whole process group (setsid made it the leader): socat's per-connection children too.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for (( i = 0; i < grace * 10; i++ )); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; fi
  rm -f "$NODE_DIR/run/$name.pid"
}

# The network namespaces of the node's pod sandboxes (from containerd's container specs).
sandbox_netns() {
  local ctr=(ctr -a "$NODE_DIR/run/containerd.sock" -n k8s.io) id
  for id in $("${ctr[@]}" containers ls -q 2>/dev/null); do
    "${ctr[@]}" containers info "$id" 2>/dev/null | python3 -c '
import json, sys
try:
    spec = json.load(sys.stdin).get("Spec") or {}
except ValueError:
    sys.exit(0)
for ns in (spec.get("linux") or {}).get("namespaces") or []:
    if ns.get("type") == "network" and ns.get("path", "").startswith("/var/run/netns/"):
        print(ns["path"].rsplit("/", 1)[1])' || true
  done | sort -u
}

# Removes the KUBE-* rules and chains of one iptables program (iptables or ip6tables).
remove_kube_chains() { # program
  local prog="$1" table chain
  for table in filter nat mangle; do
    # -S prints each rule as the arguments that made it; xargs keeps their quotes.
    "$prog" -t "$table" -S 2>/dev/null | grep -- '^-A .*KUBE-' | sed 's/^-A/-D/' |
      xargs -r -L1 "$prog" -t "$table" 2>/dev/null || true
    for chain in $("$prog" -t "$table" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^KUBE-/ {print $2}'); do
      "$prog" -t "$table" -F "$chain" 2>/dev/null || true
    done
    for chain in $("$prog" -t "$table" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^KUBE-/ {print $2}'); do
      "$prog" -t "$table" -X "$chain" 2>/dev/null || true
    done
  done
}

node_down() {
  [[ -d "$NODE_DIR" ]] || return 0
  local ctr=(ctr -a "$NODE_DIR/run/containerd.sock" -n k8s.io)
  # The pods first, through the API while the kubelet still runs (grace periods cut to 2 s:
  # an MPI worker's `sleep` ignores SIGTERM for its 30 s); the workloads that would make them
  # again (the deployed operator's ReplicaSet) before them.
  if node_pid kubelet >/dev/null && [[ -s "$STATE/kubeconfig" ]]; then
    kubectl_admin delete deployments,replicasets,statefulsets,daemonsets,jobs -A --all --wait=false \
      >/dev/null 2>&1 || true
    kubectl_admin delete pods -A --field-selector "spec.nodeName=$NODE_NAME" --grace-period=2 --wait=false \
      >/dev/null 2>&1 || true
    local deadline=$(( SECONDS + 30 ))
    while (( SECONDS < deadline )) && [[ -n "$("${ctr[@]}" tasks ls -q 2>/dev/null)" ]]; do sleep 0.5; done
  fi
  stop_node_process 10 kubelet
  # Whatever still runs in containerd; the namespaces of its sandboxes are removed below.
  local netns=()
  if node_pid containerd >/dev/null; then
    mapfile -t netns < <(sandbox_netns)
    local id
    for id in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $("${ctr[@]}" containers ls -q 2>/dev/null); do "${ctr[@]}" containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  stop_node_process 10 kube-proxy
  stop_node_process 5 coredns
  stop_node_process 5 apiserver-relay
  stop_node_process 10 containerd
  stop_node_process 5 registry
  # containerd-shim processes that outlived containerd (they name its state directory).
  local pid
  for pid in $(pgrep -f -- "containerd-shim.*$NODE_DIR" || true); do kill -KILL "$pid" 2>/dev/null || true; done
  # Mounts under the node's directories (pod volumes, container root filesystems).
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(awk -v d="$NODE_DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r)
  local ns
  for ns in "${netns[@]}"; do [[ -n "$ns" ]] && ip netns delete "$ns" 2>/dev/null || true; done
  # The kernel's view: the bridge, the egress rules, the kubelet's and kube-proxy's chains
  # (only one node per machine runs, see other_kubelet), the settings they changed.
  remove_egress_rules
  if [[ -z "$(other_kubelet)" ]]; then
    remove_kube_chains iptables
    remove_kube_chains ip6tables
  fi
  restore_sysctls
  if ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then ip link delete "$NODE_BRIDGE" 2>/dev/null || true; fi
  remove_cgroup_root
  # The kubelet's links to container logs (/var/log/containers is fixed in the kubelet).
  if [[ -d /var/log/containers ]]; then
    find /var/log/containers -maxdepth 1 -type l -lname "$NODE_DIR/*" -delete 2>/dev/null || true
    if [[ -e "$NODE_DIR/var-log-containers.made" ]]; then rmdir /var/log/containers 2>/dev/null || true; fi
  fi
  rm -f "$NODE_DIR/var-log-containers.made" "$NODE_DIR/var-log-containers.existed"
  rm -rf "$NODE_DIR/containerd/state" "$NODE_DIR/run" "$NODE_DIR/cni-ipam"
}

# Lists what the node left on this machine (empty after a clean down).
node_leftovers() {
  local pid
  for pid in $(pgrep -f -- "$NODE_DIR" || true); do
    [[ "$pid" == "$$" || "$pid" == "$BASHPID" ]] && continue
    echo "process $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-100)"
  done
  awk -v d="$NODE_DIR/" 'index($2, d) == 1 {print "mount " $2}' /proc/self/mounts
  if ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then echo "bridge $NODE_BRIDGE"; fi
  "$here/outside.sh" leftovers # the egress test's "outside" namespace
  local prog table
  for prog in iptables ip6tables; do
    for table in filter nat mangle; do
      { "$prog" -t "$table" -S 2>/dev/null || true; } | awk -v t="$prog $table" \
        '/KUBE-|TC-EGRESS-/ {n++; if (n <= 3) print t ": " $0}'
    done
  done
  local d
  for d in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
    if [[ -d "$d" ]]; then echo "cgroup $d"; fi
  done
  if [[ -d "$NODE_DIR/cni-ipam" ]]; then echo "address allocations $NODE_DIR/cni-ipam"; fi
  { changed_sysctls || true; } | awk '{print "sysctl " $1 " was " $2 ", now " $3}'
  true
}

case "$cmd" in
  check)
    problem="$(node_problem)"
    [[ -z "$problem" ]] || { echo "$problem"; exit 3; } ;;
  up) node_up ;;
  down) node_down ;;
  leftovers) node_leftovers ;;
  forget-stale) forget_stale_images ;;
  *) die "usage: node.sh check|up|down|leftovers|forget-stale" ;;
esac
