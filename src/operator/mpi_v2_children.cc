#include "operator/mpi_v2_children.h"

#include <algorithm>

#include "api/kinds.h"
#include "api/replica_env.h"
#include "kinds/mpi_v2.h"
#include "kube/base64.h"
#include "operator/mpi_children.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

constexpr const char* kConfigDir = "/etc/mpi";
constexpr const char* kConfigVolume = "mpi-job-config";
constexpr const char* kSshVolume = "ssh-auth";

json Labels(const api::Job& job, const char* role) {
  return {{api::kLabelOperatorName, kMpiV2OperatorName},
          {api::kLabelJobName, job.name},
          {api::kLabelJobRole, role}};
}

// The replica's template with the operator's labels added, or kInvalid without a container.
StatusOr<json> Template(const api::Job& job, const std::string& type, const char* role) {
  auto it = job.replica_specs.find(type);
  json tmpl = it == job.replica_specs.end() ? json() : it->second.pod_template;
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object() ||
      !tmpl["spec"].contains("containers") || !tmpl["spec"]["containers"].is_array() ||
      tmpl["spec"]["containers"].empty())
    return InvalidError(api::ReplicaSpecPath(job, type) +
                        ".template.spec.containers: Required value: must define at least one "
                        "container");
  json& metadata = tmpl["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  if (!metadata.contains("labels") || !metadata["labels"].is_object())
    metadata["labels"] = json::object();
  const json labels = Labels(job, role);  // alive while items() iterates it
  for (const auto& [key, value] : labels.items()) metadata["labels"][key] = value;
  return tmpl;
}

// Hostname and subdomain (the job's Service), and the DNS policy host networking needs.
void SetHostName(const api::Job& job, const std::string& name, json* spec) {
  (*spec)["hostname"] = name;
  (*spec)["subdomain"] = job.name;
  if (spec->value("hostNetwork", false)) (*spec)["dnsPolicy"] = "ClusterFirstWithHostNet";
}

// The keys from the Secret at sshAuthMountPath (mode 0600 under /root/.ssh, as sshd wants it).
void MountSsh(const api::Job& job, json* spec) {
  json secret = {{"secretName", job.name + "-ssh"},
                 {"items", json::array({{{"key", "ssh-privatekey"}, {"path", "id_rsa"}},
                                        {{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}},
                                        {{"key", "ssh-publickey"}, {"path", "authorized_keys"}}})}};
  if (job.ssh_auth_mount_path == "/root/.ssh") secret["defaultMode"] = 0600;
  AppendToArray(*spec, "volumes", {{"name", kSshVolume}, {"secret", secret}});
  AppendToArray((*spec)["containers"][0], "volumeMounts",
                {{"name", kSshVolume}, {"mountPath", job.ssh_auth_mount_path}});
}

}  // namespace

std::string MpiV2HostName(const api::Job& job, const std::string& pod,
                          const std::string& cluster_domain) {
  std::string host = pod + "." + job.name + "." + job.namespace_ + ".svc";
  return cluster_domain.empty() ? host : host + "." + cluster_domain;
}

json MpiV2SshSecret(const api::Job& job, const SshKeyPair& keys) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", MpiChildMetadata(job, job.name + "-ssh")},
          {"type", "kubernetes.io/ssh-auth"},
          {"data",
           {{"ssh-privatekey", kube::Base64Encode(keys.private_pem)},
            {"ssh-publickey", kube::Base64Encode(keys.authorized_key)}}}};
}

json MpiV2ConfigMap(const api::Job& job, const std::string& cluster_domain,
                    const std::vector<std::string>& running_workers) {
  int slots = job.slots_per_worker.value_or(1);
  bool launcher_works = kinds::MpiRunsLauncherAsWorker(job);
  std::string hostfile;
  std::string discover = "#!/bin/sh\n";
  if (launcher_works) {
    std::string host = MpiV2HostName(job, job.name + "-launcher", cluster_domain);
    hostfile += kinds::MpiV2HostfileLine(job, host, slots);
    discover += "echo " + host + "\n";
  }
  for (int i = 0; i < job.ReplicasOf("Worker"); ++i)
    hostfile += kinds::MpiV2HostfileLine(
        job, MpiV2HostName(job, job.name + "-worker-" + std::to_string(i), cluster_domain), slots);
  std::vector<std::string> running = running_workers;
  std::sort(running.begin(), running.end());
  for (const std::string& pod : running)
    discover += "echo " + MpiV2HostName(job, pod, cluster_domain) + "\n";
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", MpiChildMetadata(job, job.name + "-config")},
          {"data", {{"hostfile", hostfile}, {"discover_hosts.sh", discover}}}};
}

json MpiV2Service(const api::Job& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", MpiChildMetadata(job, job.name)},
          {"spec",
           {{"clusterIP", "None"},
            {"selector",
             {{api::kLabelOperatorName, kMpiV2OperatorName}, {api::kLabelJobName, job.name}}},
            {"publishNotReadyAddresses", kinds::MpiRunsLauncherAsWorker(job)}}}};
}

StatusOr<BuiltPod> BuildMpiV2Worker(const api::Job& job, int index) {
  StatusOr<json> tmpl = Template(job, "Worker", "worker");
  if (!tmpl.ok()) return tmpl.status();
  std::string name = job.name + "-worker-" + std::to_string(index);
  json& labels = (*tmpl)["metadata"]["labels"];
  labels[api::kLabelReplicaIndex] =
      std::to_string(kinds::MpiRunsLauncherAsWorker(job) ? index + 1 : index);
  json& spec = (*tmpl)["spec"];
  SetHostName(job, name, &spec);
  // Intel MPI and MPICH reach the launcher by its host name through the search path.
  std::string search = job.name + "." + job.namespace_ + ".svc.cluster.local";
  if (!spec.contains("dnsConfig") || !spec["dnsConfig"].is_object())
    spec["dnsConfig"] = json::object();
  AppendToArray(spec["dnsConfig"], "searches", search);
  spec["restartPolicy"] = MpiPodRestartPolicy(job, "Worker");
  json& first = spec["containers"][0];
  bool has_command =
      first.contains("command") && first["command"].is_array() && !first["command"].empty();
  bool has_args = first.contains("args") && first["args"].is_array() && !first["args"].empty();
  if (!has_command && !has_args) first["command"] = json::array({"/usr/sbin/sshd", "-De"});
  for (const api::EnvVar& e : kinds::MpiV2WorkerEnv()) AppendToArray(first, "env", EnvVarJson(e));
  MountSsh(job, &spec);
  SetTerminationMessagePolicy(&spec);
  json metadata = {{"name", name},
                   {"namespace", job.namespace_},
                   {"labels", labels},
                   {"ownerReferences", json::array({OwnerReference(job)})}};
  if ((*tmpl)["metadata"].contains("annotations"))
    metadata["annotations"] = (*tmpl)["metadata"]["annotations"];
  BuiltPod out;
  out.pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}};
  return out;
}

StatusOr<BuiltJob> BuildMpiV2Launcher(const api::Job& job) {
  StatusOr<json> tmpl = Template(job, "Launcher", "launcher");
  if (!tmpl.ok()) return tmpl.status();
  BuiltJob out;
  json& labels = (*tmpl)["metadata"]["labels"];
  if (kinds::MpiRunsLauncherAsWorker(job)) labels[api::kLabelReplicaIndex] = "0";
  json& spec = (*tmpl)["spec"];
  SetHostName(job, job.name + "-launcher", &spec);
  json& first = spec["containers"][0];
  for (const api::EnvVar& e : kinds::MpiV2LauncherEnv(job, kConfigDir))
    AppendToArray(first, "env", EnvVarJson(e));
  MountSsh(job, &spec);
  if (spec.contains("restartPolicy") && spec["restartPolicy"] != "")
    out.events.push_back({"Warning", "SetPodTemplateRestartPolicy",
                          "Restart policy in pod template overridden by restart policy in replica "
                          "spec"});
  spec["restartPolicy"] = MpiPodRestartPolicy(job, "Launcher");
  AppendToArray(
      spec, "volumes",
      {{"name", kConfigVolume},
       {"configMap",
        {{"name", job.name + "-config"},
         {"items",
          json::array(
              {{{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}},
               {{"key", "discover_hosts.sh"}, {"path", "discover_hosts.sh"}, {"mode", 0555}}})}}}});
  AppendToArray(first, "volumeMounts", {{"name", kConfigVolume}, {"mountPath", kConfigDir}});
  SetTerminationMessagePolicy(&spec);
  json pod_metadata = {{"labels", labels}};
  if ((*tmpl)["metadata"].contains("annotations"))
    pod_metadata["annotations"] = (*tmpl)["metadata"]["annotations"];
  json job_spec = {{"template", {{"metadata", pod_metadata}, {"spec", spec}}}};
  const api::RunPolicy& rp = job.run_policy;
  if (rp.ttl_seconds_after_finished)
    job_spec["ttlSecondsAfterFinished"] = *rp.ttl_seconds_after_finished;
  if (rp.active_deadline_seconds) job_spec["activeDeadlineSeconds"] = *rp.active_deadline_seconds;
  if (rp.backoff_limit) job_spec["backoffLimit"] = *rp.backoff_limit;
  if (rp.suspend.value_or(false)) job_spec["suspend"] = true;
  json metadata = MpiChildMetadata(job, job.name + "-launcher");
  // The operator's informer of launcher Jobs selects them by the job-name label, as its pods'.
  metadata["labels"][api::kLabelJobName] = job.name;
  metadata["labels"][api::kLabelOperatorName] = kMpiV2OperatorName;
  out.job = {
      {"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", metadata}, {"spec", job_spec}};
  return out;
}

}  // namespace trainctl::op
