// `trainctl run --dry-run`: what each replica of a job would get on this machine (command,
// working directory, the env beyond the caller's with where each variable comes from, devices,
// port) after the same pre-flight as a run, without starting or writing anything.
//
// Ports are free ports picked now; a run picks its own. Devices are those a run started now would
// get (other running jobs' claims are read, nothing is claimed). I/O: reads the state folder,
// looks up executables, binds port 0 to find free ports.
#pragma once

#include <nlohmann/json.hpp>

#include "api/job.h"
#include "common/status.h"
#include "local/runner.h"

namespace trainctl::local {

// {"kind", "namespace", "name", "inheritedEnv": <count of the caller's variables>,
//  "gpuInventory": {"source", "nvidia.com/gpu": n, "amd.com/gpu": n} (only when asked for),
//  "replicas": [{"name", "type", "index", "command": [...], "workingDir", "port",
//                "env": [{"name", "value", "source": "trainctl"|"resources"|"template"|"runner"}],
//                "gpus": [{"resource", "index", "id", "name"}]}]}
// Errors are those a run would give before starting (kInvalid, kAlreadyExists).
StatusOr<nlohmann::json> PlanDryRun(const api::Job& job, const RunOptions& options);

}  // namespace trainctl::local
