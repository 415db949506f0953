// MPIJob's children on Kubernetes, built as the upstream v1 operator builds them (docs/
// compatibility.md, MPIJob): the launcher pod `<job>-launcher` (kubectl-delivery init
// container, the OMPI_MCA_*/I_MPI_* env and both volumes on its first container, its own
// service account), worker pods `<job>-worker-<i>` (`sleep 365d` when they have no command,
// kubexec.sh mounted), the ConfigMap `<job>-config` (hostfile, kubexec.sh, discover_hosts.sh of
// the Running workers), and the launcher's ServiceAccount, Role (pods get/list/watch, pods/exec
// on the workers only) and RoleBinding. Every object carries the job's controller reference.
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

inline constexpr const char* kMpiConfigDir = "/etc/mpi";
inline constexpr const char* kMpiKubectlDir = "/opt/kube";
inline constexpr const char* kMpiConfigVolume = "mpi-job-config";
inline constexpr const char* kMpiKubectlVolume = "mpi-job-kubectl";

// What both MPIJob versions' children share (operator/mpi_v2_children.h too): the metadata of
// a child that is not a pod (name, namespace, label app=<job>, the controller reference), the
// pod restartPolicy of a replica type (ExitCode → Never; "" without that type), and appending
// to a list field, made when missing or not a list.
nlohmann::json MpiChildMetadata(const api::Job& job, const std::string& name);
std::string MpiPodRestartPolicy(const api::Job& job, const std::string& type);
void AppendToArray(nlohmann::json& object, const char* key, nlohmann::json item);

// "<job>-launcher" for the Launcher, "<job>-<type>-<index>" otherwise (every kind).
std::string PodName(const api::Job& job, const std::string& type, int index);

// A launcher container limit names a GPU resource (key ends in ".com/gpu" or contains "gpu").
bool IsGpuLauncher(const api::Job& job);

// The template's serviceAccountName, else "<job>-launcher".
std::string MpiLauncherServiceAccountName(const api::Job& job);

// The shell script the launcher's mpirun uses as its rsh agent.
std::string MpiKubexec(const api::Job& job);

// `running_workers`: names of the worker pods now Running (for discover_hosts.sh).
nlohmann::json MpiConfigMap(const api::Job& job, const std::vector<std::string>& running_workers);
nlohmann::json MpiLauncherServiceAccount(const api::Job& job);
nlohmann::json MpiLauncherRole(const api::Job& job);
nlohmann::json MpiLauncherRoleBinding(const api::Job& job);

// The Launcher or a Worker pod. kInvalid for another replica type.
StatusOr<BuiltPod> BuildMpiPod(const api::Job& job, const std::string& type, int index,
                               const PodSettings& settings);

}  // namespace trainctl::op
