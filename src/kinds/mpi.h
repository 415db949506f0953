// What the MPIJob substrates (operator/mpi_children.h, local/mpi_local.h) need beyond the kind's
// plugin: the hostfile the launcher reads, discover_hosts.sh and the launcher's env, as the
// upstream v1 MPIJob controller writes them (docs/compatibility.md, MPIJob). Pure.
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"

namespace trainctl::kinds {

// The hostfile the launcher reads: `<worker host> slots=<n>` per worker (after the launcher
// itself when it has GPUs).
std::string MpiHostfile(const api::Job& job, const api::Endpoints& endpoints, bool gpu_launcher);
// discover_hosts.sh for the given running workers.
std::string MpiDiscoverHosts(const api::Job& job, const std::vector<std::string>& running_workers,
                             bool gpu_launcher);
// Env for the launcher's first container (the OMPI_MCA_* and I_MPI_* wiring).
std::vector<api::EnvVar> MpiLauncherEnv(const api::Job& job, const std::string& config_dir,
                                        bool gpu_launcher);

}  // namespace trainctl::kinds
