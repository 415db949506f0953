#include "operator/mpi_children.h"

#include "api/kinds.h"
#include "api/replica_env.h"
#include "api/restart_policy.h"
#include "api/restart_scope.h"
#include "kinds/mpi.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

json Template(const api::Job& job, const std::string& type) {
  auto it = job.replica_specs.find(type);
  if (it == job.replica_specs.end() || !it->second.pod_template.is_object()) return json::object();
  return it->second.pod_template;
}

json ConfigVolume(const api::Job& job, bool launcher) {
  json items = json::array({{{"key", "kubexec.sh"}, {"path", "kubexec.sh"}, {"mode", 0555}}});
  if (launcher) {
    items.push_back({{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}});
    items.push_back({{"key", "discover_hosts.sh"}, {"path", "discover_hosts.sh"}, {"mode", 0555}});
  }
  return {{"name", kMpiConfigVolume},
          {"configMap", {{"name", job.name + "-config"}, {"items", items}}}};
}

}  // namespace

json MpiChildMetadata(const api::Job& job, const std::string& name) {
  return {{"name", name},
          {"namespace", job.namespace_},
          {"labels", {{"app", job.name}}},
          {"ownerReferences", json::array({OwnerReference(job)})}};
}

std::string MpiPodRestartPolicy(const api::Job& job, const std::string& type) {
  auto it = job.replica_specs.find(type);
  if (it == job.replica_specs.end()) return "";
  return api::RestartPolicyName(api::PodRestartPolicyOf(job, type));
}

void AppendToArray(json& object, const char* key, json item) {
  if (!object.contains(key) || !object[key].is_array()) object[key] = json::array();
  object[key].push_back(std::move(item));
}

std::string PodName(const api::Job& job, const std::string& type, int index) {
  return api::ReplicaName(job, type, index);
}

bool IsGpuLauncher(const api::Job& job) {
  // Template() returns a copy: keep it alive while `containers` points into it.
  const json launcher = Template(job, "Launcher");
  const json* containers = api::Containers(launcher);
  if (!containers) return false;
  for (const json& c : *containers) {
    if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
    const json limits = c["resources"].value("limits", json::object());
    if (!limits.is_object()) continue;
    for (auto it = limits.begin(); it != limits.end(); ++it) {
      const std::string& key = it.key();
      if (key.find("gpu") != std::string::npos) return true;  // covers "*.com/gpu"
    }
  }
  return false;
}

std::string MpiLauncherServiceAccountName(const api::Job& job) {
  json spec = Template(job, "Launcher").value("spec", json::object());
  if (spec.is_object() && spec.contains("serviceAccountName") &&
      spec["serviceAccountName"].is_string() &&
      !spec["serviceAccountName"].get<std::string>().empty())
    return spec["serviceAccountName"].get<std::string>();
  return job.name + "-launcher";
}

std::string MpiKubexec(const api::Job& job) {
  std::string script = "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n" + std::string(kMpiKubectlDir) +
                       "/kubectl exec ${POD_NAME}";
  if (!job.main_container.empty()) script += " --container " + job.main_container;
  return script + " -- /bin/sh -c \"$*\"";
}

json MpiConfigMap(const api::Job& job, const std::vector<std::string>& running_workers) {
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  bool gpu = IsGpuLauncher(job);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", MpiChildMetadata(job, job.name + "-config")},
          {"data",
           {{"hostfile", kinds::MpiHostfile(job, endpoints, gpu)},
            {"kubexec.sh", MpiKubexec(job)},
            {"discover_hosts.sh", kinds::MpiDiscoverHosts(job, running_workers, gpu)}}}};
}

json MpiLauncherServiceAccount(const api::Job& job) {
  return {{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", MpiChildMetadata(job, MpiLauncherServiceAccountName(job))}};
}

json MpiLauncherRole(const api::Job& job) {
  json workers = json::array();
  for (int i = 0; i < job.ReplicasOf("Worker"); ++i) workers.push_back(PodName(job, "Worker", i));
  json rules = json::array(
      {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get", "list", "watch"}}}});
  if (!workers.empty())
    rules.push_back({{"apiGroups", {""}},
                     {"resources", {"pods/exec"}},
                     {"verbs", {"create"}},
                     {"resourceNames", workers}});
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", MpiChildMetadata(job, job.name + "-launcher")},
          {"rules", rules}};
}

json MpiLauncherRoleBinding(const api::Job& job) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", MpiChildMetadata(job, job.name + "-launcher")},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"},
            {"kind", "Role"},
            {"name", job.name + "-launcher"}}},
          {"subjects", json::array({{{"kind", "ServiceAccount"},
                                     {"name", MpiLauncherServiceAccountName(job)},
                                     {"namespace", job.namespace_}}})}};
}

StatusOr<BuiltPod> BuildMpiPod(const api::Job& job, const std::string& type, int index,
                               const PodSettings& settings) {
  if (type != "Launcher" && type != "Worker")
    return InvalidError("MPIJob has no replica type \"" + type + "\" (Launcher, Worker)");
  bool launcher = type == "Launcher";
  BuiltPod out;
  json tmpl = Template(job, type);
  json metadata = tmpl.value("metadata", json::object());
  json spec = tmpl.value("spec", json::object());
  if (!spec.is_object()) spec = json::object();

  json labels = metadata.is_object() ? metadata.value("labels", json::object()) : json::object();
  if (!labels.is_object()) labels = json::object();
  json selector = ReplicaSelector(job, type, index);
  for (auto it = selector.begin(); it != selector.end(); ++it) labels[it.key()] = it.value();
  if (launcher) {
    labels.erase(api::kLabelReplicaIndex);  // upstream's launcher has no index label
    labels[api::kLabelJobRole] = "master";
  }
  api::AddRestartAttemptLabel(job, &labels);
  CopyJobLabelsToPod(job, &labels);
  json pod_metadata = {{"name", PodName(job, type, index)},
                       {"namespace", job.namespace_},
                       {"labels", labels},
                       {"ownerReferences", json::array({OwnerReference(job)})}};
  for (const char* key : {"annotations", "finalizers"})
    if (metadata.is_object() && metadata.contains(key)) pod_metadata[key] = metadata[key];

  if (!spec.contains("containers") || !spec["containers"].is_array() || spec["containers"].empty())
    return InvalidError("MPIJob " + job.name + ": the " + type + " template has no containers");
  json& first = spec["containers"][0];
  for (const api::EnvVar& e : api::RestartAttemptEnv(job))
    AppendToArray(first, "env", EnvVarJson(e));
  AddCheckpointNotice(job, &spec);
  if (launcher) {
    bool gpu = IsGpuLauncher(job);
    for (const api::EnvVar& e : kinds::MpiLauncherEnv(job, kMpiConfigDir, gpu))
      AppendToArray(first, "env", EnvVarJson(e));
    AppendToArray(first, "volumeMounts",
                  {{"name", kMpiKubectlVolume}, {"mountPath", kMpiKubectlDir}});
    AppendToArray(first, "volumeMounts",
                  {{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigDir}});
    json resources = {{"cpu", "100m"}, {"memory", "512Mi"}, {"ephemeral-storage", "5Gi"}};
    AppendToArray(spec, "initContainers",
                  {{"name", "kubectl-delivery"},
                   {"image", settings.mpi_kubectl_delivery_image},
                   {"imagePullPolicy", "IfNotPresent"},
                   {"env", json::array({{{"name", "TARGET_DIR"}, {"value", kMpiKubectlDir}},
                                        {{"name", "NAMESPACE"}, {"value", job.namespace_}}})},
                   {"volumeMounts",
                    json::array({{{"name", kMpiKubectlVolume}, {"mountPath", kMpiKubectlDir}},
                                 {{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigDir}}})},
                   {"resources", {{"limits", resources}, {"requests", resources}}}});
    AppendToArray(spec, "volumes", {{"name", kMpiKubectlVolume}, {"emptyDir", json::object()}});
    AppendToArray(spec, "volumes", ConfigVolume(job, true));
    if (!spec.contains("serviceAccountName") || !spec["serviceAccountName"].is_string() ||
        spec["serviceAccountName"].get<std::string>().empty())
      spec["serviceAccountName"] = MpiLauncherServiceAccountName(job);
  } else {
    if (!first.contains("command") || !first["command"].is_array() || first["command"].empty()) {
      first["command"] = json::array({"sleep"});
      first["args"] = json::array({"365d"});
    }
    AppendToArray(first, "volumeMounts",
                  {{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigDir}});
    AppendToArray(spec, "volumes", ConfigVolume(job, false));
  }
  if (spec.contains("restartPolicy"))
    out.events.push_back({"Warning", "SettedPodTemplateRestartPolicy",
                          "Restart policy in pod template will be overwritten by restart policy "
                          "in replica spec"});
  spec["restartPolicy"] = MpiPodRestartPolicy(job, type);
  SetTerminationMessagePolicy(&spec);
  out.pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", pod_metadata}, {"spec", spec}};
  DecoratePodForGang(job, type, settings.gang, "SettedPodTemplateSchedulerName", &out.pod,
                     &out.events);
  return out;
}

}  // namespace trainctl::op
