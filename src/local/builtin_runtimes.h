// The runtimes trainctl ships (runtimes/ at the repository's root: torch-distributed,
// deepspeed-distributed, mlx-distributed, jax-distributed, xgboost-distributed), compiled into
// the binary by src/ui/embed_assets.cmake so that `trainctl run` and the SDK resolve a TrainJob
// with no cluster and no download.
#pragma once

#include <cstddef>
#include <vector>

namespace trainctl::local::builtin {

struct Asset {
  const char* path;  // "/torch-distributed.yaml"
  const char* content_type;
  const unsigned char* data;
  size_t size;
  const char* etag;
};

const std::vector<Asset>& Assets();

}  // namespace trainctl::local::builtin
