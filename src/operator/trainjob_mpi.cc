#include "operator/trainjob_mpi.h"

#include "api/json_edit.h"
#include "api/json_fields.h"
#include "kube/base64.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op {
namespace {

using api::UpsertNamed;
using nlohmann::json;

constexpr const char* kMpiLauncherJob = "launcher";
constexpr const char* kMpiSshVolume = "mpi-ssh-auth";
constexpr const char* kMpiHostfileVolume = "mpi-hostfile";

json OwnedMetadata(const api::Job& job, const std::string& name, const std::string& uid) {
  return {{"name", name},
          {"namespace", job.namespace_},
          {"ownerReferences", json::array({TrainJobOwnerReference(job.name, uid)})}};
}

bool ListsHosts(const api::Job& job, const std::string& name) {
  return name == api::kTrainerContainer ||
         (job.run_launcher_as_worker.value_or(false) && name == kMpiLauncherJob);
}

}  // namespace

std::string TrainJobMpiSecretName(const std::string& job) {
  return job + api::kTrainJobMpiSecretSuffix;
}

std::string TrainJobMpiHostfileName(const std::string& job) {
  return job + api::kTrainJobMpiHostfileSuffix;
}

std::string TrainJobMpiHostfile(const api::Job& job, const std::string& subdomain) {
  const std::string domain = subdomain.empty() ? job.name : subdomain;
  const std::string slots = std::to_string(job.slots_per_worker.value_or(1));
  std::string out;
  for (const std::string& name : job.group_order) {
    if (!ListsHosts(job, name)) continue;
    for (int i = 0; i < job.ReplicasOf(name); ++i)
      out += job.name + "-" + name + "-0-" + std::to_string(i) + "." + domain + " slots=" + slots +
             "\n";
  }
  return out;
}

json TrainJobMpiSecret(const api::Job& job, const std::string& trainjob_uid,
                       const SshKeyPair& keys) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", OwnedMetadata(job, TrainJobMpiSecretName(job.name), trainjob_uid)},
          {"type", "kubernetes.io/ssh-auth"},
          {"immutable", true},
          {"data",
           {{"ssh-privatekey", kube::Base64Encode(keys.private_pem)},
            {"ssh-publickey", kube::Base64Encode(keys.authorized_key)}}}};
}

json TrainJobMpiHostfileConfigMap(const api::Job& job, const std::string& trainjob_uid,
                                  const std::string& subdomain) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", OwnedMetadata(job, TrainJobMpiHostfileName(job.name), trainjob_uid)},
          {"data", {{"hostfile", TrainJobMpiHostfile(job, subdomain)}}}};
}

void AddTrainJobMpiVolumes(const api::Job& job, const std::string& name, json* pod_template) {
  if (!job.IsMpiTrainJob() || (name != api::kTrainerContainer && name != kMpiLauncherJob)) return;
  if (!pod_template->is_object()) *pod_template = json::object();
  json& spec = (*pod_template)["spec"];
  if (!spec.is_object()) spec = json::object();
  const bool launcher = name == kMpiLauncherJob;
  UpsertNamed(
      &spec["volumes"],
      {{"name", kMpiSshVolume},
       {"secret",
        {{"secretName", TrainJobMpiSecretName(job.name)},
         {"defaultMode", 0640},
         {"items", json::array({{{"key", "ssh-privatekey"}, {"path", "id_rsa"}},
                                {{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}},
                                {{"key", "ssh-publickey"}, {"path", "authorized_keys"}}})}}}});
  if (launcher)
    UpsertNamed(&spec["volumes"],
                {{"name", kMpiHostfileVolume},
                 {"configMap",
                  {{"name", TrainJobMpiHostfileName(job.name)},
                   {"items",
                    json::array({{{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}}})}}}});
  if (!spec.contains("containers") || !spec["containers"].is_array()) return;
  for (json& c : spec["containers"]) {
    if (!c.is_object() || api::StringAt(c, "name") != api::kTrainerContainer) continue;
    UpsertNamed(&c["volumeMounts"],
                {{"name", kMpiSshVolume}, {"mountPath", job.ssh_auth_mount_path}});
    if (launcher)
      UpsertNamed(&c["volumeMounts"],
                  {{"name", kMpiHostfileVolume}, {"mountPath", api::kTrainJobMpiHostfileDir}});
  }
}

}  // namespace trainctl::op
