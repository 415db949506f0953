// What a replica's CPU and memory limits mean for `trainctl run`: the default container's
// `resources.limits.cpu` / `.memory` (else its requests), and the thread environment a CPU limit
// gives, as torchrun sets OMP_NUM_THREADS for its workers: OMP_NUM_THREADS, MKL_NUM_THREADS and
// OPENBLAS_NUM_THREADS = the whole CPUs of the limit (at least 1). A template value wins.
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/job.h"
#include "common/status.h"

namespace trainctl::local {

struct ReplicaLimits {
  std::optional<int64_t> cpu_milli;     // 1500 for "1.5" or "1500m"
  std::optional<int64_t> memory_bytes;  // 2147483648 for "2Gi"
  std::string cpu_field, memory_field;  // field paths, for messages
  // Whether each came from `limits` (enforced where cgroups can be made) or from `requests`
  // (only the thread env follows a CPU request).
  bool cpu_is_limit = false, memory_is_limit = false;
};

// The limits of `type`'s default container. A value that is not a quantity, or is not > 0, is
// kInvalid naming the field.
StatusOr<ReplicaLimits> LimitsOf(const api::Job& job, const std::string& type);

// The thread environment for `limits` (empty without a CPU limit).
std::vector<std::pair<std::string, std::string>> ThreadEnv(const ReplicaLimits& limits);

// "64Mi", "1.5Gi", "1000" (bytes): a memory amount as a manifest would write it.
std::string FormatMemory(int64_t bytes);

}  // namespace trainctl::local
