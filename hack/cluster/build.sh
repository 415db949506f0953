#!/usr/bin/env bash
# Builds the test control plane's programs from the Go module proxy into a
# cache outside the repository, keyed by the Kubernetes version:
#
#   ${TRAINCTL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainctl}/k8s/<k8s-version>/bin/
#     kube-apiserver kube-controller-manager kube-scheduler kubectl  (k8s.io/kubernetes, wrapper module)
#     kubelet kube-proxy                                            (the same build; the real node)
#     etcd                                                          (go.etcd.io/etcd/server/v3, same module graph)
#     kwok                                                          (sigs.k8s.io/kwok/cmd/kwok, its own go.mod)
#     coredns                                                       (the real node's DNS, its own go.mod:
#                                                                    hack/cluster/coredns)
#
# Idempotent: when the binaries and their stamps are present it returns at once.
# Prints the bin directory on stdout (progress goes to stderr).
#   build.sh [GROUP...]  the groups to build, default both:
#     control-plane      Kubernetes, etcd and kwok (what `up.sh` needs)
#     coredns            CoreDNS (what the real node needs beside them: node.sh)
#                        Each group has its own lock, so a caller that needs only the control
#                        plane never waits for CoreDNS's build (hack/test.sh builds it later).
#   --force          rebuild even if the stamps match
#   --print-bin-dir  print the bin directory and exit (builds nothing)
# Cold (empty cache, 2 cores): ~9 min, 2 GB peak RSS, 1.3 GB cache; see
# docs/control-plane.md.
#
# Environment:
#   TRAINCTL_CACHE        cache root (default ~/.cache/trainctl)
#   TRAINCTL_GOMODCACHE, TRAINCTL_GOCACHE
#                         Go module / build cache (default <cache root>/go/{mod,build})
#   TRAINCTL_KEEP_GOCACHE 1 = keep the Go build cache after a successful build
#                         (default: removed, it is ~3.6 GB and only speeds up rebuilds)
#   TRAINCTL_KWOK_VERSION kwok release to build (default in lib.sh)
#   TRAINCTL_NICE         niceness of the Go builds (default 19)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

force=0
groups=()
for arg in "$@"; do
  case "$arg" in
    control-plane | coredns) groups+=("$arg") ;;
    --force) force=1 ;;
    --print-bin-dir) bin_dir="$(cluster_bin_dir)"; echo "$bin_dir"; exit 0 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) die "build.sh: unknown argument $arg" ;;
  esac
done

# Guard against empty versions first: with an empty version the cache path
# would collapse to .../k8s//bin and a stamp check could never match.
k8s_version="$(k8s_version)"
etcd_version="$(etcd_version)"
kwok_version="$KWOK_VERSION"
[[ -n "$k8s_version" ]] || die "cannot read the k8s.io/kubernetes version from $here/go.mod"
[[ -n "$etcd_version" ]] || die "cannot read the go.etcd.io/etcd/server/v3 version from $here/go.mod"
[[ "$kwok_version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || die "bad kwok version '$kwok_version' (TRAINCTL_KWOK_VERSION)"
bin_dir="$(cluster_bin_dir)"
version_dir="$(dirname "$bin_dir")"

# A stamp records what produced the binaries; a changed go.mod/go.sum or
# recipe triggers a rebuild of that group only.
recipe=4
k8s_stamp="recipe=$recipe k8s=$k8s_version etcd=$etcd_version gomod=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
kwok_stamp="recipe=$recipe kwok=$kwok_version"
coredns_stamp="recipe=$recipe gomod=$(cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" | sha256sum | cut -c1-16)"
k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd)

stamp_ok() { # file expected bins...
  local file="$1" want="$2"; shift 2
  [[ -f "$file" && "$(cat "$file")" == "$want" ]] || return 1
  local b; for b in "$@"; do [[ -x "$bin_dir/$b" ]] || return 1; done
}

(( ${#groups[@]} )) || groups=(control-plane coredns)
want_control_plane=0 want_coredns=0
for g in "${groups[@]}"; do
  case "$g" in control-plane) want_control_plane=1 ;; coredns) want_coredns=1 ;; esac
done
need_k8s=$want_control_plane need_kwok=$want_control_plane need_coredns=$want_coredns
if (( ! force )); then
  (( need_k8s )) && stamp_ok "$bin_dir/.stamp-k8s" "$k8s_stamp" "${k8s_bins[@]}" && need_k8s=0
  (( need_kwok )) && stamp_ok "$bin_dir/.stamp-kwok" "$kwok_stamp" kwok && need_kwok=0
  (( need_coredns )) && stamp_ok "$bin_dir/.stamp-coredns" "$coredns_stamp" coredns && need_coredns=0
fi
if (( ! need_k8s && ! need_kwok && ! need_coredns )); then
  echo "$bin_dir"
  exit 0
fi

command -v go >/dev/null || die "go not found in PATH (need Go >= $(awk '$1=="go"{print $2}' "$here/go.mod"))"
mkdir -p "$version_dir" "$bin_dir"
# One builder at a time per version and group (a second caller waits, then finds the stamps).
# Each group has its own lock and its own Go build cache, so the two can build side by side.
lock_name=.build.lock go_cache_name=build
if (( ! need_k8s && ! need_kwok )); then lock_name=.build-coredns.lock go_cache_name=build-coredns; fi
exec 9>"$version_dir/$lock_name"
if ! flock -n 9; then
  log "another build.sh is building into $bin_dir; waiting for it"
  flock 9
  exec "$0" "$@"
fi
if (( need_k8s || need_kwok )) && (( need_coredns )); then
  exec 8>"$version_dir/.build-coredns.lock"
  flock 8
fi

cache_root="$(cache_root)"
export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$cache_root/go/mod}"
export GOCACHE="${TRAINCTL_GOCACHE:-$cache_root/go/$go_cache_name}"
export CGO_ENABLED=0 GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false
# Less compile work for the same binaries: no DWARF made by the compiler (the linker's -w drops
# it anyway), and the compiler's garbage collector run less often (it has the memory: peak RSS
# 1.9 GiB at the default). Neither changes what the binaries do, so the recipe stays.
export GOGC="${GOGC:-400}"
gcflags="all=-dwarf=false"
export GOPATH="${GOPATH:-$cache_root/go/path}"
nice_cmd=(nice -n "${TRAINCTL_NICE:-19}")

work="$(mktemp -d "$version_dir/.build.XXXXXX")"
ticker_pid=""
cleanup() {
  [[ -n "$ticker_pid" ]] && kill "$ticker_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start_all=$SECONDS
# Prints one progress line every 30 s while a long go build runs: it counts the
# packages named so far in the `go build -v` log. Its stdout is stderr: this script's stdout
# is read by `$(build.sh)`, which would wait for a `sleep 30` left holding it after the kill.
start_ticker() { # label logfile
  local label="$1" logfile="$2" t0=$SECONDS
  (
    while sleep 30; do
      n="$(grep -vc '^go: ' "$logfile" 2>/dev/null || true)"
      log "  ... $label: $(( (SECONDS - t0) / 60 ))m$(( (SECONDS - t0) % 60 ))s, $n packages built"
    done
  ) >&2 &
  ticker_pid=$!
}
stop_ticker() { [[ -n "$ticker_pid" ]] && kill "$ticker_pid" 2>/dev/null; wait "$ticker_pid" 2>/dev/null || true; ticker_pid=""; }

if (( need_k8s )); then
  go_version="$(go env GOVERSION)"
  log "building Kubernetes $k8s_version (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, kube-proxy) and etcd $etcd_version with $go_version"
  log "  module cache: $GOMODCACHE, build cache: $GOCACHE"
  log "  this takes ~7-15 min on 2 cores when nothing is cached (niced; log: $version_dir/build-k8s.log)"
  # Version stamping, as upstream's hack/lib/version.sh does: without it the
  # binaries report v0.0.0-master+$Format:%H$.
  build_date="$(cd "$here" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes 2>/dev/null || true)"
  [[ -n "$build_date" ]] || build_date="1970-01-01T00:00:00Z"
  [[ "$k8s_version" =~ ^v([0-9]+)\.([0-9]+)\. ]] || die "cannot parse $k8s_version"
  major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date -X $pkg.gitCommit="
  done
  : >"$version_dir/build-k8s.log"
  start_ticker "k8s build" "$version_dir/build-k8s.log"
  t0=$SECONDS
  if ! (cd "$here" && "${nice_cmd[@]}" go build -mod=readonly -trimpath -v -gcflags "$gcflags" -ldflags "$ldflags" -o "$work/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler \
      k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kubelet \
      k8s.io/kubernetes/cmd/kube-proxy \
      go.etcd.io/etcd/server/v3) >>"$version_dir/build-k8s.log" 2>&1; then
    stop_ticker
    tail -n 30 "$version_dir/build-k8s.log" >&2
    die "Kubernetes build failed (full log: $version_dir/build-k8s.log)"
  fi
  stop_ticker
  mv "$work/server" "$work/etcd" # the etcd main package is go.etcd.io/etcd/server/v3
  for b in "${k8s_bins[@]}"; do
    [[ -x "$work/$b" ]] || die "build produced no $b"
    mv -f "$work/$b" "$bin_dir/$b"
  done
  echo "$k8s_stamp" >"$bin_dir/.stamp-k8s"
  log "built Kubernetes $k8s_version + etcd $etcd_version in $(( SECONDS - t0 ))s"
fi

if (( need_kwok )); then
  log "building kwok $kwok_version (go install sigs.k8s.io/kwok/cmd/kwok@$kwok_version; log: $version_dir/build-kwok.log)"
  : >"$version_dir/build-kwok.log"
  start_ticker "kwok build" "$version_dir/build-kwok.log"
  t0=$SECONDS
  if ! (cd "$work" && GOBIN="$work/gobin" "${nice_cmd[@]}" go install -trimpath -v -gcflags "$gcflags" -ldflags "-s -w" \
      "sigs.k8s.io/kwok/cmd/kwok@$kwok_version") >>"$version_dir/build-kwok.log" 2>&1; then
    stop_ticker
    tail -n 30 "$version_dir/build-kwok.log" >&2
    die "kwok build failed (full log: $version_dir/build-kwok.log)"
  fi
  stop_ticker
  mv -f "$work/gobin/kwok" "$bin_dir/kwok"
  echo "$kwok_stamp" >"$bin_dir/.stamp-kwok"
  log "built kwok $kwok_version in $(( SECONDS - t0 ))s"
fi

if (( need_coredns )); then
  log "building CoreDNS ($(awk '$1=="require" && $2=="github.com/coredns/coredns" {print $3}' "$here/coredns/go.mod"); log: $version_dir/build-coredns.log)"
  : >"$version_dir/build-coredns.log"
  start_ticker "coredns build" "$version_dir/build-coredns.log"
  t0=$SECONDS
  if ! (cd "$here/coredns" && "${nice_cmd[@]}" go build -mod=readonly -trimpath -v -gcflags "$gcflags" -ldflags "-s -w" \
      -o "$work/coredns" .) >>"$version_dir/build-coredns.log" 2>&1; then
    stop_ticker
    tail -n 30 "$version_dir/build-coredns.log" >&2
    die "CoreDNS build failed (full log: $version_dir/build-coredns.log)"
  fi
  stop_ticker
  mv -f "$work/coredns" "$bin_dir/coredns"
  echo "$coredns_stamp" >"$bin_dir/.stamp-coredns"
  log "built CoreDNS in $(( SECONDS - t0 ))s"
fi

if [[ "${TRAINCTL_KEEP_GOCACHE:-0}" != 1 && -z "${TRAINCTL_GOCACHE:-}" ]]; then
  log "removing the Go build cache $GOCACHE ($(du -sh "$GOCACHE" 2>/dev/null | cut -f1); set TRAINCTL_KEEP_GOCACHE=1 to keep it)"
  rm -rf "$GOCACHE"
fi
log "all binaries in $bin_dir ($(( SECONDS - start_all ))s)"
if [[ -x "$bin_dir/kube-apiserver" ]]; then "$bin_dir/kube-apiserver" --version >&2; fi
echo "$bin_dir"
