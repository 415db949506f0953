# Sourced by the scripts that run an upstream project's own Go e2e suite against the operator
# (trainer-e2e.sh, kueue-e2e.sh, mpi-operator-e2e.sh), after hack/cluster/lib.sh.
#
#   module_dir MODULE VERSION   downloads MODULE@VERSION from the Go module proxy (checked
#                               against the checksum database) and prints its folder
#   build_suite SRC PACKAGE OUT builds the test binary of PACKAGE (./test/e2e...) of the module
#                               at SRC into OUT with `go test -c`, in a copy of the module (its
#                               own go.mod and go.sum), niced, once: nothing is done when OUT
#                               exists, and a second caller waits for the first (a lock beside
#                               OUT). GOCACHE: TRAINCTL_GOCACHE, else a private one, removed.

export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"

module_dir() {
  GOFLAGS=-mod=mod go mod download -json "$1@$2" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])' ||
    die "cannot download $1@$2 from the module proxy"
}

build_suite() {
  local src="$1" package="$2" out="$3" work t0=$SECONDS
  mkdir -p "$(dirname "$out")"
  (
    exec 9>"$out.lock"
    flock 9
    [[ -x "$out" ]] && exit 0
    log "building ${src##*/} $package (go test -c; niced)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    cp -r "$src/." "$work/" && chmod -R u+w "$work"
    (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false GOGC=400 \
      GOCACHE="${TRAINCTL_GOCACHE:-$work/.gocache}" nice -n 19 \
      go test -c -mod=readonly -trimpath -gcflags "all=-dwarf=false" -ldflags "-s -w" \
        -o "$out.tmp" "$package") || die "building the suite failed"
    mv "$out.tmp" "$out"
    log "built the suite in $((SECONDS - t0))s: $out"
  )
}

# node_suite_mode SCRIPT MODE: checks MODE (build, run or all). all: the node suites' cluster
# (their state folder and ports, the real node, no kwok nodes; not while they run). run and
# all: the trainctl binary (TRAINCTL_BIN, default build/release/trainctl) and a machine the
# real node can start on.
node_suite_mode() {
  local root
  root="$(repo_root)"
  case "$2" in build | run | all) ;; *) die "usage: $1 [build|run|all]" ;; esac
  if [[ "$2" == all ]]; then
    export TRAINCTL_CLUSTER_DIR="$root/build/release/node-cluster" TRAINCTL_PORT_BASE=29600 \
      TRAINCTL_REAL_NODE=1 TRAINCTL_KWOK_NODES=0
  fi
  if [[ "$2" != build ]]; then
    export TRAINCTL_BIN="${TRAINCTL_BIN:-$root/build/release/trainctl}" TRAINCTL_REPO="$root"
    [[ -x "$TRAINCTL_BIN" ]] || die "no $TRAINCTL_BIN: build first (make build)"
    local why
    why="$("$root/hack/cluster/node.sh" check)" || die "the real node cannot start here: $why"
  fi
}
