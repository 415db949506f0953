// What a trainer needs to reach the operator's runtime status endpoint, as Kubeflow Trainer
// v2.3's TrainJobStatus plugin gives it to a TrainJob's trainer, and the same for the pods of a
// kubeflow.org/v1 job (pure):
//   AddStatusEndpoint     every container of a pod spec gets, upserted by name,
//                         KUBEFLOW_TRAINER_SERVER_URL (the job's endpoint),
//                         KUBEFLOW_TRAINER_SERVER_CA_CERT and KUBEFLOW_TRAINER_SERVER_TOKEN
//                         (files under /var/run/secrets/kubeflow/trainer) and that read-only
//                         mount; the pod the projected volume kubeflow-trainer-token: a
//                         service-account token whose audience names the job (1 h, renewed by
//                         the kubelet) and ca.crt from the given ConfigMap; its
//                         serviceAccountName "default" when it names none (what the API
//                         server's ServiceAccount admission would set; a token needs one)
//   AddTrainerStatusEnv   a TrainJob's JobSet: that, for every pod of its trainer step (the
//                         replicated jobs labelled trainjob-ancestor-step: trainer), with the CA
//                         from ConfigMap <job>-tls-config (TrainerStatusCaConfigMap, owned by
//                         the TrainJob), as upstream
//   NamespaceStatusCaConfigMap  for v1 jobs, one ConfigMap per namespace,
//                         trainctl-trainer-status-ca, kept by the operator
// Either ConfigMap is made before the pods that mount it: they cannot start without it.
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

inline constexpr const char* kNamespaceStatusCaConfigMap = "trainctl-trainer-status-ca";

void AddStatusEndpoint(nlohmann::json* pod_spec, const std::string& url,
                       const std::string& audience, const std::string& ca_config_map);
void AddTrainerStatusEnv(nlohmann::json* jobset, const std::string& ns, const std::string& name,
                         const std::string& server_url);
nlohmann::json NamespaceStatusCaConfigMap(const std::string& ns, const std::string& ca_pem);
nlohmann::json TrainerStatusCaConfigMap(const std::string& ns, const std::string& name,
                                        const std::string& uid, const std::string& ca_pem);

}  // namespace trainctl::op
