#!/usr/bin/env bash
# Builds the JobSet controller (sigs.k8s.io/jobset, unmodified, the version Kubeflow Trainer
# v2.3.0 pins) from the Go module proxy, and renders its install manifests from the same module,
# into the cache outside the repository (never committed):
#
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/jobset/<version>/
#     bin/jobset-controller   the module's main package (upstream's image runs the same program)
#     install.yaml            the module's config/default rendered by the cluster's kubectl
#                             kustomize: upstream's install (CRD, RBAC, webhook configurations,
#                             Deployment, Services); hack/jobset/manifests.py turns it into the
#                             test cluster's (hack/cluster/jobset.sh)
#     .stamp                  what produced them; a changed version or recipe rebuilds
#
# The module is built inside a copy of itself with its own go.mod and go.sum (verified against
# the checksum database), as hack/upstream/build.sh does: `go install module@version` asks the
# proxy for the version list, which some proxies refuse.
#
# Idempotent: returns at once when the stamp matches. Prints the version folder on stdout.
#   --force        rebuild
#   --print-dir    print the version folder and exit (builds nothing)
# Environment: TRAINCTL_JOBSET_VERSION (default v0.12.0), TRAINCTL_CACHE, TRAINCTL_GOMODCACHE,
# TRAINCTL_GOCACHE (kept when set; otherwise a private build cache, removed afterwards),
# TRAINCTL_NICE (default 19). Cold, 2 cores: see docs/testing.md ("Build time").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"

version="${TRAINCTL_JOBSET_VERSION:-v0.12.0}"
module=sigs.k8s.io/jobset
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "bad JobSet version '$version' (TRAINCTL_JOBSET_VERSION): expected vMAJOR.MINOR.PATCH"
dir="$(cache_root)/jobset/$version"

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --print-dir) echo "$dir"; exit 0 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) die "hack/jobset/build.sh: unknown argument $arg" ;;
  esac
done

# The cluster's kubectl renders the manifests (its kustomize is part of the stamp).
bin_dir="$("$here/../cluster/build.sh" control-plane)"
recipe=1
stamp="recipe=$recipe module=$module@$version go=$(go env GOVERSION 2>/dev/null || echo none) kubectl=$(k8s_version)"
if (( ! force )) && [[ -x "$dir/bin/jobset-controller" && -s "$dir/install.yaml" && -f "$dir/.stamp" &&
      "$(cat "$dir/.stamp")" == "$stamp" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || die "go not found in PATH (installed by hack/install-deps.sh)"

mkdir -p "$dir"
exec 9>"$dir/.build.lock"
if ! flock -n 9; then
  log "another hack/jobset/build.sh is building $version; waiting for it"
  flock 9
  exec "$0" "$@"
fi

export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"
export GOCACHE="${TRAINCTL_GOCACHE:-$(cache_root)/go/build-jobset}"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
export GOPATH="${GOPATH:-$(cache_root)/go/path}"
# As hack/cluster/build.sh: no DWARF, the compiler's collector run less often; same program.
export GOGC="${GOGC:-400}"

work="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "building $module@$version (unmodified, its own go.mod; niced; about 2.5 min on 2 cores; log: $dir/build.log)"
t0=$SECONDS
info="$(go mod download -json "$module@$version")" || die "cannot download $module@$version from the module proxy"
src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
commit="$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p' <<<"$info")"
[[ -f "$src/go.mod" && -f "$src/main.go" ]] || die "$module@$version has no main.go at its root"
cp -r "$src/." "$work/module" && chmod -R u+w "$work/module"
# The version stamping of upstream's Makefile (the controller logs it at start).
ldflags="-s -w -X $module/pkg/version.GitVersion=$version -X $module/pkg/version.GitCommit=$commit"
if ! (cd "$work/module" && nice -n "${TRAINCTL_NICE:-19}" \
    go build -mod=readonly -trimpath -gcflags "all=-dwarf=false" -ldflags "$ldflags" \
      -o "$work/bin/jobset-controller" .) >"$dir/build.log" 2>&1; then
  tail -n 30 "$dir/build.log" >&2
  die "JobSet build failed (full log: $dir/build.log)"
fi
# Upstream's own install, rendered the way its release does (kustomize of config/default).
"$bin_dir/kubectl" kustomize "$work/module/config/default" >"$work/install.yaml" 2>>"$dir/build.log" ||
  die "kubectl kustomize $module@$version/config/default failed (log: $dir/build.log)"
grep -q '^  name: jobsets.jobset.x-k8s.io$' "$work/install.yaml" ||
  die "the rendered install of $module@$version has no jobsets.jobset.x-k8s.io CRD"
mkdir -p "$dir/bin"
mv -f "$work/bin/jobset-controller" "$dir/bin/jobset-controller"
mv -f "$work/install.yaml" "$dir/install.yaml"
echo "$stamp" >"$dir/.stamp"
if [[ -z "${TRAINCTL_GOCACHE:-}" ]]; then rm -rf "$GOCACHE"; fi
log "built $module@$version in $(( SECONDS - t0 ))s: $dir"
echo "$dir"
