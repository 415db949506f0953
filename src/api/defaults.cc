#include "api/defaults.h"

#include "api/json_fields.h"
#include "api/kind_plugin.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

// Moves a key that equals a known type case-insensitively (e.g. "WORKER") to the exact name.
std::string NormalizedKey(const std::string& key, const KindInfo& info) {
  for (const std::string& exact : info.replica_types)
    if (ToLower(key) == ToLower(exact)) return exact;
  return key;
}

void NormalizeTypeNames(Job* job) {
  const KindInfo& info = job->info();
  std::map<std::string, ReplicaSpec> fixed;
  for (auto& [key, spec] : job->replica_specs) {
    std::string exact = NormalizedKey(key, info);
    if (exact != key && job->replica_specs.count(exact)) exact = key;  // both present: keep
    fixed[exact] = std::move(spec);
  }
  job->replica_specs = std::move(fixed);
  if (!job->spec.contains(info.spec_map_field)) return;
  json& map = job->spec[info.spec_map_field];
  if (!map.is_object()) return;
  json renamed = json::object();
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string exact = NormalizedKey(it.key(), info);
    if (exact != it.key() && map.contains(exact)) exact = it.key();
    renamed[exact] = it.value();
  }
  map = std::move(renamed);
}

void AddDefaultPort(ReplicaSpec* spec, const KindInfo& info) {
  json* containers = nullptr;
  if (spec->pod_template.is_object() && spec->pod_template.contains("spec") &&
      spec->pod_template["spec"].is_object() && spec->pod_template["spec"].contains("containers") &&
      spec->pod_template["spec"]["containers"].is_array())
    containers = &spec->pod_template["spec"]["containers"];
  if (!containers || containers->empty()) return;
  size_t index = DefaultContainerIndex(spec->pod_template, info.default_container).value_or(0);
  json& container = (*containers)[index];
  if (!container.is_object()) return;
  json& ports = container["ports"];
  if (ports.is_null()) ports = json::array();
  if (!ports.is_array()) return;
  for (const json& p : ports)
    if (p.is_object() && api::StringAt(p, "name") == info.port_name) return;
  ports.push_back({{"name", info.port_name}, {"containerPort", info.default_port}});
}

}  // namespace

void ApplyDefaults(Job* job) {
  const KindPlugin& plugin = PluginFor(job->kind);
  const KindInfo& info = plugin.info();
  if (info.normalizes_type_case) NormalizeTypeNames(job);
  plugin.Default(job);
  if (!job->run_policy.clean_pod_policy) job->run_policy.clean_pod_policy = "None";
  for (auto& [type, spec] : job->replica_specs) {
    if (!spec.replicas) spec.replicas = 1;
    if (spec.restart_policy.empty()) spec.restart_policy = info.default_restart_policy;
    if (info.injects_default_port) AddDefaultPort(&spec, info);
  }
}

}  // namespace trainctl::api
