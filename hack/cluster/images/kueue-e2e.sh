# Sourced by hack/cluster/images.sh (its helpers: new_image, push_image, debian_rootfs,
# also_name, present, would_write): the images Kueue's own e2e suite needs on the real node
# (hack/upstream/kueue-e2e.sh): Kueue's and JobSet's controllers as Deployments, agnhost.
#
#   build_controller_image NAME  registry.k8s.io/NAME/NAME:<version> for kueue and jobset:
#                        the controller as hack/NAME/build.sh built it (static), as /manager,
#                        run as 65532, as upstream's distroless images have it
#   build_agnhost_image  registry.k8s.io/e2e-test-images/agnhost:<its VERSION>: Kubernetes'
#                        own agnhost (k8s.io/kubernetes/test/images/agnhost of the control
#                        plane's version, built through hack/cluster/go.mod) as /agnhost, on
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
  local src version stamp modcache="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"
  src="$(cd "$here" && GOMODCACHE="$modcache" GOFLAGS=-mod=readonly GOTOOLCHAIN=local \
    go list -e -f '{{.Dir}}' k8s.io/kubernetes/test/images/agnhost)" && [[ -f "$src/VERSION" ]] ||
    die "images: cannot find k8s.io/kubernetes@$(k8s_version)/test/images/agnhost in the Go module cache"
  version="$(cat "$src/VERSION")"
  stamp="$(echo "recipe=1 k8s=$(k8s_version) agnhost=$version minbase curl" | sha256sum | cut -c1-12)"
  present trainctl/agnhost "$stamp" && present e2e-test-images/agnhost "$version" && (( ! force )) && return 0
  local t0=$SECONDS
  new_image
  log "images: building agnhost $version (k8s.io/kubernetes $(k8s_version), go build; niced)"
  # In a copy of the control plane's wrapper module: agnhost needs modules the control plane
  # does not (github.com/ishidawataru/sctp), which -mod=mod adds to the copy's go.sum, checked
  # against the checksum database.
  mkdir -p "$work/mod"
  cp "$here/go.mod" "$here/go.sum" "$work/mod/"
  if ! (cd "$work/mod" && GOMODCACHE="$modcache" GOCACHE="$work/gocache" CGO_ENABLED=0 \
      GOTOOLCHAIN=local GOWORK=off GOFLAGS=-buildvcs=false nice -n 19 \
      go build -mod=mod -trimpath -ldflags "-s -w" -o "$work/agnhost" \
      k8s.io/kubernetes/test/images/agnhost) >"$work/agnhost-build.log" 2>&1; then
    tail -20 "$work/agnhost-build.log" >&2
    die "images: building agnhost failed"
  fi
  rm -rf "$work/gocache" "$work/mod"
  debian_rootfs minbase curl
  install -m 0755 "$work/agnhost" "$work/bundle/rootfs/agnhost"
  push_image trainctl/agnhost "$stamp" --config.entrypoint /agnhost \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  also_name "trainctl/agnhost:$stamp" "e2e-test-images/agnhost:$version"
  log "images: built registry.k8s.io/e2e-test-images/agnhost:$version (Debian 12 minbase, curl) in $(( SECONDS - t0 ))s"
}
