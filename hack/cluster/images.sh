#!/usr/bin/env bash
# Builds the real node's images on this machine, from Debian packages only (no base image is
# downloaded), and pushes them into the loopback registry that node.sh runs.  The registry's
# storage is in the cache (REGISTRY_DIR), so an image is built once and kept; one that is
# there already is left alone (--force rebuilds).  See docs/control-plane.md ("Images").
#
#   images.sh pause      registry.k8s.io/pause:<PAUSE_TAG>: catatonit in pause mode
#   images.sh busybox    docker.io/library/busybox:<BUSYBOX_TAG>: Debian's busybox-static (a
#                        shell, nslookup, nc, wget) for the node's own tests
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
    pause | busybox) images+=("$arg") ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) die "images.sh: unknown image $arg" ;;
  esac
done
(( ${#images[@]} )) || die "usage: images.sh [--force] pause|busybox..."

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

for image in "${images[@]}"; do
  case "$image" in
    pause) build_pause ;;
    busybox) build_busybox ;;
  esac
done
