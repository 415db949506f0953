// What `nprocPerNode: auto` means for `trainctl run` (docs/local-runner.md, "Processes per
// replica"). On a cluster each replica is a node of its own, so torchrun's `auto` (one process
// per GPU, else one per CPU of the node) fits; locally every replica shares this one machine, so
// `auto` resolves per replica to: the devices its limits ask for when it asks for GPUs, else the
// whole CPUs of its CPU limit (at least 1) when it has one, else 1. PET_NPROC_PER_NODE carries
// the number and WORLD_SIZE the sum over all replicas. Any other value ("cpu", "gpu", a number)
// is left to torchrun, as on a cluster.
//
// Pure and thread-safe. Errors: kInvalid naming the field for a limit that is not a quantity.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "api/job.h"
#include "api/replica_env.h"
#include "common/status.h"

namespace trainctl::local {

struct LocalNproc {
  std::map<std::string, int> per_type;  // replica type → processes per replica
  int world_size = 0;                   // Σ replicas × processes
};

// The resolution of `auto` for `job`; nullopt when the job does not say `auto`.
StatusOr<std::optional<LocalNproc>> ResolveLocalNproc(const api::Job& job);

// `env` with PET_NPROC_PER_NODE set to `type`'s number and WORLD_SIZE (where present) to the
// world size.
void ApplyLocalNproc(const LocalNproc& nproc, const std::string& type,
                     std::vector<api::EnvVar>* env);

}  // namespace trainctl::local
