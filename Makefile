# trainctl — the two commands a new user needs:
#   make run    install what is missing, build, run the example PyTorch DDP job locally
#   make test   install what is missing, build, run every test
PRESET ?= release
BUILD_DIR := build/$(PRESET)
TRAINCTL := $(BUILD_DIR)/trainctl
export PATH := $(CURDIR)/.venv/bin:$(PATH)

.PHONY: all deps build run test unit e2e integration bench cluster-up cluster-down format clean

all: build

deps:
	@hack/install-deps.sh

build: deps
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

run: build
	$(TRAINCTL) run examples/pytorch/pytorchjob.yaml --replace

test: build
	@ctest --preset $(PRESET)

unit: build
	@ctest --preset $(PRESET) -L unit

e2e: build
	@ctest --preset $(PRESET) -L e2e

integration: build
	@ctest --preset $(PRESET) -L integration

bench: build
	@bench/local_overhead.py --trainctl $(TRAINCTL)

cluster-up:
	@hack/cluster/up.sh

cluster-down:
	@hack/cluster/down.sh

format:
	@clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h')

clean:
	rm -rf build
