# trainctl — the two commands a new user needs:
#   make run    install what is missing, build, run the example PyTorch DDP job locally
#   make test   install what is missing, build, run every test
#   make check  the inner loop: unit tests and fast end-to-end suites on the release tree
PRESET ?= release
BUILD_DIR := build/$(PRESET)
TRAINCTL := $(BUILD_DIR)/trainctl
export PATH := $(CURDIR)/.venv/bin:$(PATH)

SAN_DIR := build/debug
FUZZ_SECONDS ?= 300

.PHONY: all deps deps-run build build-trainctl build-sanitized run test check unit e2e integration sanitized fuzz bench bench-fine-tune bench-dashboard soak \
	cluster-up cluster-down format clean mpi-operator-e2e trainer-e2e kueue-e2e

all: build

deps:
	@hack/install-deps.sh test

# What `make run` needs and nothing more: the build tools and libraries, PyTorch, scikit-learn.
deps-run:
	@hack/install-deps.sh run

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

# The sanitized tree (clang: ASan, UBSan, libFuzzer instrumentation; the `debug` preset).
build-sanitized: deps
	@cmake --preset debug >/dev/null
	@cmake --build --preset debug

# Only the `trainctl` binary (not the tests and benchmarks) before the example runs.
build-trainctl: deps-run
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) --target trainctl

run: build-trainctl
	$(TRAINCTL) run examples/pytorch/pytorchjob.yaml --replace

# Every test on the release build, then the unit tests, the fast e2e tests and a short run of
# every fuzz target on the sanitized build; the control plane's Go build and the sanitized
# build run in the background beside the steps before them (hack/test.sh).
test:
	@PRESET=$(PRESET) hack/test.sh

# The inner loop: the unit tests and the fast end-to-end suites on the release tree, two at a
# time (tests marked RUN_SERIAL still run alone). docs/testing.md, "Tiers".
check: build
	@ctest --preset $(PRESET) -L 'unit|fast' --parallel 2

sanitized: build-sanitized
	@ctest --preset debug -L 'unit|fast|fuzz'

# A longer fuzzing campaign: FUZZ_SECONDS per target (default 300), corpus kept in
# $(SAN_DIR)/fuzz-campaign between runs.
fuzz: build-sanitized
	@hack/fuzz.sh --seconds $(FUZZ_SECONDS) --work $(SAN_DIR)/fuzz-campaign $(SAN_DIR)/test/fuzz/*_fuzz

unit: build
	@ctest --preset $(PRESET) -L unit

e2e: build
	@ctest --preset $(PRESET) -L e2e

integration: build
	@ctest --preset $(PRESET) -L integration

bench: build
	@bench/local_overhead.py --trainctl $(TRAINCTL)

# mpi-operator v0.8.0's own e2e suite, unmodified, against `trainctl operator` on the real node
# (hack/upstream/mpi-operator-e2e.sh; docs/compatibility.md has the result). Not in `make test`.
mpi-operator-e2e: build
	@hack/upstream/mpi-operator-e2e.sh

# Kubeflow Trainer v2.3.0's own e2e suite, unmodified, against `trainctl operator` on the real
# node with the JobSet controller (hack/upstream/trainer-e2e.sh; docs/compatibility.md has the
# result). Not in `make test` yet.
trainer-e2e: build
	@hack/upstream/trainer-e2e.sh

# Kueue v0.17.0's own e2e suite (its PyTorchJob, JAXJob and TrainJob specs), unmodified, against
# `trainctl operator` on the real node (hack/upstream/kueue-e2e.sh; docs/compatibility.md has
# the result). In `make test` as integration.node.kueue_e2e.
kueue-e2e: build
	@hack/upstream/kueue-e2e.sh

# train() against the same trainer started by hand, and the storage initializer's peak RSS
# (docs/benchmarks.md, "Fine-tuning").
bench-fine-tune: build
	@TRAINCTL_BIN=$(TRAINCTL) bench/fine_tune_overhead.py --rounds 3 --steps 200 --procs 2

# The dashboard and the job history with 10,000 jobs in the history (docs/benchmarks.md,
# "Dashboard and history"): write cost, list and search latency, first paint, memory per stream.
bench-dashboard: build
	@cmake --build $(BUILD_DIR) --target history_seed
	@.venv/bin/python3 bench/dashboard_bench.py --trainctl $(TRAINCTL) --seed $(BUILD_DIR)/bench/history_seed

# The operator's chaos soak on a private test cluster (docs/reliability.md); SOAK_ARGS passes
# options to bench/soak.py (e.g. SOAK_ARGS="--jobs 100 --kills 10").
soak: build
	@bench/soak.sh $(SOAK_ARGS)

cluster-up:
	@hack/cluster/up.sh

cluster-down:
	@hack/cluster/down.sh

format:
	@clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h')

clean:
	rm -rf build
