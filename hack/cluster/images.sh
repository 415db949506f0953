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
#
# Each image is named as the manifests that use it name it; containerd maps every registry
# name to the loopback registry (node.sh), so one name space serves them all.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

force=0
images=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    pause | busybox | alpine | examples) images+=("$arg") ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) die "images.sh: unknown image $arg" ;;
  esac
done
(( ${#images[@]} )) || die "usage: images.sh [--force] pause|busybox|alpine|examples..."

REGISTRY="127.0.0.1:$(node_port registry)"
curl -fsS --max-time 2 "http://$REGISTRY/v2/" >/dev/null 2>&1 ||
  die "no registry on $REGISTRY (node.sh up starts it)"

# present REPOSITORY TAG: the registry holds that manifest.
present() {
  curl -fs --max-time 5 -o /dev/null -I \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/$1/manifests/$2"
}

work=""
cleanup() { if [[ -n "$work" ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT

# new_image: an empty OCI image in $work/oci (tag "img") with its root filesystem unpacked at
# $work/bundle/rootfs.
new_image() {
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

# debian_rootfs VARIANT PACKAGE...: Debian 12 made by mmdebstrap (docs, man pages and locales
# left out), unpacked into the new image's root filesystem.
debian_rootfs() {
  local variant="$1"; shift
  mmdebstrap --quiet --variant="$variant" --include="$(IFS=,; echo "$*")" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    bookworm "$work/rootfs.tar" >"$work/mmdebstrap.log" 2>&1 ||
    { tail -20 "$work/mmdebstrap.log" >&2; die "images: mmdebstrap failed"; }
  tar -xpf "$work/rootfs.tar" --numeric-owner -C "$work/bundle/rootfs"
  rm -f "$work/rootfs.tar"
}

# also_name FROM TO: a second name for an image already in the registry.
also_name() {
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
EXAMPLES_PACKAGES=(python3 python3-torch python3-sklearn python3-xgboost python3-mpi4py
  openmpi-bin ca-certificates)
examples_base_tag() { echo "recipe=1 ${EXAMPLES_PACKAGES[*]}" | sha256sum | cut -c1-12; }
build_examples_base() {
  local tag
  tag="$(examples_base_tag)"
  present trainctl/examples-base "$tag" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  log "images: building the examples' base with mmdebstrap (Debian 12: ${EXAMPLES_PACKAGES[*]}; a few minutes, once)"
  debian_rootfs apt "${EXAMPLES_PACKAGES[@]}"
  mkdir -p "$work/bundle/rootfs/workspace"
  push_image trainctl/examples-base "$tag" --config.workingdir /workspace \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env PYTHONUNBUFFERED=1 --config.cmd python3
  log "images: built the examples' base trainctl/examples-base:$tag in $(( SECONDS - t0 ))s"
}

# build_example FOLDER NAME:TAG: the base plus one layer holding the example's folder in
# /workspace (added as a tar, so the base is never unpacked), pushed under the name its
# manifests use and under trainctl/example-<folder>:<hash>, which says it is current.
build_example() {
  local folder="$1" ref="$2" base hash
  base="$(examples_base_tag)"
  hash="$( (echo "$base layer=tar"; cd "$(repo_root)/examples/$folder" && find . -type f -print0 | sort -z |
    xargs -0 sha256sum) | sha256sum | cut -c1-12)"
  if present "trainctl/example-$folder" "$hash" && present "${ref%:*}" "${ref##*:}" && (( ! force )); then
    return 0
  fi
  local t0=$SECONDS
  work="$(mktemp -d "${TMPDIR:-/tmp}/trainctl-image.XXXXXX")"
  skopeo copy --quiet --src-tls-verify=false "docker://$REGISTRY/trainctl/examples-base:$base" "oci:$work/oci:img"
  mkdir -p "$work/layer/workspace"
  cp -r "$(repo_root)/examples/$folder/." "$work/layer/workspace/"
  tar -C "$work/layer" --owner=0 --group=0 --numeric-owner -cf "$work/layer.tar" workspace
  umoci raw add-layer --image "$work/oci:img" "$work/layer.tar"
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:img" "docker://$REGISTRY/trainctl/example-$folder:$hash"
  skopeo copy --quiet --dest-tls-verify=false "oci:$work/oci:img" "docker://$REGISTRY/$ref"
  rm -rf "$work"
  work=""
  log "images: built $ref (examples/$folder on the base) in $(( SECONDS - t0 ))s"
}

# Each example's image, named as its manifests name it (docker.io/ is the registry, mapped to
# the loopback one).
EXAMPLE_IMAGES=(pytorch=pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime
  xgboost=kubeflow/xgboost-dist-iris:latest mpi=kubeflow/mpi-horovod-mnist:latest)
build_examples() {
  build_examples_base
  local pair
  for pair in "${EXAMPLE_IMAGES[@]}"; do build_example "${pair%%=*}" "${pair#*=}"; done
}

for image in "${images[@]}"; do
  case "$image" in
    pause) build_pause ;;
    busybox) build_busybox ;;
    alpine) build_alpine_stand_in ;;
    examples) build_examples ;;
  esac
done
