#!/usr/bin/env bash
# kueue.sh up|down: Kueue (sigs.k8s.io/kueue) in the test cluster, as
# controller.sh starts and stops it (its header says how).
set -euo pipefail
case "${1:-}" in
  -h|--help) exec "$(dirname "${BASH_SOURCE[0]}")/controller.sh" --help ;;
esac
exec "$(dirname "${BASH_SOURCE[0]}")/controller.sh" kueue "$@"
