// MPIJob as mpi-operator's kubeflow.org/v2beta1 defines it (docs/compatibility.md, "MPIJob
// v2beta1"): the spec fields v1 lacks (runLauncherAsWorker, sshAuthMountPath,
// launcherCreationPolicy, mpiImplementation), their defaults and checks, the hostfile in each
// implementation's format and the launcher's and workers' env. The MPIJob plugin
// (kinds/mpi.cc) calls these for a job whose apiVersion is v2beta1. Pure.
#pragma once

#include <string>
#include <vector>

#include "api/field_reader.h"
#include "api/job.h"
#include "api/replica_env.h"
#include "api/validation.h"

namespace trainctl::kinds {

inline constexpr const char* kMpiOpenMpi = "OpenMPI";
inline constexpr const char* kMpiIntel = "Intel";
inline constexpr const char* kMpiMpich = "MPICH";
inline constexpr const char* kLauncherAtStartup = "AtStartup";
inline constexpr const char* kLauncherWaitForWorkersReady = "WaitForWorkersReady";

// spec.{slotsPerWorker, runLauncherAsWorker, sshAuthMountPath, launcherCreationPolicy,
// mpiImplementation} into the job (type errors with their field paths).
void DecodeMpiV2Spec(api::FieldReader& spec, api::Job* job);
// Writes the defaulted v2beta1 fields over spec.
void EncodeMpiV2Spec(const api::Job& job, nlohmann::json* spec);
// mpi-operator's defaults: cleanPodPolicy None, slotsPerWorker 1, sshAuthMountPath /root/.ssh,
// OpenMPI, AtStartup; the Launcher OnFailure × 1, the Worker Never × 0; backoffLimit 6 (the
// launcher Job's default, which ends its restarts).
void DefaultMpiV2(api::Job* job);
// mpi-operator's checks, judged on the values its defaults would give (it validates after
// defaulting): a Launcher of 1 replica, Workers ≥ 1 when given, restart policies Never or
// OnFailure, a container per template, slotsPerWorker ≥ 0, the enums, worker host names that
// are DNS labels.
void ValidateMpiV2(const api::Job& job, api::ValidationResult* out);

// True when the launcher runs ranks too (spec.runLauncherAsWorker).
bool MpiRunsLauncherAsWorker(const api::Job& job);
// The implementation in effect (OpenMPI when unset).
std::string MpiImplementationOf(const api::Job& job);

// One hostfile line per host in the implementation's format: `<host> slots=<n>` (OpenMPI),
// `<host>:<n>` (Intel, MPICH).
std::string MpiV2HostfileLine(const api::Job& job, const std::string& host, int slots);

// The launcher's env as mpi-operator gives its first container: K_MPI_JOB_ROLE=launcher, the
// implementation's hostfile and SSH variables (the hostfile under `config_dir`), the slots, and
// NVIDIA_VISIBLE_DEVICES/NVIDIA_DRIVER_CAPABILITIES emptied unless the launcher is a worker.
std::vector<api::EnvVar> MpiV2LauncherEnv(const api::Job& job, const std::string& config_dir);
// A worker's env: K_MPI_JOB_ROLE=worker.
std::vector<api::EnvVar> MpiV2WorkerEnv();

}  // namespace trainctl::kinds
