#!/usr/bin/env bash
# jobset.sh up|down: the real JobSet controller (sigs.k8s.io/jobset) in the test cluster, as
# controller.sh starts and stops it (its header says how).
set -euo pipefail
case "${1:-}" in
  -h|--help) exec "$(dirname "${BASH_SOURCE[0]}")/controller.sh" --help ;;
esac
exec "$(dirname "${BASH_SOURCE[0]}")/controller.sh" jobset "$@"
