#!/usr/bin/env bash
# Builds the upstream Kubeflow training operator, unmodified, from the Go module proxy, for the
# side-by-side benchmarks (bench/operator_scale.sh --impl upstream); with --mpi-operator,
# mpi-operator instead (--impl mpi-operator); with --trainer, Kubeflow Trainer v2's controller
# manager (run by hack/upstream/trainer.sh). Never used by the product and never committed:
# the binary lands in the same cache outside the repository as the test control plane:
#
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/upstream/<version>/
#     bin/training-operator.v1   github.com/kubeflow/training-operator/cmd/training-operator.v1
#     crds/                      the module's own manifests/base/crds (for reference; the
#                                benchmark installs manifests/crds for both operators)
#     .stamp                     what produced it
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/upstream/mpi-operator-<version>/   (--mpi-operator)
#     bin/mpi-operator           github.com/kubeflow/mpi-operator/cmd/mpi-operator
#     crds/kubeflow.org_mpijobs.yaml   its own CRD (v2beta1 only), which the benchmark installs
#                                for mpi-operator's runs
#     .stamp                     what produced it (the folder also holds the e2e suite that
#                                hack/upstream/mpi-operator-e2e.sh builds; left alone here)
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/upstream/trainer-<version>/   (--trainer)
#     bin/trainer-controller-manager   github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
#     crds/                      its manifests/base/crds (TrainJob, TrainingRuntime,
#                                ClusterTrainingRuntime)
#     manifests/{rbac,webhook,manager}   its manifests/base/rbac, webhook and manager, which
#                                hack/upstream/trainer.sh makes the test cluster's
#     .stamp                     what produced it
#
# The module is built with its own go.mod and go.sum (verified against the checksum database),
# so the dependency graph is exactly upstream's. The training operator has
# no version flag; the cache path and the stamp file say which version it is.
#
# Idempotent: returns at once when the stamp matches. Prints the binary's path on stdout.
#   --mpi-operator   build mpi-operator (TRAINCTL_MPI_OPERATOR_VERSION, default v0.8.0)
#   --trainer        build Trainer v2's controller manager (TRAINCTL_TRAINER_VERSION, default
#                    v2.3.0; the version trainctl's TrainJob API follows)
#   --force          rebuild
#   --print-path     print the binary's path and exit (builds nothing)
# Environment: TRAINCTL_UPSTREAM_VERSION (default v1.9.4), TRAINCTL_CACHE, TRAINCTL_GOMODCACHE,
# TRAINCTL_GOCACHE, TRAINCTL_NICE (default 19). Cold, 2 cores: see docs/benchmarks.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/lib.sh
source "$here/../cluster/lib.sh"

version="${TRAINCTL_UPSTREAM_VERSION:-v1.9.4}" version_var=TRAINCTL_UPSTREAM_VERSION
module=github.com/kubeflow/training-operator command=training-operator.v1 crds=manifests/base/crds
subdir="" manifests=()
if [[ " $* " == *" --trainer "* ]]; then
  version="${TRAINCTL_TRAINER_VERSION:-v2.3.0}" version_var=TRAINCTL_TRAINER_VERSION
  module=github.com/kubeflow/trainer/v2 command=trainer-controller-manager subdir=trainer-
  crds=manifests/base/crds manifests=(manifests/base/rbac manifests/base/webhook manifests/base/manager)
elif [[ " $* " == *" --mpi-operator "* ]]; then
  version="${TRAINCTL_MPI_OPERATOR_VERSION:-v0.8.0}" version_var=TRAINCTL_MPI_OPERATOR_VERSION
  module=github.com/kubeflow/mpi-operator command=mpi-operator subdir=mpi-operator-
  crds=manifests/base/kubeflow.org_mpijobs.yaml
fi
package="$module/cmd/$command"
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "bad upstream version '$version' ($version_var): expected vMAJOR.MINOR.PATCH"
dir="$(cache_root)/upstream/$subdir$version"
binary="$dir/bin/$command"

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --mpi-operator|--trainer) ;;
    --print-path) echo "$binary"; exit 0 ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) die "hack/upstream/build.sh: unknown argument $arg" ;;
  esac
done

recipe=2
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
# Built inside a copy of the module (read-only in the module cache) with its own go.mod and
# go.sum: the graph `go install $package@$version` uses, without the proxy's version list,
# which `go install` asks for its deprecation check and some proxies refuse.
src="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$src/go.mod" ]] || die "cannot download $module@$version from the module proxy"
cp -r "$src/." "$work/module" && chmod -R u+w "$work/module"
if ! (cd "$work/module" && nice -n "${TRAINCTL_NICE:-19}" \
    go build -mod=readonly -trimpath -ldflags "-s -w" -o "$work/bin/$command" "./cmd/$command") \
    >"$dir/build.log" 2>&1; then
  tail -n 30 "$dir/build.log" >&2
  die "upstream operator build failed (full log: $dir/build.log)"
fi
[[ -e "$src/$crds" ]] || die "$module@$version has no $crds"
mkdir -p "$dir/bin" "$dir/crds"
rm -rf "${dir:?}/crds/"*
if [[ -d "$src/$crds" ]]; then cp -r "$src/$crds/." "$dir/crds/"; else cp "$src/$crds" "$dir/crds/"; fi
chmod -R u+w "$dir/crds"
rm -rf "$dir/manifests"
for m in "${manifests[@]}"; do
  [[ -d "$src/$m" ]] || die "$module@$version has no $m"
  mkdir -p "$dir/manifests" && cp -r "$src/$m" "$dir/manifests/"
done
[[ ! -d "$dir/manifests" ]] || chmod -R u+w "$dir/manifests"
mv -f "$work/bin/$command" "$binary"
echo "$stamp" >"$dir/.stamp"
if [[ -z "${TRAINCTL_GOCACHE:-}" ]]; then rm -rf "$GOCACHE"; fi
log "built $package@$version in $(( SECONDS - t0 ))s: $binary"
echo "$binary"
