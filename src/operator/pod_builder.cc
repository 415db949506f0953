#include "operator/pod_builder.h"

#include <algorithm>

#include "api/checkpoint_notice.h"
#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "api/kinds.h"
#include "api/restart_policy.h"
#include "api/restart_scope.h"
#include "api/yaml.h"
#include "operator/mpi_children.h"
#include "api/trainer_status.h"
#include "operator/status_env.h"

namespace trainctl::op {

void SetTerminationMessagePolicy(nlohmann::json* pod_spec) {
  if (!pod_spec->contains("containers") || !(*pod_spec)["containers"].is_array()) return;
  for (nlohmann::json& c : (*pod_spec)["containers"])
    if (c.is_object() && !c.contains("terminationMessagePolicy"))
      c["terminationMessagePolicy"] = "FallbackToLogsOnError";
}
namespace {

using nlohmann::json;

std::string JobLabelValue(const std::string& name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), '/', '-');
  return out;
}

}  // namespace

json EnvVarJson(const api::EnvVar& e) {
  json j = {{"name", e.name}};
  if (!e.value_from.is_null())
    j["valueFrom"] = e.value_from;
  else
    j["value"] = e.value;
  return j;
}

namespace {

json PyTorchInitContainer(const api::Job& job, const PodSettings& settings) {
  std::string master = api::ReplicaName(job.name, "Master", 0);
  std::string script =
      "err=1;for i in $(seq " + std::to_string(settings.pytorch_init_max_tries) +
      "); do if nslookup " + master +
      "; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err";
  return {{"name", "init-pytorch"},
          {"image", settings.pytorch_init_image},
          {"imagePullPolicy", "IfNotPresent"},
          {"resources",
           {{"limits", {{"cpu", "100m"}, {"memory", "20Mi"}}},
            {"requests", {{"cpu", "50m"}, {"memory", "10Mi"}}}}},
          {"command", {"sh", "-c", script}}};
}

}  // namespace

StatusOr<json> RenderInitContainerTemplate(const std::string& text, const std::string& source,
                                           const std::string& master_addr, const std::string& image,
                                           int max_tries) {
  std::string out;
  size_t pos = 0;
  int line = 1;
  for (;;) {
    size_t open = text.find("{{", pos);
    for (size_t i = pos; i < std::min(open, text.size()); ++i) line += text[i] == '\n';
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos)
      return InvalidError(source + ":" + std::to_string(line) + ": unclosed \"{{\"");
    std::string action = text.substr(open + 2, close - open - 2);
    size_t b = action.find_first_not_of(" \t"), e = action.find_last_not_of(" \t");
    action = b == std::string::npos ? "" : action.substr(b, e - b + 1);
    out.append(text, pos, open - pos);
    if (action == ".MasterAddr") {
      out += master_addr;
    } else if (action == ".InitContainerImage") {
      out += image;
    } else if (action == ".MaxTries") {
      out += std::to_string(max_tries);
    } else {
      return InvalidError(source + ":" + std::to_string(line) +
                          ": unsupported template action \"{{" + action +
                          "}}\" (supported: .MasterAddr, .InitContainerImage, .MaxTries)");
    }
    pos = close + 2;
  }
  StatusOr<std::vector<json>> docs = api::ParseYamlDocuments(out, source);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1 || !(*docs)[0].is_array() || (*docs)[0].empty())
    return InvalidError(source + ": expected a YAML list of containers");
  for (size_t i = 0; i < (*docs)[0].size(); ++i) {
    const json& c = (*docs)[0][i];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() ||
        c["name"].get<std::string>().empty())
      return InvalidError(source + ": item " + std::to_string(i) +
                          " is not a container with a name");
  }
  return (*docs)[0];
}

json OwnerReference(const api::Job& job) {
  return {{"apiVersion", api::kApiVersion},
          {"kind", job.info().name},
          {"name", job.name},
          {"uid", api::StringAt(job.metadata, "uid")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

json ReplicaSelector(const api::Job& job, const std::string& type, int index) {
  return {{api::kLabelOperatorName, job.info().controller_name},
          {api::kLabelJobName, JobLabelValue(job.name)},
          {api::kLabelReplicaType, api::ToLower(type)},
          {api::kLabelReplicaIndex, std::to_string(index)}};
}

void CopyJobLabelsToPod(const api::Job& job, json* pod_labels) {
  static const char* kCopied[] = {"kueue.x-k8s.io/queue-name"};
  if (!job.metadata.is_object() || !job.metadata.contains("labels") ||
      !job.metadata["labels"].is_object())
    return;
  const json& labels = job.metadata["labels"];
  for (const char* key : kCopied)
    if (labels.contains(key) && labels[key].is_string() && !pod_labels->contains(key))
      (*pod_labels)[key] = labels[key];
}

void AddCheckpointNotice(const api::Job& job, json* pod_spec) {
  if (!api::NoticePolicyOf(job) || !pod_spec->contains("containers") ||
      !(*pod_spec)["containers"].is_array())
    return;
  if (!pod_spec->contains("volumes") || !(*pod_spec)["volumes"].is_array())
    (*pod_spec)["volumes"] = json::array();
  for (const json& v : (*pod_spec)["volumes"])
    if (api::StringAt(v, "name") == api::kNoticeVolumeName) return;
  (*pod_spec)["volumes"].push_back(
      {{"name", api::kNoticeVolumeName},
       {"downwardAPI",
        {{"items", json::array({{{"path", api::kNoticeFileName},
                                 {"fieldRef",
                                  {{"fieldPath", std::string("metadata.annotations['") +
                                                     api::kNoticeAnnotation + "']"}}}}})}}}});
  const std::string file = std::string(api::kNoticeMountPath) + "/" + api::kNoticeFileName;
  for (json& c : (*pod_spec)["containers"]) {
    if (!c.is_object()) continue;
    if (!c.contains("env") || !c["env"].is_array()) c["env"] = json::array();
    c["env"].push_back({{"name", api::kNoticeFileEnv}, {"value", file}});
    if (!c.contains("volumeMounts") || !c["volumeMounts"].is_array())
      c["volumeMounts"] = json::array();
    c["volumeMounts"].push_back({{"name", api::kNoticeVolumeName},
                                 {"mountPath", api::kNoticeMountPath},
                                 {"readOnly", true}});
  }
}

StatusOr<BuiltPod> BuildPod(const api::Job& job, const std::string& type, int index,
                            const api::Endpoints& endpoints, const PodSettings& settings) {
  if (job.info().has_launcher()) return BuildMpiPod(job, type, index, settings);
  auto spec_it = job.replica_specs.find(type);
  if (spec_it == job.replica_specs.end())
    return InvalidError("no replica type \"" + type + "\" in " + job.name);
  const api::ReplicaSpec& spec = spec_it->second;
  const api::KindPlugin& plugin = api::PluginFor(job.kind);
  StatusOr<api::ReplicaEnv> env = plugin.EnvFor(job, type, index, endpoints);
  if (!env.ok()) return env.status();
  api::AppendRestartAttemptEnv(job, &*env);

  BuiltPod out;
  json tmpl = spec.pod_template.is_object() ? spec.pod_template : json::object();
  json metadata = tmpl.value("metadata", json::object());
  json pod_spec = tmpl.value("spec", json::object());

  json labels = metadata.value("labels", json::object());
  json selector = ReplicaSelector(job, type, index);  // kept alive while iterating
  for (auto& [k, v] : selector.items()) labels[k] = v;
  if (plugin.IsMasterRole(job, type, index)) labels[api::kLabelJobRole] = "master";
  api::AddRestartAttemptLabel(job, &labels);
  CopyJobLabelsToPod(job, &labels);

  json pod_metadata = {{"name", api::ReplicaName(job.name, type, index)},
                       {"namespace", job.namespace_},
                       {"labels", labels},
                       {"ownerReferences", json::array({OwnerReference(job)})}};
  if (metadata.contains("annotations")) pod_metadata["annotations"] = metadata["annotations"];
  if (metadata.contains("finalizers")) pod_metadata["finalizers"] = metadata["finalizers"];

  const char* default_container = job.info().default_container;
  if (pod_spec.contains("containers") && pod_spec["containers"].is_array()) {
    for (json& c : pod_spec["containers"]) {
      if (env->default_container_only && api::StringAt(c, "name") != default_container) continue;
      if (!c.contains("env") || !c["env"].is_array()) c["env"] = json::array();
      for (const api::EnvVar& e : env->env) c["env"].push_back(EnvVarJson(e));
    }
    SetTerminationMessagePolicy(&pod_spec);
  }
  AddCheckpointNotice(job, &pod_spec);
  if (!settings.status_server_url.empty()) {
    const api::StatusTarget target = api::StatusTargetOf(job.kind, job.namespace_, job.name);
    AddStatusEndpoint(&pod_spec, settings.status_server_url + api::StatusPath(target),
                      api::StatusAudience(target), kNamespaceStatusCaConfigMap);
  }
  if (plugin.WaitsForMaster(job, type)) {
    if (!pod_spec.contains("initContainers") || !pod_spec["initContainers"].is_array())
      pod_spec["initContainers"] = json::array();
    if (settings.pytorch_init_template.empty()) {
      pod_spec["initContainers"].push_back(PyTorchInitContainer(job, settings));
    } else {
      StatusOr<json> rendered = RenderInitContainerTemplate(
          settings.pytorch_init_template, settings.pytorch_init_template_source,
          api::ReplicaName(job.name, "Master", 0), settings.pytorch_init_image,
          settings.pytorch_init_max_tries);
      if (!rendered.ok()) return rendered.status();
      for (json& c : *rendered) pod_spec["initContainers"].push_back(std::move(c));
    }
  }
  if (pod_spec.contains("restartPolicy")) {
    out.events.push_back({"Warning", "SetPodTemplateRestartPolicy",
                          "Restart policy in pod template will be overwritten by restart policy "
                          "in replica spec"});
  }
  pod_spec["restartPolicy"] = api::RestartPolicyName(api::PodRestartPolicyOf(job, type));

  out.pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", pod_metadata}, {"spec", pod_spec}};
  DecoratePodForGang(job, type, settings.gang, "SetPodTemplateSchedulerName", &out.pod,
                     &out.events);
  return out;
}

StatusOr<json> BuildService(const api::Job& job, const std::string& type, int index) {
  auto spec_it = job.replica_specs.find(type);
  if (spec_it == job.replica_specs.end())
    return InvalidError("no replica type \"" + type + "\" in " + job.name);
  const json* containers = api::Containers(spec_it->second.pod_template);
  const json* container = nullptr;
  if (containers)
    for (const json& c : *containers)
      if (api::StringAt(c, "name") == job.info().default_container) container = &c;
  if (!container)
    return InvalidError("failed to find the port: no container named " +
                        std::string(job.info().default_container));
  json ports = json::array();
  if (container->contains("ports") && (*container)["ports"].is_array())
    for (const json& p : (*container)["ports"])
      ports.push_back(
          {{"name", api::StringAt(p, "name")}, {"port", api::IntAt(p, "containerPort", 0)}});
  json selector = ReplicaSelector(job, type, index);
  json service = {{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata",
                   {{"name", api::ReplicaName(job.name, type, index)},
                    {"namespace", job.namespace_},
                    {"labels", selector},
                    {"ownerReferences", json::array({OwnerReference(job)})}}},
                  {"spec", {{"clusterIP", "None"}, {"selector", selector}}}};
  if (!ports.empty()) service["spec"]["ports"] = ports;
  return service;
}

}  // namespace trainctl::op
