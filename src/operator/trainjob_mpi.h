// What a TrainJob on an MPI runtime (mlPolicy.mpi: deepspeed-distributed, mlx-distributed)
// adds to its JobSet and beside it, as Kubeflow Trainer v2.3.0's MPI plugin does (OpenMPI):
//
//   Secret <job>-mpi-ssh-auth       type kubernetes.io/ssh-auth: ssh-privatekey (ECDSA P-521,
//                                   PEM) and ssh-publickey (authorized_keys form); immutable,
//                                   made once (common/ssh_keys.h)
//   ConfigMap <job>-mpi-hostfile    `hostfile`: one "<pod host> slots=<n>" line per pod of the
//                                   `node` job, and of the launcher when it runs as a node, in
//                                   the runtime's job order; a pod host is
//                                   "<job>-<replicated job>-0-<i>.<subdomain>" (the JobSet's
//                                   network subdomain, else the job's name)
//   pods of `node` and `launcher`   volume mpi-ssh-auth (the Secret: id_rsa, id_rsa.pub,
//                                   authorized_keys, mode 0640) mounted at sshAuthMountPath in
//                                   their `node` container; the launcher's also volume
//                                   mpi-hostfile (the ConfigMap, mode 0444) at /etc/mpi
//
// Both objects carry the TrainJob's controller reference. The launcher's OMPI_* env is the
// TrainJob plugin's (kinds/trainjob.cc). Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/job.h"
#include "common/ssh_keys.h"

namespace trainctl::op {

std::string TrainJobMpiSecretName(const std::string& job);
std::string TrainJobMpiHostfileName(const std::string& job);

// `subdomain`: the JobSet's spec.network.subdomain, "" for the job's name.
std::string TrainJobMpiHostfile(const api::Job& job, const std::string& subdomain);

nlohmann::json TrainJobMpiSecret(const api::Job& job, const std::string& trainjob_uid,
                                 const SshKeyPair& keys);
nlohmann::json TrainJobMpiHostfileConfigMap(const api::Job& job, const std::string& trainjob_uid,
                                            const std::string& subdomain);

// The volumes and mounts above on the pod template of replicated job `name` (no change for
// jobs other than `node` and `launcher`, or a job that is not an MPI TrainJob).
void AddTrainJobMpiVolumes(const api::Job& job, const std::string& name,
                           nlohmann::json* pod_template);

}  // namespace trainctl::op
