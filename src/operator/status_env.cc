#include "operator/trainjob_status_env.h"

#include "api/json_edit.h"
#include "api/trainer_status.h"
#include "api/trainer_v2_types.h"
#include "api/training_runtime.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op {

using nlohmann::json;

std::string TrainerStatusServerUrl(const std::string& service, const std::string& ns, int port) {
  return "https://" + service + "." + ns + ".svc:" + std::to_string(port);
}

std::string TrainerStatusCaConfigMapName(const std::string& trainjob) {
  return trainjob + "-tls-config";
}

void AddTrainerStatusEnv(json* jobset, const std::string& ns, const std::string& name,
                         const std::string& server_url) {
  const std::string dir = kTrainerStatusMountPath;
  const json env =
      json::array({{{"name", "KUBEFLOW_TRAINER_SERVER_URL"},
                    {"value", server_url + api::TrainerStatusPath(ns, name)}},
                   {{"name", "KUBEFLOW_TRAINER_SERVER_CA_CERT"}, {"value", dir + "/ca.crt"}},
                   {{"name", "KUBEFLOW_TRAINER_SERVER_TOKEN"}, {"value", dir + "/token"}}});
  const json mount = {{"name", kTrainerStatusVolume}, {"mountPath", dir}, {"readOnly", true}};
  const json token = {{"audience", api::TrainerStatusAudience(ns, name)},
                      {"expirationSeconds", kTrainerStatusTokenSeconds},
                      {"path", "token"}};
  const json ca = {{"name", TrainerStatusCaConfigMapName(name)},
                   {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}};
  const json volume = {
      {"name", kTrainerStatusVolume},
      {"projected",
       {{"sources", json::array({{{"serviceAccountToken", token}}, {{"configMap", ca}}})}}}};
  json& jobs = api::ObjectAt(*jobset, "spec")["replicatedJobs"];
  if (!jobs.is_array()) return;
  for (json& rj : jobs) {
    if (api::AncestorOf(rj) != api::kAncestorTrainer) continue;
    json& pod_spec = api::ObjectAt(
        api::ObjectAt(api::ObjectAt(api::ObjectAt(rj, "template"), "spec"), "template"), "spec");
    json& containers = pod_spec["containers"];
    if (!containers.is_array()) continue;
    for (json& c : containers) {
      if (!c.is_object()) continue;
      for (const json& e : env) api::UpsertNamed(&c["env"], e);
      api::UpsertNamed(&c["volumeMounts"], mount);
    }
    api::UpsertNamed(&pod_spec["volumes"], volume);
  }
}

json TrainerStatusCaConfigMap(const std::string& ns, const std::string& name,
                              const std::string& uid, const std::string& ca_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", TrainerStatusCaConfigMapName(name)},
            {"namespace", ns},
            {"ownerReferences", json::array({TrainJobOwnerReference(name, uid)})}}},
          {"data", {{"ca.crt", ca_pem}}}};
}

}  // namespace trainctl::op
