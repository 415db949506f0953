// Which containers of a replica `trainctl run` runs, in order: its init containers, one after
// the other, each to a successful end, then its main container (the kind's default container).
//
// Not run, each said once before the run (RunNotes):
//   - other regular containers (sidecars of a pod: a metrics agent, a proxy);
//   - native sidecars (an init container with `restartPolicy: Always`);
//   - an init container named `init-pytorch`, the operator's wait-for-master container: locally
//     the Master is on this machine and its address needs no lookup.
// Init containers get their own command, args, env, env sources, volume mounts and workingDir,
// as in a pod; not the framework's env (the operator injects it into regular containers only),
// not the replica's devices, threads or cgroup limits.
//
// Pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "api/validation.h"
#include "common/status.h"

namespace trainctl::local {

// The operator's wait-for-master init container's name, skipped locally.
inline constexpr char kWaitForMasterInit[] = "init-pytorch";

struct InitStep {
  api::ContainerAt at;  // the container and its field path (`…initContainers[i]`)
  std::string name;
};

// The init containers of `type` that run locally, in order. An entry that is not an object, or
// has no name, is kInvalid naming its field.
StatusOr<std::vector<InitStep>> InitStepsOf(const api::Job& job, const std::string& type);

// One line per container of the job that is not run locally, with its field path and why.
std::vector<std::string> RunNotes(const api::Job& job);

}  // namespace trainctl::local
