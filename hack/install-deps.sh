#!/usr/bin/env bash
# Installs what trainctl needs to build, test and run its examples, and nothing that is
# already there: Debian packages (as root or through sudo) and the project's Python venv.
# Idempotent and silent when nothing is missing.
#
# Python: the examples use Debian's PyTorch, XGBoost and scikit-learn, which only
# /usr/bin/python3 can import. The project venv .venv is made from /usr/bin/python3 with
# --system-site-packages, so `python3` inside it sees those packages; make run and the tests
# put .venv/bin first on PATH. (The python3 that comes first on a stock PATH here is another
# interpreter that cannot import them.)
#
# Usage: hack/install-deps.sh [run|test] [--packages]. `run` (make run) installs only what
# building `trainctl` and running the PyTorch example need; `test` (the default: make test, make
# build) installs everything the tests use: clang and the sanitizers, XGBoost, Open MPI, the
# SDK's packages, Chromium for the dashboard's browser test, and the pinned TensorFlow, JAX,
# PaddlePaddle and MXNet. --packages stops after the Debian packages (make test starts its
# background builds then, while the venv's downloads run).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
packages_only=0
[[ "${2:-}" == --packages ]] && packages_only=1
case "$mode" in
  run | test) ;;
  *) echo "usage: $0 [run|test] [--packages]" >&2; exit 2 ;;
esac

BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libyaml-dev nlohmann-json3-dev libfmt-dev
  libcli11-dev libgtest-dev libssl-dev libcurl4-openssl-dev libsimdjson-dev libboost-dev
  libsqlite3-dev)
# The sanitized build and the fuzz targets (the `debug` preset): clang with its sanitizer and
# libFuzzer runtimes; clang-format for `make format`.
CHECK_PACKAGES=(clang libclang-rt-dev clang-format)
# The frameworks of the examples and their tests; MPICH beside Open MPI (which stays the default
# mpirun) for MPIJob v2beta1's MPICH test, ssh-keygen to check the MPI jobs' SSH keys.
PYTHON_PACKAGES=(python3 python3-venv python3-torch python3-xgboost python3-sklearn
  openmpi-bin libopenmpi-dev python3-mpi4py openssh-client mpich libmpich-dev)
# The Python SDK (sdk/python): its kubernetes backend, its tests, and the example notebook
# executed headless (nbclient + ipykernel) with matplotlib.
SDK_PACKAGES=(python3-kubernetes python3-yaml python3-pytest python3-nbclient python3-nbformat
  python3-ipykernel python3-matplotlib)
# The dashboard's browser test (test/e2e/test_ui.py): Debian's Chromium, its driver and
# Selenium; no browser is downloaded by a test tool.
UI_PACKAGES=(chromium chromium-driver python3-selenium)

# The real node of the test cluster (hack/cluster/node.sh): containerd and runc, the CNI plugins,
# the loopback registry, the image tools (images are built here from Debian packages by mmdebstrap
# and umoci; buildah builds the operator's from the Dockerfile), iptables and conntrack for
# kube-proxy, socat for the API server's relay on the node's bridge. mmdebstrap was missing here
# until 2026-11-27: only a machine whose image cache was already full could start the node.
NODE_PACKAGES=(containerd runc containernetworking-plugins docker-registry umoci skopeo buildah mmdebstrap iptables
  conntrack catatonit socat)

# `trainctl run --runtime podman|docker` and its test (test/e2e/test_containers.py): Debian's
# podman (it uses the runc above; crun is not installed: it refuses hybrid cgroup hosts), Debian's
# Docker engine (the test starts a dockerd of its own, without bridge or iptables rules; on the
# test machines policy-rc.d keeps apt from starting the system's, a workstation's apt starts
# it), and the static
# busybox the test's image is made of (no image is downloaded). A Docker engine from Docker's own
# packages (dockerd on PATH) serves as well, and Debian's would conflict with it.
CONTAINER_PACKAGES=(podman busybox-static)
command -v dockerd >/dev/null || CONTAINER_PACKAGES+=(docker.io)

# What `make run`'s example needs: PyTorch, and scikit-learn for its bundled digits.
RUN_PACKAGES=(python3 python3-venv python3-torch python3-sklearn)

wanted=("${BUILD_PACKAGES[@]}" "${RUN_PACKAGES[@]}")
venv_imports="torch, sklearn"
if [ "$mode" = test ]; then
  wanted+=("${CHECK_PACKAGES[@]}" "${PYTHON_PACKAGES[@]}" "${SDK_PACKAGES[@]}" "${UI_PACKAGES[@]}"
    "${CONTAINER_PACKAGES[@]}")
  # A containerd or runc from another package (Docker's containerd.io) serves as well, and
  # Debian's would conflict with it.
  for p in "${NODE_PACKAGES[@]}"; do
    case "$p" in containerd | runc) command -v "$p" >/dev/null && continue ;; esac
    wanted+=("$p")
  done
  venv_imports="torch, xgboost, sklearn"
fi

missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
      echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; fi
  fi
  echo "install-deps: installing ${missing[*]} (Debian packages; the PyTorch stack is ~600 MB, a few minutes)"
  start=$(date +%s)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    "${missing[@]}" >/tmp/trainctl-apt.log 2>&1 || {
    echo "install-deps: apt-get failed; last lines of /tmp/trainctl-apt.log:" >&2
    tail -20 /tmp/trainctl-apt.log >&2; exit 1; }
  echo "install-deps: done in $(( $(date +%s) - start ))s"
fi
(( packages_only )) && exit 0

if [ ! -x .venv/bin/python3 ] || ! .venv/bin/python3 -c "import $venv_imports" 2>/dev/null; then
  echo "install-deps: creating .venv from /usr/bin/python3 (--system-site-packages)"
  rm -rf .venv
  /usr/bin/python3 -m venv --system-site-packages .venv
  .venv/bin/python3 -c "import $venv_imports" || {
    echo "install-deps: .venv cannot import $venv_imports" >&2; exit 1; }
fi

# Frameworks Debian does not package (TensorFlow, JAX, PaddlePaddle, MXNet), pinned, from PyPI into
# .venv. The constraints pin the Debian-provided packages so pip never shadows them. Skipped when
# the requirement files have not changed since the last successful install.
if [ "$mode" = test ]; then
requirements=(hack/requirements/frameworks.txt hack/requirements/paddle.txt
  hack/requirements/mxnet.txt)
want=$(cat hack/requirements/constraints.txt "${requirements[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.requirements.sha256 2>/dev/null)" != "$want" ]; then
  echo "install-deps: installing pinned TensorFlow, JAX, PaddlePaddle and MXNet into .venv (~530 MB to download the first time)"
  start=$(date +%s)
  args=()
  for r in "${requirements[@]}"; do args+=(-r "$r"); done
  .venv/bin/python3 -m pip install --quiet --disable-pip-version-check --no-input \
    -c hack/requirements/constraints.txt "${args[@]}" >/tmp/trainctl-pip.log 2>&1 || {
    echo "install-deps: pip failed; last lines of /tmp/trainctl-pip.log:" >&2
    tail -20 /tmp/trainctl-pip.log >&2; exit 1; }
  .venv/bin/python3 -c 'import torch, xgboost, sklearn, numpy, tensorflow, jax, paddle, mpi4py
import numpy as np; np.bool = bool  # MXNet 1.9.1 on numpy 1.24, see hack/requirements/mxnet.txt
import mxnet' \
    >/dev/null 2>&1 || {
    echo "install-deps: .venv cannot import the frameworks after the install" >&2; exit 1; }
  echo "$want" > .venv/.requirements.sha256
  echo "install-deps: Python frameworks ready in $(( $(date +%s) - start ))s"
fi
fi

# Hugging Face fine-tuning (TrainingClient.train(), its tests and notebook): a pinned set that
# works with Debian's torch 1.13; peft and accelerate without their dependencies (see the file).
# Skipped when the files have not changed since the last successful install.
if [ "$mode" = test ]; then
want=$(cat hack/requirements/constraints.txt hack/requirements/huggingface.txt \
  hack/requirements/huggingface-nodeps.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.huggingface.sha256 2>/dev/null)" != "$want" ]; then
  echo "install-deps: installing pinned transformers, peft, datasets and accelerate into .venv (~110 MB to download the first time)"
  start=$(date +%s)
  { .venv/bin/python3 -m pip install --quiet --disable-pip-version-check --no-input \
      -c hack/requirements/constraints.txt -r hack/requirements/huggingface.txt &&
    .venv/bin/python3 -m pip install --quiet --disable-pip-version-check --no-input \
      --no-deps -r hack/requirements/huggingface-nodeps.txt; } >/tmp/trainctl-pip-hf.log 2>&1 || {
    echo "install-deps: pip failed; last lines of /tmp/trainctl-pip-hf.log:" >&2
    tail -20 /tmp/trainctl-pip-hf.log >&2; exit 1; }
  .venv/bin/python3 -c 'import transformers, peft, datasets, accelerate, huggingface_hub' \
    >/dev/null 2>&1 || {
    echo "install-deps: .venv cannot import transformers, peft, datasets, accelerate" >&2; exit 1; }
  echo "$want" > .venv/.huggingface.sha256
  echo "install-deps: Hugging Face stack ready in $(( $(date +%s) - start ))s"
fi
fi

# The SDK, installed into .venv as an editable package (a .pth pointing at sdk/python), so
# `.venv/bin/python -c "from trainctl import TrainingClient"` works and edits take effect.
# No network and no build backend needed; rewritten only when the path changes.
site=$(.venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
want_pth="$PWD/sdk/python"
if [ "$(cat "$site/trainctl-sdk.pth" 2>/dev/null)" != "$want_pth" ]; then
  echo "$want_pth" > "$site/trainctl-sdk.pth"
  echo "install-deps: trainctl SDK installed into .venv (editable: $want_pth)"
fi
