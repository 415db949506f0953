// One replica's launch on this machine, for the runner, its pre-flight and `trainctl run
// --dry-run` alike: the framework's env from the endpoints (an MPIJob Launcher's rewritten for
// this machine), the devices it was given and the thread env of its CPU limit, its command
// resolved on PATH (an MPIJob Worker's idle command instead, or its sshd on its own port in a
// container: local/mpi_local.h), where torchelastic writes its
// error file, and its volumes as local folders (made by the caller: MakeMounts).
//
// I/O: the executable lookup and hostPath checks only. Errors name the field.
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"
#include "api/validation.h"
#include "common/status.h"
#include "local/container_runtime.h"
#include "local/gpus.h"
#include "local/launch.h"
#include "local/local_config.h"

namespace trainctl::local {

struct ReplicaLaunchInputs {
  std::string manifest_dir;
  std::vector<std::string> base_env;  // the caller's
  std::string hostfile_path;          // an MPIJob Launcher's local hostfile
  const GpuAssignment* gpus = nullptr;
  // Given as TORCHELASTIC_ERROR_FILE (where torchrun writes a failure's root cause) unless the
  // template sets it; "" for none.
  std::string error_file;
  // The job's state folder (emptyDir, configMap and secret volumes live under it), and the
  // ConfigMaps, Secrets, volumes and env files given on this machine (null: none).
  std::string job_folder;
  const LocalConfig* config = nullptr;
  // Set: launch this init container (local/containers.h) instead of the main one; it gets
  // neither the framework's env nor the replica's devices, threads or error file.
  const api::ContainerAt* init = nullptr;
  // Set: run the replica's containers with this runtime (local/container_runtime.h); an idle
  // replica (an MPIJob Worker) stays a process. Its containers are labelled with this
  // process's pid. Null: process mode.
  const RuntimeHost* runtime = nullptr;
  // The replica's checkpoint-notice folder (local/notice_files.h), given to its main container
  // as TRAINCTL_NOTICE_FILE and TRAINCTL_NOTICE_DONE_FILE (mounted at the same path in a
  // container); "" when the job has no notice policy.
  std::string notice_folder{};
  // The run's runtime status endpoint (local/status_server.h): its variables, given to the
  // main container unless its template sets them, and the folder of its CA and token (mounted
  // read-only at the same path in a container); empty for a replica that does not report.
  std::vector<std::pair<std::string, std::string>> status_env{};
  std::string status_folder{};
  // The job's SSH key folder (keys, authorized_keys, ssh config), mounted at sshAuthMountPath
  // in the launcher and the workers of a v2beta1 MPIJob run in containers (LocalMpiMode::kSsh).
  std::string ssh_folder{};
};

StatusOr<PreparedLaunch> BuildReplicaLaunch(const api::Job& job, const std::string& type, int index,
                                            const api::Endpoints& endpoints,
                                            const ReplicaLaunchInputs& inputs);

// The launches of (type, index)'s init containers that run locally (local/containers.h; none
// for an idle replica), from the `from`-th on; `total` counts them all.
struct InitLaunch {
  std::string name;
  PreparedLaunch launch;
};
struct InitLaunches {
  std::vector<InitLaunch> launches;
  size_t total = 0;
};
StatusOr<InitLaunches> BuildInitLaunches(const api::Job& job, const std::string& type, int index,
                                         const api::Endpoints& endpoints,
                                         const ReplicaLaunchInputs& inputs, size_t from = 0);

}  // namespace trainctl::local
