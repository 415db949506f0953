# Sourced by hack/cluster/images.sh (its helpers: new_image, push_image, debian_rootfs,
# also_name, present, would_write): the images Kueue's own e2e suite needs on the real node
# (hack/upstream/kueue-e2e.sh): Kueue's and JobSet's controllers as Deployments, agnhost.
#
#   build_controller_image NAME  registry.k8s.io/NAME/NAME:<version> for kueue and jobset:
#                        the controller as hack/NAME/build.sh built it (static), as /manager,
#                        run as 65532, as upstream's distroless images have it
#   build_agnhost_image  registry.k8s.io/e2e-test-images/agnhost:<its version>: Kubernetes'
#                        own agnhost (hack/upstream/agnhost.sh builds it) as /agnhost, on
#                        Debian 12 minbase with curl (the suite curls the pods' netexec)

build_controller_image() {
  local name="$1" dir binary version stamp
  dir="$("$here/../$name/build.sh")" || die "images: building $name failed"
  binary="$dir/bin/$name-controller"
  version="${dir##*/}"
  stamp="$( (echo "recipe=1"; cat "$binary") | sha256sum | cut -c1-12)"
  present "trainctl/$name" "$stamp" && present "$name/$name" "$version" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  local rootfs="$work/bundle/rootfs"
  mkdir -p "$rootfs"/{etc,tmp}
  chmod 1777 "$rootfs/tmp"
  install -m 0755 "$binary" "$rootfs/manager"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  push_image "trainctl/$name" "$stamp" --config.entrypoint /manager --config.user 65532:65532
  also_name "trainctl/$name:$stamp" "$name/$name:$version"
  log "images: built registry.k8s.io/$name/$name:$version (the binary of hack/$name/build.sh) in $(( SECONDS - t0 ))s"
}

build_agnhost_image() {
  local binary version stamp
  binary="$("$here/../upstream/agnhost.sh")" || die "images: building agnhost failed"
  version="$("$binary" --version 2>/dev/null | awk '{print $NF}')"
  [[ "$version" =~ ^[0-9.]+$ ]] || die "images: cannot read agnhost's version from $binary --version"
  stamp="$( (echo "recipe=2 minbase curl"; cat "$binary") | sha256sum | cut -c1-12)"
  present trainctl/agnhost "$stamp" && present e2e-test-images/agnhost "$version" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  debian_rootfs minbase curl
  install -m 0755 "$binary" "$work/bundle/rootfs/agnhost"
  push_image trainctl/agnhost "$stamp" --config.entrypoint /agnhost \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  also_name "trainctl/agnhost:$stamp" "e2e-test-images/agnhost:$version"
  log "images: built registry.k8s.io/e2e-test-images/agnhost:$version (Debian 12 minbase, curl) in $(( SECONDS - t0 ))s"
}
