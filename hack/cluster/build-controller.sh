#!/usr/bin/env bash
# Builds a controller that upstream publishes as a Go module (unmodified, from the Go module
# proxy) and renders its install manifests from the same module, into the cache outside the
# repository (never committed).  Called by the per-controller wrappers (hack/jobset/build.sh,
# hack/kueue/build.sh), which name the module and its layout:
#
#   build-controller.sh NAME MODULE VERSION MAIN_PACKAGE KUSTOMIZE_DIR CRD [--force|--print-dir]
#
#   ${TRAINCTL_CACHE:-~/.cache/trainctl}/NAME/VERSION/
#     bin/NAME-controller   MAIN_PACKAGE of the module (upstream's image runs the same program)
#     install.yaml          KUSTOMIZE_DIR rendered by the cluster's kubectl kustomize: upstream's
#                           install, which must define the CustomResourceDefinition CRD
#     .stamp                what produced them; a changed version or recipe rebuilds
#
# The module is built inside a copy of itself with its own go.mod and go.sum (verified against
# the checksum database), as hack/upstream/build.sh does: `go install module@version` asks the
# proxy for the version list, which some proxies refuse.  Version stamping as upstream's
# Makefile (MODULE/pkg/version.GitVersion and .GitCommit).
#
# Idempotent: returns at once when the stamp matches; a lock makes a second caller wait for the
# first.  Prints the version folder on stdout.
# Environment: TRAINCTL_CACHE, TRAINCTL_GOMODCACHE, TRAINCTL_GOCACHE (kept when set; otherwise
# a private build cache, removed afterwards), TRAINCTL_NICE (default 19).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

(( $# >= 6 )) || die "usage: build-controller.sh NAME MODULE VERSION MAIN_PACKAGE KUSTOMIZE_DIR CRD [--force|--print-dir]"
name="$1" module="$2" version="$3" main_pkg="$4" kustomize_dir="$5" crd="$6"
shift 6
[[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
  die "bad $name version '$version': expected vMAJOR.MINOR.PATCH"
dir="$(cache_root)/$name/$version"
binary="$name-controller"

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --print-dir) echo "$dir"; exit 0 ;;
    *) die "build-controller.sh ($name): unknown argument $arg" ;;
  esac
done

# The cluster's kubectl renders the manifests (its kustomize is part of the stamp).
bin_dir="$("$here/build.sh" control-plane)"
recipe=1
stamp="recipe=$recipe module=$module@$version go=$(go env GOVERSION 2>/dev/null || echo none) kubectl=$(k8s_version)"
if (( ! force )) && [[ -x "$dir/bin/$binary" && -s "$dir/install.yaml" && -f "$dir/.stamp" &&
      "$(cat "$dir/.stamp")" == "$stamp" ]]; then
  echo "$dir"
  exit 0
fi
command -v go >/dev/null || die "go not found in PATH (installed by hack/install-deps.sh)"

mkdir -p "$dir"
exec 9>"$dir/.build.lock"
if ! flock -n 9; then
  log "another build of $name $version is running; waiting for it"
  flock 9
  exec "$0" "$name" "$module" "$version" "$main_pkg" "$kustomize_dir" "$crd" "$@"
fi

export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"
export GOCACHE="${TRAINCTL_GOCACHE:-$(cache_root)/go/build-$name}"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
export GOPATH="${GOPATH:-$(cache_root)/go/path}"
# As hack/cluster/build.sh: no DWARF, the compiler's collector run less often; same program.
export GOGC="${GOGC:-400}"

work="$(mktemp -d "$dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log "building $module@$version (unmodified, its own go.mod; niced; log: $dir/build.log)"
t0=$SECONDS
info="$(go mod download -json "$module@$version")" || die "cannot download $module@$version from the module proxy"
src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
commit="$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]*\)",\{0,1\}$/\1/p' <<<"$info")"
[[ -f "$src/go.mod" && -d "$src/$main_pkg" ]] || die "$module@$version has no package ./$main_pkg"
cp -r "$src/." "$work/module" && chmod -R u+w "$work/module"
ldflags="-s -w -X $module/pkg/version.GitVersion=$version -X $module/pkg/version.GitCommit=$commit"
if ! (cd "$work/module" && nice -n "${TRAINCTL_NICE:-19}" \
    go build -mod=readonly -trimpath -gcflags "all=-dwarf=false" -ldflags "$ldflags" \
      -o "$work/bin/$binary" "./$main_pkg") >"$dir/build.log" 2>&1; then
  tail -n 30 "$dir/build.log" >&2
  die "$name build failed (full log: $dir/build.log)"
fi
# Upstream's own install, rendered the way its release does (kustomize).
"$bin_dir/kubectl" kustomize "$work/module/$kustomize_dir" >"$work/install.yaml" 2>>"$dir/build.log" ||
  die "kubectl kustomize $module@$version/$kustomize_dir failed (log: $dir/build.log)"
grep -q "^  name: $crd\$" "$work/install.yaml" ||
  die "the rendered install of $module@$version has no $crd CRD"
mkdir -p "$dir/bin"
mv -f "$work/bin/$binary" "$dir/bin/$binary"
mv -f "$work/install.yaml" "$dir/install.yaml"
echo "$stamp" >"$dir/.stamp"
if [[ -z "${TRAINCTL_GOCACHE:-}" ]]; then rm -rf "$GOCACHE"; fi
log "built $module@$version in $(( SECONDS - t0 ))s: $dir"
echo "$dir"
