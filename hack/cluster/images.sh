#!/usr/bin/env bash
# Builds the real node's images on this machine, from Debian packages only (no base image is
# downloaded), and pushes them into the loopback registry that node.sh runs.  The registry's
# storage is in the cache (REGISTRY_DIR), so an image is built once and kept; one that is
# there already is left alone (--force rebuilds).  See docs/control-plane.md ("Images").
#
#   images.sh pause      registry.k8s.io/pause:<PAUSE_TAG>: catatonit in pause mode
#   images.sh busybox    docker.io/library/busybox:<BUSYBOX_TAG>: Debian's busybox-static (a
#                        shell, nslookup, nc, wget) for the node's own tests
#   images.sh alpine     docker.io/library/alpine:3.10, the operator's default image for the
#                        PyTorch init container (it needs sh, seq, sleep and an nslookup that
#                        exits 0 once a name resolves through the search list): Debian 12
#                        minbase with bind9-dnsutils under that name, not Alpine (busybox
#                        1.35's nslookup exits 1 when any search domain fails)
#   images.sh examples   the images examples/ name (pytorch, xgboost, mpi): one base made by
#                        mmdebstrap from Debian 12 with Python and the frameworks the examples
#                        use, and one layer per example with its folder in /workspace
#   images.sh kubectl-delivery  ghcr.io/kubeflow/training-v1/kubectl-delivery:latest, the MPI
#                        launcher's init container: busybox, kubectl and
#                        images/kubectl-delivery.sh
#   images.sh operator   docker.io/library/trainctl:latest, the image manifests/ deploys: the
#                        repository's Dockerfile (target prebuilt) built by buildah on a
#                        debian:bookworm-slim made here by mmdebstrap, with the trainctl binary
#                        TRAINCTL_BIN (default build/release/trainctl)
#   images.sh trainer-runtimes  the images Kubeflow Trainer v2.3.0's own runtimes and e2e suite
#                        name, for the upstream checks of Trainer v2 (stand-ins on the examples'
#                        base): docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime (torchrun
#                        of Debian's PyTorch, with PET_REDIRECTS/PET_TEE set as its Python needs),
#                        nvcr.io/nvidia/jax:25.10-py3 and ghcr.io/kubeflow/trainer/xgboost-runtime
#                        (:latest, :v2.3.0; their default command exits 0, as the suite's specs
#                        without a command need), ghcr.io/kubeflow/trainer/deepspeed-runtime and
#                        mlx-runtime (:latest, :v2.3.0: mpiuser, sshd and ssh on port 2222,
#                        Open MPI and mpi4py), docker.io/library/busybox:latest and
#                        registry.k8s.io/pause:3.9 (second names of busybox and pause)
#   images.sh kueue-e2e  registry.k8s.io/kueue/kueue:<version>, registry.k8s.io/jobset/jobset:
#                        <version> and agnhost, for Kueue's e2e suite (images/kueue-e2e.sh)
#   images.sh trainer    docker.io/trainctl/trainer:dev and
#   images.sh initializer  docker.io/trainctl/initializer:dev: images/trainer/Dockerfile and
#                        images/storage-initializer/Dockerfile (TrainingClient.train()'s
#                        images) built by buildah
#
#   --own-registry       serve the registry's storage for this run only, on a free loopback
#                        port, instead of using node.sh's registry: images built before the
#                        node starts (hack/test.sh builds them beside the other tests)
#
# Each image is named as the manifests that use it name it; containerd maps every registry
# name to the loopback registry (node.sh), so one name space serves them all. One images.sh
# builds at a time per cache (a second waits, then finds what the first built).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

force=0
own_registry=0
images=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --own-registry) own_registry=1 ;;
    pause | busybox | alpine | examples | kubectl-delivery | operator | trainer | initializer | mpi-pi | trainer-runtimes | kueue-e2e) images+=("$arg") ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) die "images.sh: unknown image $arg" ;;
  esac
done
(( ${#images[@]} )) || die "usage: images.sh [--force] pause|busybox|alpine|examples|kubectl-delivery|operator|trainer|initializer|mpi-pi|trainer-runtimes|kueue-e2e..."

# The registry's storage and buildah's are shared by every images.sh of this cache: one
# images.sh writes at a time (take_lock, below). A run that finds every image it was asked
# for reads only, and takes no lock: the real node's start does not wait while hack/test.sh
# builds an image the node does not need.
mkdir -p "$REGISTRY_DIR"
take_lock() {
  exec 7>"$REGISTRY_DIR/.images.lock"
  if ! flock -n 7; then
    log "images: another images.sh is building into $REGISTRY_DIR; waiting for it"
    flock 7
  fi
}
# would_write: called before anything is written; in the read-only pass (checking=1) it ends
# that pass with status 3 ("something to build").
checking=0
would_write() { if (( checking )); then exit 3; fi; }

registry_pid=""
if (( own_registry )); then
  command -v docker-registry >/dev/null || die "images: docker-registry is missing (hack/install-deps.sh test installs it)"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  REGISTRY="127.0.0.1:$port"
  registry_conf="$(mktemp "${TMPDIR:-/tmp}/trainctl-registry.XXXXXX")"
  printf 'version: 0.1\nlog: {level: warn}\nstorage:\n  filesystem: {rootdirectory: %s}\n  delete: {enabled: true}\nhttp:\n  addr: %s\n' \
    "$REGISTRY_DIR" "$REGISTRY" >"$registry_conf"
  docker-registry serve "$registry_conf" >/dev/null 2>&1 7>&- &
  registry_pid=$!
  trap 'kill "$registry_pid" 2>/dev/null || true' EXIT # cleanup (below) takes over
  for _ in $(seq 100); do
    curl -fsS --max-time 2 "http://$REGISTRY/v2/" >/dev/null 2>&1 && break
    kill -0 "$registry_pid" 2>/dev/null || die "images: docker-registry did not start on $REGISTRY"
    sleep 0.1
  done
else
  REGISTRY="127.0.0.1:$(node_port registry)"
fi
curl -fsS --max-time 2 "http://$REGISTRY/v2/" >/dev/null 2>&1 ||
  die "no registry on $REGISTRY (node.sh up starts it)"

# present REPOSITORY TAG: the registry holds that manifest.
present() {
  curl -fs --max-time 5 -o /dev/null -I \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    -H 'Accept: application/vnd.oci.image.index.v1+json' \
    "http://$REGISTRY/v2/$1/manifests/$2"
}

# digest REPOSITORY TAG: the digest of that manifest in the registry (empty when absent).
digest() {
  curl -fs --max-time 5 -o /dev/null -D - -I \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    -H 'Accept: application/vnd.oci.image.index.v1+json' \
    "http://$REGISTRY/v2/$1/manifests/$2" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}

work=""
layer=""  # a layer's folder being assembled (build_example, build_kubectl_delivery)
cleanup() {
  if [[ -n "$work" ]]; then rm -rf "$work"; fi
  if [[ -n "$layer" ]]; then rm -rf "$layer"; fi
  if [[ -n "$registry_pid" ]]; then
    kill "$registry_pid" 2>/dev/null || true
    wait "$registry_pid" 2>/dev/null || true
    rm -f "$registry_conf"
  fi
}
trap cleanup EXIT

# new_image: an empty OCI image in $work/oci (tag "img") with its root filesystem unpacked at
# $work/bundle/rootfs.
new_image() {
  would_write
  work="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-image.XXXXXX")"
  umoci init --layout "$work/oci"
  umoci new --image "$work/oci:img"
  umoci unpack --image "$work/oci:img" "$work/bundle" >/dev/null
}

# push_image REPOSITORY TAG umoci-config-flags...: packs the root filesystem as one layer,
# sets the image's configuration, and copies it into the registry.
push_image() {
  local repo="$1" tag="$2"; shift 2
  umoci repack --image "$work/oci:img" "$work/bundle"
  umoci config --image "$work/oci:img" --os linux --architecture amd64 "$@"
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:img" "docker://$REGISTRY/$repo:$tag"
  rm -rf "$work"
  work=""
}

build_pause() {
  present pause "$PAUSE_TAG" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  install -m 0755 "$(command -v catatonit)" "$work/bundle/rootfs/pause"
  push_image pause "$PAUSE_TAG" --config.entrypoint /pause --config.cmd -P --config.user 65535:65535
  log "images: built registry.k8s.io/pause:$PAUSE_TAG in $(( SECONDS - t0 ))s (catatonit -P)"
}

# Debian's busybox-static, downloaded as a package file (not installed on this machine).
build_busybox() {
  present library/busybox "$BUSYBOX_TAG" && (( ! force )) && return 0
  local t0=$SECONDS applet
  new_image
  mkdir -p "$work/deb"
  # A machine whose package lists were never fetched (or were cleaned) gets them once.
  (cd "$work/deb" && apt-get download -qq -o APT::Sandbox::User=root busybox-static 2>/dev/null) ||
    { apt-get update -qq && (cd "$work/deb" && apt-get download -qq -o APT::Sandbox::User=root busybox-static); } ||
    die "images: could not download the busybox-static package (apt-get download)"
  dpkg-deb -x "$work"/deb/busybox-static_*.deb "$work/deb/root"
  local rootfs="$work/bundle/rootfs"
  mkdir -p "$rootfs"/{bin,etc,tmp,root}
  chmod 1777 "$rootfs/tmp"
  install -m 0755 "$work/deb/root/bin/busybox" "$rootfs/bin/busybox"
  for applet in $("$rootfs/bin/busybox" --list); do
    [[ -e "$rootfs/bin/$applet" ]] || ln -s busybox "$rootfs/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
  push_image library/busybox "$BUSYBOX_TAG" --config.cmd sh --config.env PATH=/bin
  log "images: built docker.io/library/busybox:$BUSYBOX_TAG in $(( SECONDS - t0 ))s (Debian busybox-static)"
}

# Closes every descriptor above 2 this shell inherited. mmdebstrap hands apt a pipe that apt's
# hooks write to through /bin/sh (`cat >&N`), and dash reads one-digit descriptors only: under a
# caller that left many open (ctest, flock), the pipe lands above 9 and apt fails with "Bad fd
# number".
close_inherited_fds() {
  local fd
  for fd in /proc/"$BASHPID"/fd/*; do
    fd="${fd##*/}"
    (( fd > 2 )) && eval "exec ${fd}>&-"
  done
  return 0
}

# debian_rootfs VARIANT PACKAGE...: Debian 12 made by mmdebstrap (docs, man pages and locales
# left out), unpacked into the new image's root filesystem.
debian_rootfs() {
  local variant="$1" include=(); shift
  (( $# )) && include=(--include="$(IFS=,; echo "$*")")
  ( close_inherited_fds
    exec mmdebstrap --quiet --variant="$variant" "${include[@]}" \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      bookworm "$work/rootfs.tar" ) >"$work/mmdebstrap.log" 2>&1 ||
    { tail -20 "$work/mmdebstrap.log" >&2; die "images: mmdebstrap failed"; }
  tar -xpf "$work/rootfs.tar" --numeric-owner -C "$work/bundle/rootfs"
  rm -f "$work/rootfs.tar"
}

# also_name FROM TO: a second name for an image already in the registry.
also_name() {
  would_write
  skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$REGISTRY/$1" "docker://$REGISTRY/$2"
}

# The stand-in for alpine:3.10 (the PyTorch init container's default image).
build_alpine_stand_in() {
  local tag="3.10" stamp
  stamp="$(echo "recipe=1 minbase bind9-dnsutils" | sha256sum | cut -c1-12)"
  present trainctl/alpine-stand-in "$stamp" && present library/alpine "$tag" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  debian_rootfs minbase bind9-dnsutils
  push_image trainctl/alpine-stand-in "$stamp" --config.cmd sh \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  also_name "trainctl/alpine-stand-in:$stamp" "library/alpine:$tag"
  log "images: built docker.io/library/alpine:$tag (Debian 12 minbase + bind9-dnsutils) in $(( SECONDS - t0 ))s"
}

# The examples' base: Debian 12 with the frameworks the examples import (the same packages
# `make run` and the tests use on this machine). Its tag is a hash of the package list.
# OpenSSH: an MPIJob v2beta1's launcher reaches its workers' `sshd -De` with the keys of the
# Secret the operator makes; as in the images mpi-operator's examples use, the client does not
# check host keys (the workers' are the image's own) and sshd accepts the mounted keys' modes.
# The user mpiuser (uid 1000) with a non-root sshd configuration in its home (port 2222, the
# host key from the mounted Secret), as Trainer v2's MPI runtimes run their nodes.
EXAMPLES_PACKAGES=(python3 python3-torch python3-sklearn python3-xgboost python3-mpi4py
  openmpi-bin openssh-server openssh-client ca-certificates)
examples_base_tag() { echo "recipe=3 ${EXAMPLES_PACKAGES[*]}" | sha256sum | cut -c1-12; }
build_examples_base() {
  local tag
  tag="$(examples_base_tag)"
  present trainctl/examples-base "$tag" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  log "images: building the examples' base with mmdebstrap (Debian 12: ${EXAMPLES_PACKAGES[*]}; a few minutes, once)"
  debian_rootfs apt "${EXAMPLES_PACKAGES[@]}"
  local rootfs="$work/bundle/rootfs"
  mkdir -p "$rootfs/workspace" "$rootfs/run/sshd"
  printf '%s\n' "StrictHostKeyChecking no" "UserKnownHostsFile /dev/null" "LogLevel ERROR" \
    >"$rootfs/etc/ssh/ssh_config.d/trainctl-mpi.conf"
  printf '%s\n' "StrictModes no" >"$rootfs/etc/ssh/sshd_config.d/trainctl-mpi.conf"
  # The host keys (openssh-server's postinst makes them; any it did not are made here).
  ssh-keygen -A -f "$rootfs" >/dev/null
  echo "mpiuser:x:1000:1000::/home/mpiuser:/bin/bash" >>"$rootfs/etc/passwd"
  echo "mpiuser:x:1000:" >>"$rootfs/etc/group"
  echo "mpiuser:*:20000:0:99999:7:::" >>"$rootfs/etc/shadow"
  mkdir -p "$rootfs/home/mpiuser"
  printf '%s\n' "PidFile /home/mpiuser/sshd.pid" "HostKey /home/mpiuser/.ssh/id_rsa" \
    "StrictModes no" "Port 2222" >"$rootfs/home/mpiuser/.sshd_config"
  chown -R 1000:1000 "$rootfs/home/mpiuser"
  push_image trainctl/examples-base "$tag" --config.workingdir /workspace \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env PYTHONUNBUFFERED=1 --config.cmd python3
  log "images: built the examples' base trainctl/examples-base:$tag in $(( SECONDS - t0 ))s"
}

# layered_image BASE STAMP LAYER REF [umoci-config-flags...]: the registry's image BASE plus
# one layer holding the folder LAYER (added as a tar, so the base is never unpacked), pushed
# as REF and as STAMP (REPOSITORY:HASH of every input, which says REF is current).  Nothing
# is done when both are there.
layered_image() {
  local base="$1" stamp="$2" layer="$3" ref="$4"; shift 4
  if present "${stamp%:*}" "${stamp##*:}" && present "${ref%:*}" "${ref##*:}" && (( ! force )); then
    return 0
  fi
  would_write
  local t0=$SECONDS
  work="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-image.XXXXXX")"
  skopeo copy --quiet --src-tls-verify=false "docker://$REGISTRY/$base" "oci:$work/oci:img"
  # The folder's entries, not "." (whose mode would become the image's root directory's).
  local entries=()
  mapfile -t entries < <(find "$layer" -mindepth 1 -maxdepth 1 -printf '%P\n' | sort)
  tar -C "$layer" --owner=0 --group=0 --numeric-owner -cf "$work/layer.tar" -- "${entries[@]}"
  umoci raw add-layer --image "$work/oci:img" "$work/layer.tar"
  if (( $# )); then umoci config --image "$work/oci:img" "$@"; fi
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:img" "docker://$REGISTRY/$stamp"
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:img" "docker://$REGISTRY/$ref"
  rm -rf "$work"
  work=""
  log "images: built $ref (on $base) in $(( SECONDS - t0 ))s"
}

# tree_hash TEXT PATH...: a short hash of TEXT and of the files under each PATH (bytecode
# caches left out).
tree_hash() {
  local text="$1"; shift
  (echo "$text"; find "$@" -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum) |
    sha256sum | cut -c1-12
}

# build_example FOLDER NAME:TAG [umoci-config-flags...]: the examples' base with the example's
# folder in /workspace, named as its manifests name it.
build_example() {
  local folder="$1" ref="$2" base; shift 2
  base="$(examples_base_tag)"
  layer="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-layer.XXXXXX")"
  mkdir -p "$layer/workspace"
  cp -r "$(repo_root)/examples/$folder/." "$layer/workspace/"
  layered_image "trainctl/examples-base:$base" \
    "trainctl/example-$folder:$(cd "$layer" && tree_hash "$base layer=2 $*" .)" "$layer" "$ref" "$@"
  rm -rf "$layer"
  layer=""
}

# Each example's image, named as its manifests name it (docker.io/ is the registry, mapped to
# the loopback one).
build_examples() {
  build_examples_base
  build_example pytorch pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime
  build_example xgboost kubeflow/xgboost-dist-iris:latest
  # mpirun runs as root in these containers (as in the images MPIJob examples name).
  build_example mpi kubeflow/mpi-horovod-mnist:latest \
    --config.env OMPI_ALLOW_RUN_AS_ROOT=1 --config.env OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# The stand-ins for the images Trainer v2.3.0's runtimes (manifests/base/runtimes) name: the
# examples' base (Debian's PyTorch, torchrun) under upstream's PyTorch name. torch 1.13's
# torchrun on Python >= 3.11 starts only with PET_REDIRECTS and PET_TEE set to something other
# than "0" (pytorch/pytorch#92319); upstream's runtime sets neither, so the image does ("9:1"
# redirects no real local rank).
# stand_ins BASE REF... -- UMOCI-FLAGS...: the examples' base BASE plus the folder $layer, under
# each REF, with those config flags.
stand_ins() {
  local base="$1" ref refs=() flags
  shift
  while [[ "$1" != -- ]]; do refs+=("$1"); shift; done
  shift
  flags=("$@")
  for ref in "${refs[@]}"; do
    layered_image "trainctl/examples-base:$base" \
      "trainctl/trainer-runtime:$(cd "$layer" && tree_hash "$base layer=1 $ref ${flags[*]}" .)" \
      "$layer" "$ref" "${flags[@]}"
  done
  rm -rf "$layer"
  layer=""
}

build_trainer_runtimes() {
  build_examples_base
  local base
  base="$(examples_base_tag)"
  layer="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-layer.XXXXXX")"
  mkdir -p "$layer/workspace"
  stand_ins "$base" pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime nvidia/jax:25.10-py3 \
    kubeflow/trainer/xgboost-runtime:latest kubeflow/trainer/xgboost-runtime:v2.3.0 -- \
    --config.workingdir /workspace --config.env PET_REDIRECTS=9:1 --config.env PET_TEE=9:1
  # The MPI runtimes' (deepspeed-distributed, mlx-distributed): run as mpiuser, their nodes'
  # sshd and the launcher's ssh on port 2222, from /home/mpiuser (DeepSpeed and MLX themselves
  # are not packaged for Debian; mpirun, mpi4py and PyTorch are there).
  layer="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-layer.XXXXXX")"
  install -D -m 0644 /dev/stdin "$layer/etc/ssh/ssh_config.d/trainer-mpi.conf" <<<"Port 2222"
  stand_ins "$base" kubeflow/trainer/deepspeed-runtime:latest \
    kubeflow/trainer/deepspeed-runtime:v2.3.0 kubeflow/trainer/mlx-runtime:latest \
    kubeflow/trainer/mlx-runtime:v2.3.0 -- \
    --config.workingdir /home/mpiuser --config.env HOME=/home/mpiuser
  build_busybox
  build_pause
  present library/busybox latest || also_name "library/busybox:$BUSYBOX_TAG" library/busybox:latest
  present pause 3.9 || also_name "pause:$PAUSE_TAG" pause:3.9
}

# The stand-ins for mpi-operator's mpioperator/mpi-pi:openmpi and :mpich, which its own e2e
# suite runs (hack/upstream/mpi-operator-e2e.sh): Debian 12 with Open MPI or MPICH and OpenSSH,
# the user mpiuser (uid 1000) with a non-root sshd configuration in its home, sshd and ssh on
# port 2222, host keys not checked, and /home/mpiuser/pi compiled here from the module's own
# examples/v2beta1/pi/pi.cc (`go mod download` fetches it into the Go module cache).
MPI_OPERATOR_VERSION="${TRAINCTL_MPI_OPERATOR_VERSION:-v0.8.0}"
build_mpi_pi_stand_in() { # openmpi|mpich
  local impl="$1" module source stamp packages compiler
  case "$impl" in
    openmpi) packages=(openmpi-bin) compiler=mpicxx.openmpi ;;
    mpich) packages=(mpich) compiler=mpicxx.mpich ;;
  esac
  module="$(GOFLAGS=-mod=mod go mod download -json "github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')" ||
    die "images: cannot download github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION"
  source="$module/examples/v2beta1/pi/pi.cc"
  stamp="$( (echo "recipe=3 $impl $MPI_OPERATOR_VERSION"; cat "$source") | sha256sum | cut -c1-12)"
  present "trainctl/mpi-pi-$impl" "$stamp" && present mpioperator/mpi-pi "$impl" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  debian_rootfs apt "${packages[@]}" openssh-server openssh-client
  local rootfs="$work/bundle/rootfs" home="$work/bundle/rootfs/home/mpiuser"
  echo "mpiuser:x:1000:1000::/home/mpiuser:/bin/bash" >>"$rootfs/etc/passwd"
  echo "mpiuser:x:1000:" >>"$rootfs/etc/group"
  echo "mpiuser:*:20000:0:99999:7:::" >>"$rootfs/etc/shadow"
  mkdir -p "$home" "$rootfs/run/sshd"
  printf '%s\n' "PidFile /home/mpiuser/sshd.pid" "HostKey /home/mpiuser/.ssh/id_rsa" \
    "StrictModes no" "Port 2222" >"$home/.sshd_config"
  printf '%s\n' "StrictHostKeyChecking no" "UserKnownHostsFile /dev/null" "Port 2222" \
    >"$rootfs/etc/ssh/ssh_config.d/mpi-operator.conf"
  printf '%s\n' "StrictModes no" "Port 2222" >"$rootfs/etc/ssh/sshd_config.d/mpi-operator.conf"
  ssh-keygen -A -f "$rootfs" >/dev/null
  # The entrypoint (the suite's MPICH specs give only args): a launcher first waits, 120 s at
  # most for each, until its own name and every host of its hostfile resolve, since the
  # workers' DNS records appear a moment after their pods run (and a name looked up too early
  # stays unresolved in CoreDNS's cache for a while).
  install -D -m 0755 /dev/stdin "$rootfs/usr/local/bin/entrypoint" <<'SCRIPT'
#!/bin/sh
if [ "$K_MPI_JOB_ROLE" = launcher ] && [ -r /etc/mpi/hostfile ]; then
  for host in "$(hostname)" $(cut -d: -f1 /etc/mpi/hostfile | cut -d' ' -f1); do
    i=0
    until getent hosts "$host" >/dev/null || [ "$i" -ge 600 ]; do sleep 0.2; i=$((i + 1)); done
  done
fi
exec "$@"
SCRIPT
  "$compiler" -O2 "$source" -o "$home/pi"
  chown -R 1000:1000 "$home"
  push_image "trainctl/mpi-pi-$impl" "$stamp" --config.workingdir /home/mpiuser \
    --config.entrypoint /usr/local/bin/entrypoint \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  also_name "trainctl/mpi-pi-$impl:$stamp" "mpioperator/mpi-pi:$impl"
  log "images: built docker.io/mpioperator/mpi-pi:$impl (stand-in: Debian 12, pi.cc of mpi-operator $MPI_OPERATOR_VERSION) in $(( SECONDS - t0 ))s"
}

# The MPI launcher's init container (the operator's default --mpi-kubectl-delivery-image):
# busybox with this cluster's kubectl and images/kubectl-delivery.sh.
build_kubectl_delivery() {
  build_busybox
  local kubectl flags=(--config.entrypoint /usr/local/bin/kubectl-delivery --config.env PATH=/usr/local/bin:/bin)
  kubectl="$(cluster_bin_dir)/kubectl"
  [[ -x "$kubectl" ]] || die "images: no kubectl at $kubectl (hack/cluster/build.sh builds it)"
  layer="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-layer.XXXXXX")"
  install -D -m 0755 "$kubectl" "$layer/usr/local/bin/kubectl"
  install -D -m 0755 "$here/images/kubectl-delivery.sh" "$layer/usr/local/bin/kubectl-delivery"
  layered_image "library/busybox:$BUSYBOX_TAG" \
    "trainctl/kubectl-delivery:$(cd "$layer" && tree_hash "busybox=$BUSYBOX_TAG ${flags[*]}" .)" "$layer" \
    kubeflow/training-v1/kubectl-delivery:latest "${flags[@]}"
  rm -rf "$layer"
  layer=""
}

# debian:bookworm-slim, the Dockerfile's runtime base: Debian 12 minbase without docs, man
# pages and locales, as the official slim image is.
debian_slim_done=0  # built (or found) once per run, even with --force
build_debian_slim() {
  (( debian_slim_done )) && return 0
  debian_slim_done=1
  local stamp
  stamp="$(echo "recipe=1 minbase" | sha256sum | cut -c1-12)"
  present trainctl/debian-slim "$stamp" && present library/debian bookworm-slim && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  debian_rootfs minbase
  push_image trainctl/debian-slim "$stamp" --config.cmd bash \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  also_name "trainctl/debian-slim:$stamp" library/debian:bookworm-slim
  log "images: built docker.io/library/debian:bookworm-slim (Debian 12 minbase) in $(( SECONDS - t0 ))s"
}

# buildah_build DOCKERFILE CONTEXT REPOSITORY:TAG [buildah-build-flags...]: builds with buildah
# and pushes the result to the registry. buildah's storage is in the cache, so unchanged layers
# (a Dockerfile's apt-get and pip steps) are built once; its registries map docker.io to the
# loopback registry, so FROM debian:bookworm-slim is build_debian_slim's image. The image itself
# is removed from buildah's storage once pushed (the registry holds it).
buildah_build() {
  local dockerfile="$1" context="$2" ref="$3"; shift 3
  would_write
  command -v buildah >/dev/null || die "images: buildah is missing (hack/install-deps.sh test installs it)"
  local store log conf
  store="$(cache_root)/buildah"
  mkdir -p "$store"
  log="$(mktemp "${TMPDIR:-/tmp}/trainctl-buildah.XXXXXX")"
  conf="$(mktemp "${TMPDIR:-/tmp}/trainctl-registries.XXXXXX")"
  printf 'unqualified-search-registries = ["docker.io"]\n[[registry]]\nprefix = "docker.io"\nlocation = "%s"\ninsecure = true\n' \
    "$REGISTRY" >"$conf"
  local buildah=(env CONTAINERS_REGISTRIES_CONF="$conf" buildah
    --root "$store/storage" --runroot "$store/run" --storage-driver overlay)
  # The RUN steps trust what this machine trusts (a TLS-inspecting proxy's CA on the way to
  # PyPI, say): its CA bundle and a pip.conf naming it are mounted while they run, and are
  # not part of the image.
  local trust=()
  if [[ -s /etc/ssl/certs/ca-certificates.crt ]]; then
    printf '[global]\ncert = /run/trainctl-host-ca.crt\n' >"$conf.pip"
    trust=(-v /etc/ssl/certs/ca-certificates.crt:/run/trainctl-host-ca.crt:ro -v "$conf.pip:/etc/pip.conf:ro")
  fi
  if ! "${buildah[@]}" build --layers --pull-always --isolation chroot --network host "${trust[@]}" \
      -f "$dockerfile" -t "$ref" "$@" "$context" >"$log" 2>&1 ||
     ! "${buildah[@]}" push --quiet --tls-verify=false "$ref" "docker://$REGISTRY/$ref" >>"$log" 2>&1; then
    tail -30 "$log" >&2
    rm -f "$log" "$conf" "$conf.pip"
    die "images: buildah could not build or push $ref from $dockerfile"
  fi
  "${buildah[@]}" rmi "$ref" >/dev/null 2>&1 || true
  rm -f "$log" "$conf" "$conf.pip"
}

# The operator: `buildah build --target prebuilt` of the repository's Dockerfile, with a build
# context holding only the stripped binary TRAINCTL_BIN. Tagged trainctl/operator:<hash of the
# Dockerfile and the binary> (which says it is current) and library/trainctl:latest.
build_operator() {
  local binary="${TRAINCTL_BIN:-$(repo_root)/build/release/trainctl}" hash
  [[ -x "$binary" ]] || die "images: no trainctl binary at $binary (build it: cmake --build --preset release)"
  # The runtime stage is Debian 12: a binary built elsewhere would not find its libraries.
  grep -qx 'VERSION_ID="12"' /etc/os-release 2>/dev/null && grep -qx 'ID=debian' /etc/os-release ||
    die "images: the operator's image takes a trainctl built on Debian 12 (its runtime stage is debian:bookworm-slim); this machine is $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}")"
  build_debian_slim
  hash="$(cat "$(repo_root)/Dockerfile" "$binary" | sha256sum | cut -c1-12)"
  if ! present trainctl/operator "$hash" || (( force )); then
    would_write
    local t0=$SECONDS
    work="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-image.XXXXXX")"
    install -m 0755 -s "$binary" "$work/trainctl"
    buildah_build "$(repo_root)/Dockerfile" "$work" "trainctl/operator:$hash" --target prebuilt
    rm -rf "$work"
    work=""
    log "images: built trainctl/operator:$hash (Dockerfile target prebuilt, buildah) in $(( SECONDS - t0 ))s"
  fi
  # Named latest only when it is not already: a run with nothing to build takes no lock, so a
  # node suite's `images.sh operator` never waits behind the background chain's builds.
  local built
  built="$(digest trainctl/operator "$hash")"
  [[ -n "$built" && "$built" == "$(digest library/trainctl latest)" ]] ||
    also_name "trainctl/operator:$hash" library/trainctl:latest
}

# The fine-tuning images from images/<folder>/Dockerfile (context: the repository, which they
# copy hack/requirements/ and the SDK from), tagged trainctl/<name>:<hash of the Dockerfile,
# the requirements and the SDK> and trainctl/<name>:dev, the name the node's tests pass to
# TrainingClient.train(trainer_image=, initializer_image=).
# The trainer is built on the examples' base (its Dockerfile's BASE): Debian's PyTorch is there
# already, so its apt-get step fetches and unpacks no torch and its image shares the node's
# layers; the initializer, which has no PyTorch, stays on debian:bookworm-slim.
build_fine_tuning_image() {
  local folder="$1" name="$2" root hash base="" args=()
  root="$(repo_root)"
  build_debian_slim
  if [[ "$name" == trainer ]]; then
    build_examples_base
    base="trainctl/examples-base:$(examples_base_tag)"
    args=(--build-arg "BASE=$base")
  fi
  hash="$(cd "$root" && tree_hash "recipe=1 base=$base" "images/$folder/Dockerfile" hack/requirements sdk/python/trainctl)"
  if ! present "trainctl/$name" "$hash" || (( force )); then
    local t0=$SECONDS
    log "images: building trainctl/$name from images/$folder/Dockerfile${base:+ on $base} (pip from PyPI, pinned; a few minutes the first time)"
    buildah_build "$root/images/$folder/Dockerfile" "$root" "trainctl/$name:$hash" "${args[@]}"
    log "images: built trainctl/$name:$hash (images/$folder/Dockerfile, buildah) in $(( SECONDS - t0 ))s"
  fi
  also_name "trainctl/$name:$hash" "trainctl/$name:dev"
}

# shellcheck source=images/kueue-e2e.sh
source "$here/images/kueue-e2e.sh"

build_all() {
for image in "${images[@]}"; do
  case "$image" in
    pause) build_pause ;;
    busybox) build_busybox ;;
    alpine) build_alpine_stand_in ;;
    examples) build_examples ;;
    kubectl-delivery) build_kubectl_delivery ;;
    operator) build_operator ;;
    trainer) build_fine_tuning_image trainer trainer ;;
    initializer) build_fine_tuning_image storage-initializer initializer ;;
    mpi-pi) build_mpi_pi_stand_in openmpi && build_mpi_pi_stand_in mpich ;;
    trainer-runtimes) build_trainer_runtimes ;;
    kueue-e2e) build_controller_image kueue && build_controller_image jobset && build_agnhost_image ;;
  esac
done
}

# First read only: when every image is there, nothing waits for the lock. The pass runs in a
# subshell with its own clean-up (its temporary folders), which must not stop the registry.
if (( ! force )) && ( checking=1 registry_pid=""; trap cleanup EXIT; build_all ); then
  exit 0
fi
take_lock
build_all
