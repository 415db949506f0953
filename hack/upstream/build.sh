#!/usr/bin/env bash
# Builds the upstream Kubeflow training operator, unmodified, from the Go module proxy, for the
# side-by-side benchmarks (bench/operator_scale.sh --impl upstream). Never used by the product
# and never committed: the binary lands in the same cache outside the repository as the test
# control plane:
#
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/upstream/<version>/
#     bin/training-operator.v1   github.com/kubeflow/training-operator/cmd/training-operator.v1
#     crds/                      the module's own manifests/base/crds (for reference; the
#                                benchmark installs manifests/crds for both operators)
#     .stamp                     what produced it
#
# `go install module/cmd@version` builds with the module's own go.mod and go.sum (verified
# against the checksum database), so the dependency graph is exactly upstream's. The binary has
# no version flag; the cache path and the stamp file say which version it is.
#
# Idempotent: returns at once when the stamp matches. Prints the binary's path on stdout.
#   --force          rebuild
#   --print-path     print the binary's path and exit (builds nothing)
# Environment: TRAINCTL_UPSTREAM_VERSION (default v1.9.4), TRAINCTL_CACHE, TRAINCTL_GOMODCACHE,
# TRAINCTL_GOCACHE, TRAINCTL_NICE (default 19). Cold, 2 cores: see docs/benchmarks.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"

version="${TRAINCTL_UPSTREAM_VERSION:-v1.9.4}"
module=github.com/kubeflow/training-operator
package="$module/cmd/training-operator.v1"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "bad upstream version '$version' (TRAINCTL_UPSTREAM_VERSION): expected vMAJOR.MINOR.PATCH"
dir="$(cache_root)/upstream/$version"
binary="$dir/bin/training-operator.v1"

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --print-path) echo "$binary"; exit 0 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) die "hack/upstream/build.sh: unknown argument $arg" ;;
  esac
done

recipe=1
stamp="recipe=$recipe package=$package@$version go=$(go env GOVERSION 2>/dev/null || echo none)"
if (( ! force )) && [[ -x "$binary" && -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$stamp" ]]; then
  echo "$binary"
  exit 0
fi
command -v go >/dev/null || die "go not found in PATH (installed by hack/install-deps.sh)"

mkdir -p "$dir"
exec 9>"$dir/.build.lock"
if ! flock -n 9; then
  log "another hack/upstream/build.sh is building $version; waiting for it"
  flock 9
  exec "$0" "$@"
fi

export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"
export GOCACHE="${TRAINCTL_GOCACHE:-$(cache_root)/go/build-upstream}"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
export GOPATH="${GOPATH:-$(cache_root)/go/path}"

work="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "building $package@$version (unmodified, its own go.mod; niced; log: $dir/build.log)"
t0=$SECONDS
if ! (cd "$work" && GOBIN="$work/bin" nice -n "${TRAINCTL_NICE:-19}" \
    go install -trimpath -ldflags "-s -w" "$package@$version") >"$dir/build.log" 2>&1; then
  tail -n 30 "$dir/build.log" >&2
  die "upstream operator build failed (full log: $dir/build.log)"
fi
src="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -d "$src/manifests/base/crds" ]] || die "$module@$version has no manifests/base/crds"
mkdir -p "$dir/bin"
rm -rf "$dir/crds" && cp -r "$src/manifests/base/crds" "$dir/crds" && chmod -R u+w "$dir/crds"
mv -f "$work/bin/training-operator.v1" "$binary"
echo "$stamp" >"$dir/.stamp"
if [[ -z "${TRAINCTL_GOCACHE:-}" ]]; then rm -rf "$GOCACHE"; fi
log "built $package@$version in $(( SECONDS - t0 ))s: $binary"
echo "$binary"
