# trainctl operator image:  docker build -t trainctl:latest .
# Used by manifests/operator/deployment.yaml (command: trainctl operator --leader-elect).

# --- build: the same Debian packages as hack/install-deps.sh (BUILD_PACKAGES), plus the Boost
# headers that CMakeLists.txt requires for the operator's HTTP endpoints.
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config libyaml-dev nlohmann-json3-dev libfmt-dev \
      libcli11-dev libgtest-dev libssl-dev libcurl4-openssl-dev libsimdjson-dev libboost-dev \
      libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the configure step and the trainctl target read (test/ is skipped: BUILD_TESTING=OFF).
COPY CMakeLists.txt CMakePresets.json ./
COPY bench/ bench/
COPY src/ src/
RUN cmake --preset release -DBUILD_TESTING=OFF \
 && cmake --build --preset release --target trainctl \
 && install -D -s -m 0755 build/release/trainctl /out/trainctl

# --- runtime: shared libraries the binary links (the header-only ones need nothing).
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcurl4 libyaml-0-2 libfmt9 libssl3 libsqlite3-0 libsimdjson14 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/trainctl"]
CMD ["operator"]

# --- prebuilt: the runtime with a trainctl built on a Debian 12 host (the build stage is
# skipped). The context is a folder holding only that binary:
#   docker build --target prebuilt -f Dockerfile -t trainctl:latest CONTEXT
# hack/cluster/images.sh builds the real node's operator image this way (with buildah).
FROM runtime AS prebuilt
COPY trainctl /usr/local/bin/trainctl

# --- the default image: the runtime with the binary from the build stage.
FROM runtime
COPY --from=build /out/trainctl /usr/local/bin/trainctl
