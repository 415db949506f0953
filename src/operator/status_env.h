// What a TrainJob's trainer needs to reach the operator's runtime status endpoint, as Kubeflow
// Trainer v2.3's TrainJobStatus plugin gives it (pure):
//   AddTrainerStatusEnv   every container of the JobSet's trainer step (the replicated jobs
//                         labelled trainjob-ancestor-step: trainer) gets, upserted by name,
//                         KUBEFLOW_TRAINER_SERVER_URL (<server_url> + the TrainJob's status
//                         path), KUBEFLOW_TRAINER_SERVER_CA_CERT and
//                         KUBEFLOW_TRAINER_SERVER_TOKEN (files under
//                         /var/run/secrets/kubeflow/trainer) and that read-only mount; its pod
//                         the projected volume kubeflow-trainer-token: a service-account token
//                         whose audience names the TrainJob (1 h, renewed by the kubelet) and
//                         ca.crt from the ConfigMap below
//   TrainerStatusCaConfigMap   ConfigMap <job>-tls-config holding the CA (key ca.crt) that
//                         signed the endpoint's certificate, owned by the TrainJob; made
//                         before the JobSet, since its pods cannot start without it
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainctl::op {

inline constexpr const char* kTrainerStatusVolume = "kubeflow-trainer-token";
inline constexpr const char* kTrainerStatusMountPath = "/var/run/secrets/kubeflow/trainer";
inline constexpr int kTrainerStatusTokenSeconds = 3600;

// "https://<service>.<namespace>.svc:<port>": where pods reach the operator's endpoint.
std::string TrainerStatusServerUrl(const std::string& service, const std::string& ns, int port);
std::string TrainerStatusCaConfigMapName(const std::string& trainjob);

void AddTrainerStatusEnv(nlohmann::json* jobset, const std::string& ns, const std::string& name,
                         const std::string& server_url);
nlohmann::json TrainerStatusCaConfigMap(const std::string& ns, const std::string& name,
                                        const std::string& uid, const std::string& ca_pem);

}  // namespace trainctl::op
