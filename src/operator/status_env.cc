#include "operator/status_env.h"

#include "api/json_edit.h"
#include "api/json_fields.h"
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

void AddStatusEndpoint(json* pod_spec, const std::string& url, const std::string& audience,
                       const std::string& ca_config_map) {
  const std::string dir = kTrainerStatusMountPath;
  const json env =
      json::array({{{"name", "KUBEFLOW_TRAINER_SERVER_URL"}, {"value", url}},
                   {{"name", "KUBEFLOW_TRAINER_SERVER_CA_CERT"}, {"value", dir + "/ca.crt"}},
                   {{"name", "KUBEFLOW_TRAINER_SERVER_TOKEN"}, {"value", dir + "/token"}}});
  const json mount = {{"name", kTrainerStatusVolume}, {"mountPath", dir}, {"readOnly", true}};
  const json token = {
      {"audience", audience}, {"expirationSeconds", kTrainerStatusTokenSeconds}, {"path", "token"}};
  const json ca = {{"name", ca_config_map},
                   {"items", json::array({{{"key", "ca.crt"}, {"path", "ca.crt"}}})}};
  const json volume = {
      {"name", kTrainerStatusVolume},
      {"projected",
       {{"sources", json::array({{{"serviceAccountToken", token}}, {{"configMap", ca}}})}}}};
  if (!pod_spec->is_object()) *pod_spec = json::object();
  json& containers = (*pod_spec)["containers"];
  if (!containers.is_array()) return;
  for (json& c : containers) {
    if (!c.is_object()) continue;
    for (const json& e : env) api::UpsertNamed(&c["env"], e);
    api::UpsertNamed(&c["volumeMounts"], mount);
  }
  api::UpsertNamed(&(*pod_spec)["volumes"], volume);
  // A projected token needs a service account by name; the API server's ServiceAccount
  // admission fills in "default" where it runs (a cluster without it refuses the pod).
  if (api::StringAt(*pod_spec, "serviceAccountName").empty())
    (*pod_spec)["serviceAccountName"] = "default";
}

void AddTrainerStatusEnv(json* jobset, const std::string& ns, const std::string& name,
                         const std::string& server_url) {
  json& jobs = api::ObjectAt(*jobset, "spec")["replicatedJobs"];
  if (!jobs.is_array()) return;
  for (json& rj : jobs) {
    if (api::AncestorOf(rj) != api::kAncestorTrainer) continue;
    AddStatusEndpoint(
        &api::ObjectAt(
            api::ObjectAt(api::ObjectAt(api::ObjectAt(rj, "template"), "spec"), "template"),
            "spec"),
        server_url + api::TrainerStatusPath(ns, name), api::TrainerStatusAudience(ns, name),
        TrainerStatusCaConfigMapName(name));
  }
}

json NamespaceStatusCaConfigMap(const std::string& ns, const std::string& ca_pem) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", kNamespaceStatusCaConfigMap},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/managed-by", "trainctl-operator"}}}}},
          {"data", {{"ca.crt", ca_pem}}}};
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
