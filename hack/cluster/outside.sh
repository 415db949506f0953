#!/usr/bin/env bash
# "The world" for the real node's egress test: a network namespace that stands for an outside
# network, so that the test addresses only this machine.  Its interface holds $OUTSIDE_IP (a
# TEST-NET-2 address, in none of the cluster's ranges); this machine routes the prefix to it
# through a veth pair, as it would route a network beyond one of its links; a listener in it
# answers TCP on $OUTSIDE_PORT with "outside" and logs every connection it accepts.
#
#   outside.sh up           removes a stale one, makes the namespace, veth, route and listener;
#                           prints "ADDRESS PORT HOST_ADDRESS" (HOST_ADDRESS: this machine's end)
#   outside.sh connections  the peer address of every connection the listener accepted, one a line
#   outside.sh down         kills what runs in the namespace and removes it with its veth and
#                           route (nothing to do when there is none)
#   outside.sh leftovers    lists what an outside namespace left on this machine (node.sh
#                           leftovers prints it too)
#
# Names follow the port base, like the node's: namespace tc-outside-<base>, link tco<base>.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

OUTSIDE_NS="tc-outside-$(port_base)"
OUTSIDE_LINK="tco$(port_base)"
OUTSIDE_PREFIX="198.51.100.0/24"
OUTSIDE_HOST_IP="198.51.100.1"
OUTSIDE_IP="198.51.100.7"
OUTSIDE_PORT=443
OUTSIDE_DIR="$(state_dir)/node/outside"

ns_exists() { ip netns list | awk -v n="$OUTSIDE_NS" '$1 == n {found = 1} END {exit !found}'; }

outside_down() {
  if ns_exists; then
    local pid i
    for pid in $(ip netns pids "$OUTSIDE_NS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    # The veth goes with the namespace once nothing holds the namespace any more.
    for (( i = 0; i < 50; i++ )); do [[ -z "$(ip netns pids "$OUTSIDE_NS" 2>/dev/null)" ]] && break; sleep 0.1; done
    ip netns delete "$OUTSIDE_NS"
  fi
  # The kernel removes the namespace's veth pair on its own, a moment after the delete: a link
  # that vanishes between the look and the delete is gone, not an error.
  if ip link show "$OUTSIDE_LINK" >/dev/null 2>&1; then
    ip link delete "$OUTSIDE_LINK" 2>/dev/null || ! ip link show "$OUTSIDE_LINK" >/dev/null 2>&1
  fi
  rm -rf "$OUTSIDE_DIR"
}

outside_up() {
  outside_down
  # The prefix must be nobody else's on this machine: a route of its own, or an address in it.
  local taken
  taken="$(ip -4 route show "$OUTSIDE_PREFIX" 2>/dev/null; ip -4 -o addr show to "$OUTSIDE_PREFIX" 2>/dev/null)"
  [[ -z "$taken" ]] || die "$OUTSIDE_PREFIX is already in use on this machine: $taken"
  mkdir -p "$OUTSIDE_DIR"
  ip netns add "$OUTSIDE_NS"
  ip link add "$OUTSIDE_LINK" type veth peer name eth0 netns "$OUTSIDE_NS"
  ip addr add "$OUTSIDE_HOST_IP/${OUTSIDE_PREFIX#*/}" dev "$OUTSIDE_LINK"
  ip link set "$OUTSIDE_LINK" up
  ip -n "$OUTSIDE_NS" link set lo up
  ip -n "$OUTSIDE_NS" addr add "$OUTSIDE_IP/${OUTSIDE_PREFIX#*/}" dev eth0
  ip -n "$OUTSIDE_NS" link set eth0 up
  # Answers go back through this machine, whoever asked (a pod's address too, were it let out).
  ip -n "$OUTSIDE_NS" route add default via "$OUTSIDE_HOST_IP"
  # -lf names the node's folder on the listener's command line: node.sh leftovers lists it.
  ip netns exec "$OUTSIDE_NS" setsid socat -d -d -lf "$OUTSIDE_DIR/listener.log" \
    "TCP-LISTEN:$OUTSIDE_PORT,bind=$OUTSIDE_IP,reuseaddr,fork" SYSTEM:'echo outside' \
    </dev/null >/dev/null 2>&1 &
  local i
  for (( i = 0; i < 50; i++ )); do
    grep -q "listening on" "$OUTSIDE_DIR/listener.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "listening on" "$OUTSIDE_DIR/listener.log" 2>/dev/null ||
    die "the listener in $OUTSIDE_NS did not start: $(cat "$OUTSIDE_DIR/listener.log" 2>/dev/null)"
  log "outside: namespace $OUTSIDE_NS ($OUTSIDE_IP:$OUTSIDE_PORT) behind $OUTSIDE_LINK ($OUTSIDE_HOST_IP)"
  echo "$OUTSIDE_IP $OUTSIDE_PORT $OUTSIDE_HOST_IP"
}

# socat -d -d logs "accepting connection from AF=2 ADDRESS:PORT on AF=2 ..." for each one.
outside_connections() {
  [[ -f "$OUTSIDE_DIR/listener.log" ]] || return 0
  awk '/accepting connection from/ {
    for (i = 1; i < NF; i++) if ($i == "from") { split($(i + 2), a, ":"); print a[1] } }' \
    "$OUTSIDE_DIR/listener.log"
}

outside_leftovers() {
  if ns_exists; then echo "network namespace $OUTSIDE_NS (hack/cluster/outside.sh down removes it)"; fi
  if ip link show "$OUTSIDE_LINK" >/dev/null 2>&1; then echo "link $OUTSIDE_LINK"; fi
  true
}

case "${1:-}" in
  up) outside_up ;;
  connections) outside_connections ;;
  down) outside_down ;;
  leftovers) outside_leftovers ;;
  *) die "usage: outside.sh up|connections|down|leftovers" ;;
esac
