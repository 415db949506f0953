#include "common/malloc_policy.h"

#include <malloc.h>

#include <climits>
#include <string_view>

namespace trainctl {

std::optional<size_t> MmapThresholdToSet(const char* mmap_threshold_env, const char* tunables_env) {
  if (mmap_threshold_env != nullptr) return std::nullopt;
  if (tunables_env != nullptr &&
      std::string_view(tunables_env).find("glibc.malloc.mmap_threshold") != std::string_view::npos)
    return std::nullopt;
  return kLargeBufferBytes;
}

bool SetMmapThreshold(size_t bytes) {
  if (bytes > static_cast<size_t>(INT_MAX)) return false;
  return mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes)) == 1;
}

}  // namespace trainctl
