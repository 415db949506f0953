#!/usr/bin/env bash
# Builds the JobSet controller (sigs.k8s.io/jobset, unmodified, the version Kubeflow Trainer
# v2.3.0 pins) from the Go module proxy and renders its install (the module's config/default)
# into ${TRAINCTL_CACHE:-~/.cache/trainctl}/jobset/<version>/ (hack/cluster/build-controller.sh
# says how; hack/jobset/manifests.py turns the install into the test cluster's).
#   --force        rebuild
#   --print-dir    print the version folder and exit (builds nothing)
# Environment: TRAINCTL_JOBSET_VERSION (default v0.12.0), and build-controller.sh's.
# Cold, 2 cores: about 2.5 min (docs/testing.md, "Build time").
set -euo pipefail
[[ "${1:-}" == -h || "${1:-}" == --help ]] && { sed -n '2,9p' "$0"; exit 0; }
exec "$(dirname "${BASH_SOURCE[0]}")/../cluster/build-controller.sh" jobset sigs.k8s.io/jobset \
  "${TRAINCTL_JOBSET_VERSION:-v0.12.0}" . config/default jobsets.jobset.x-k8s.io "$@"
