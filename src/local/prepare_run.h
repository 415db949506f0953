// The one entry through which a caller (`trainctl run`, the SDK's local backend through it)
// turns a loaded job and the run's flags into what the runner needs: where its relative paths
// resolve, the state root, the caller's env, the ConfigMaps/Secrets/volumes/env files given on
// this machine, this machine's GPUs (read only for a job that asks for some), the container
// runtime (chosen and probed), the cgroup host for limits, and every note to say once before
// the run (the runtime's choices, what is not run here, MPI's wiring, limits not enforced).
// Then, for a run that goes ahead, the PersistentVolumeClaims the file declared are made as
// folders (MakeClaimFolders), as applying the file would create them on a cluster.
//
// I/O: reads the flags' files and folders, the GPU inventory and the runtime's `info`;
// MakeClaimFolders makes folders. Errors are kInvalid (exit 2) naming the flag or the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/manifest.h"
#include "common/status.h"
#include "local/local_config.h"
#include "local/runner.h"

namespace trainctl::local {

struct RunFlags {
  std::string manifest;          // the file's path; "-" for stdin
  std::string source;            // how errors name it ("<stdin>" for stdin)
  std::string workdir;           // --workdir; "" : the manifest's folder (the cwd for stdin)
  std::string cwd;               // the caller's working directory
  std::string state_root;        // resolved by the caller (--state-dir, $TRAINCTL_STATE_DIR)
  std::vector<std::string> env;  // the caller's environment
  std::string supervisor;        // the program that supervises replicas ("" : none)
  bool replace = false;
  double grace_seconds = 5;
  double drain_seconds = 10;
  bool gpu_share = false;
  std::optional<std::string> runtime;  // --runtime
  LocalConfigFlags config;
};

struct PreparedRun {
  RunOptions options;              // on_setup, on_finished, launcher: left to the caller
  std::vector<std::string> notes;  // each printed once as "note: …"
};

StatusOr<PreparedRun> PrepareRun(const api::Job& job, const RunFlags& flags);

// Makes each claim's folder under the state root; the notes say where (made, or kept from
// earlier jobs) and how to remove it. kIo naming the claim and the folder on failure.
StatusOr<std::vector<std::string>> MakeClaimFolders(const std::string& state_root,
                                                    const std::vector<api::ClaimDocument>& claims);

}  // namespace trainctl::local
