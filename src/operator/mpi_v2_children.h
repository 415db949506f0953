// The children of an MPIJob of kubeflow.org/v2beta1 on Kubernetes, built as mpi-operator
// v0.8.0 builds them (docs/compatibility.md, "MPIJob v2beta1"):
//
//   <job>-ssh      Secret of type kubernetes.io/ssh-auth: the key pair (common/ssh_keys.h)
//   <job>-config   ConfigMap: `hostfile` (one line per host in the implementation's format,
//                  the launcher first when it runs as a worker) and `discover_hosts.sh` (the
//                  Running workers, sorted)
//   <job>          headless Service over the job's pods (publishNotReadyAddresses when the
//                  launcher runs as a worker)
//   <job>-worker-i pods: hostname and subdomain (so `<pod>.<job>.<ns>.svc` resolves), the
//                  job's search domain, `/usr/sbin/sshd -De` when they have no command,
//                  K_MPI_JOB_ROLE=worker, the keys at sshAuthMountPath
//   <job>-launcher batch/v1 Job (ttl, activeDeadlineSeconds, backoffLimit and suspend from
//                  runPolicy; labelled job-name and operator-name besides upstream's app, for
//                  the operator's informer) whose pod has the implementation's env, /etc/mpi
//                  and the keys
//
// Labels as mpi-operator's: training.kubeflow.org/operator-name=mpi-operator, job-name,
// job-role launcher|worker, the workers' replica-index (from 1 when the launcher is index 0 as
// a worker). Every object carries the job's controller reference. Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/ssh_keys.h"
#include "common/status.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

inline constexpr const char* kMpiV2OperatorName = "mpi-operator";

// "<pod>.<job>.<namespace>.svc", then ".<cluster_domain>" when one is given.
std::string MpiV2HostName(const api::Job& job, const std::string& pod,
                          const std::string& cluster_domain);

nlohmann::json MpiV2SshSecret(const api::Job& job, const SshKeyPair& keys);
// `running_workers`: names of the worker pods now Running (for discover_hosts.sh).
nlohmann::json MpiV2ConfigMap(const api::Job& job, const std::string& cluster_domain,
                              const std::vector<std::string>& running_workers);
nlohmann::json MpiV2Service(const api::Job& job);

// Worker `index`. kInvalid when the job has no Worker template with a container.
StatusOr<BuiltPod> BuildMpiV2Worker(const api::Job& job, int index);

struct BuiltJob {
  nlohmann::json job;                 // batch/v1 Job
  std::vector<engine::Event> events;  // Warning SetPodTemplateRestartPolicy
};
// The launcher's batch Job. kInvalid when the job has no Launcher template with a container.
StatusOr<BuiltJob> BuildMpiV2Launcher(const api::Job& job);

}  // namespace trainctl::op
