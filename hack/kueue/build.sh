#!/usr/bin/env bash
# Builds Kueue (sigs.k8s.io/kueue, unmodified: its cmd/kueue, the program upstream's image runs)
# from the Go module proxy and renders its install (the module's config/default) into
# ${TRAINCTL_CACHE:-~/.cache/trainctl}/kueue/<version>/ (hack/cluster/build-controller.sh says
# how; hack/kueue/manifests.py turns the install into the test cluster's).
#   --force        rebuild
#   --print-dir    print the version folder and exit (builds nothing)
# Environment: TRAINCTL_KUEUE_VERSION (default v0.17.0), and build-controller.sh's.
# Cold, 2 cores: docs/testing.md ("Build time").
set -euo pipefail
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,9p' "$0"; exit 0; }
exec "$(dirname "${BASH_SOURCE[0]}")/../cluster/build-controller.sh" kueue sigs.k8s.io/kueue \
  "${TRAINCTL_KUEUE_VERSION:-v0.17.0}" cmd/kueue config/default workloads.kueue.x-k8s.io "$@"
