#!/usr/bin/env bash
# Builds agnhost, the program Kubernetes' own e2e images run (k8s.io/kubernetes/test/images/
# agnhost, unmodified, of the control plane's Kubernetes version), and prints its path:
# ${TRAINCTL_CACHE:-~/.cache/trainctl}/k8s/<version>/bin/agnhost. Kueue's e2e suite runs it in
# its pods (images.sh kueue-e2e puts it in an image). Built in a copy of the control plane's
# wrapper module (hack/cluster/go.mod), with -mod=mod: agnhost needs modules the control plane
# does not (github.com/ishidawataru/sctp), which the copy's go.sum gets from the checksum
# database. Once per version; a second caller waits for the first (a lock). Niced.
# Environment: TRAINCTL_CACHE, TRAINCTL_GOMODCACHE, TRAINCTL_GOCACHE (else a private one,
# removed), TRAINCTL_NICE (default 19).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/lib.sh"

out="$(cluster_bin_dir)/agnhost"
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [[ ! -x "$out" ]]; then
  log "building agnhost (k8s.io/kubernetes $(k8s_version) test/images/agnhost; niced)"
  t0=$SECONDS
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp "$here/go.mod" "$here/go.sum" "$work/"
  export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}" GOCACHE="${TRAINCTL_GOCACHE:-$work/gocache}" \
    CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false GOGC=400
  # Its version as upstream's image build stamps it (the package's VERSION file).
  src="$(cd "$work" && go list -e -mod=mod -f '{{.Dir}}' k8s.io/kubernetes/test/images/agnhost)"
  [[ -f "$src/VERSION" ]] || die "no VERSION beside k8s.io/kubernetes/test/images/agnhost ($src)"
  if ! (cd "$work" && nice -n "${TRAINCTL_NICE:-19}" \
      go build -mod=mod -trimpath -gcflags "all=-dwarf=false" \
        -ldflags "-s -w -X main.Version=$(cat "$src/VERSION")" -o "$work/agnhost" \
        k8s.io/kubernetes/test/images/agnhost) >"$work/build.log" 2>&1; then
    tail -20 "$work/build.log" >&2
    die "building agnhost failed"
  fi
  mv "$work/agnhost" "$out"
  log "built agnhost in $((SECONDS - t0))s: $out"
fi
echo "$out"
