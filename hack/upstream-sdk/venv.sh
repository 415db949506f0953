#!/usr/bin/env bash
# Makes (once) a venv holding an unmodified upstream SDK and everything it needs, and prints its
# python's path:
#   venv.sh           kubeflow-training 1.9.4 (the v1 TrainingClient), hack/requirements/upstream-sdk.txt
#   venv.sh trainer   kubeflow 0.5.0 (Trainer v2's TrainerClient), hack/requirements/upstream-sdk-v2.txt
#
# The venv lives in the project's cache outside the repository
# (${TRAINCTL_CACHE:-~/.cache/trainctl}/upstream-sdk/<hash of the pins>), beside the control
# plane's binaries; a fresh machine builds it in a few seconds (PyPI must be reachable). It is
# made from /usr/bin/python3 without system site packages, so neither Debian's packages nor the
# project's own SDK are visible to it. Exit 1 with pip's last lines when the install fails.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=../cluster/lib.sh
source "$repo/hack/cluster/lib.sh"
case "${1:-}" in
  "") pins="$repo/hack/requirements/upstream-sdk.txt" module=kubeflow.training ;;
  trainer) pins="$repo/hack/requirements/upstream-sdk-v2.txt" module=kubeflow.trainer ;;
  *) echo "usage: venv.sh [trainer]" >&2; exit 2 ;;
esac
hash="$(sha256sum "$pins" | cut -c1-16)"
dir="$(cache_root)/upstream-sdk/$hash"
if [[ ! -x "$dir/bin/python" || ! -f "$dir/.complete" ]]; then
  rm -rf "$dir"  # an earlier install that did not finish
  mkdir -p "$(dirname "$dir")"
  /usr/bin/python3 -m venv "$dir"
  log="$(mktemp -t trainctl-upstream-sdk-pip.XXXXXX)"
  if ! "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
      --no-deps -r "$pins" >"$log" 2>&1; then
    echo "upstream-sdk: pip install -r $pins failed; last lines of $log:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  rm -f "$log"
  "$dir/bin/python" -c "import $module" || {
    echo "upstream-sdk: $module does not import in $dir" >&2; exit 1; }
  touch "$dir/.complete"
fi
echo "$dir/bin/python"
