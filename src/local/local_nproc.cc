#include "local/local_nproc.h"

#include <algorithm>

#include "local/gpus.h"
#include "local/replica_limits.h"

namespace trainctl::local {

StatusOr<std::optional<LocalNproc>> ResolveLocalNproc(const api::Job& job) {
  if (!job.nproc_per_node || *job.nproc_per_node != "auto") return std::optional<LocalNproc>();
  StatusOr<std::vector<GpuAsk>> asks = GpuAsks(job);
  if (!asks.ok()) return asks.status();
  LocalNproc out;
  for (const auto& [type, spec] : job.replica_specs) {
    int replicas = job.ReplicasOf(type);
    int n = 1;
    const std::string& name = type;  // (clang 14 cannot capture a structured binding)
    auto ask = std::find_if(asks->begin(), asks->end(), [&name](const GpuAsk& a) {
      return a.type == name && a.per_replica > 0;
    });
    if (ask != asks->end()) {
      n = ask->per_replica;
    } else {
      StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
      if (!limits.ok()) return limits.status();
      if (limits->cpu_is_limit && limits->cpu_milli)
        n = static_cast<int>(std::max<int64_t>(1, *limits->cpu_milli / 1000));
    }
    out.per_type[type] = n;
    out.world_size += std::max(0, replicas) * n;
  }
  return std::optional<LocalNproc>(std::move(out));
}

void ApplyLocalNproc(const LocalNproc& nproc, const std::string& type,
                     std::vector<api::EnvVar>* env) {
  auto it = nproc.per_type.find(type);
  if (it == nproc.per_type.end()) return;
  for (api::EnvVar& e : *env) {
    if (e.name == "PET_NPROC_PER_NODE") e.value = std::to_string(it->second);
    if (e.name == "WORLD_SIZE") e.value = std::to_string(nproc.world_size);
  }
}

}  // namespace trainctl::local
