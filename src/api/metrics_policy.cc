#include "api/metrics_policy.h"

#include <algorithm>
#include <charconv>

#include "api/annotations.h"
#include "api/kind_plugin.h"

namespace trainctl::api {
namespace {

// The job's types in the kind's order.
std::vector<std::string> TypesInOrder(const Job& job) {
  std::vector<std::string> types;
  for (const std::string& t : job.ReplicaTypes())
    if (job.HasType(t)) types.push_back(t);
  for (const auto& [t, spec] : job.replica_specs)
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  return types;
}

std::optional<MetricsPolicy> DefaultReplica(const Job& job) {
  std::vector<std::string> types = TypesInOrder(job);
  if (types.empty()) return std::nullopt;
  if (job.info().has_launcher() && job.HasType(job.info().launcher_type))
    return MetricsPolicy{job.info().launcher_type, 0};
  for (const std::string& t : types)
    if (PluginFor(job.kind).IsMasterRole(job, t, 0)) return MetricsPolicy{t, 0};
  return MetricsPolicy{types[0], 0};
}

}  // namespace

std::optional<MetricsPolicy> MetricsPolicyOf(const Job& job, FieldErrorList* errors) {
  if (const nlohmann::json* mode = AnnotationOf(job, kMetricsAnnotation)) {
    std::string m = mode->is_string() ? mode->get<std::string>() : std::string();
    if (m == "off") return std::nullopt;
    if (m != "auto") {
      if (errors)
        errors->push_back(NotSupported(AnnotationPath(kMetricsAnnotation), *mode, {"auto", "off"}));
      return std::nullopt;
    }
  }
  const nlohmann::json* replica = AnnotationOf(job, kMetricsReplicaAnnotation);
  if (!replica) return DefaultReplica(job);
  std::string text = replica->is_string() ? replica->get<std::string>() : std::string();
  size_t dash = text.rfind('-');
  std::optional<MetricsPolicy> chosen;
  if (dash != std::string::npos && dash > 0) {
    std::string type_text = text.substr(0, dash), index_text = text.substr(dash + 1);
    int index = -1;
    auto [ptr, ec] =
        std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    bool whole =
        !index_text.empty() && ec == std::errc() && ptr == index_text.data() + index_text.size();
    for (const std::string& t : TypesInOrder(job))
      if (ToLower(t) == type_text && whole && index >= 0 && index < job.ReplicasOf(t))
        chosen = MetricsPolicy{t, index};
  }
  if (!chosen && errors) {
    std::string names;
    for (const std::string& t : TypesInOrder(job))
      names +=
          (names.empty() ? "" : ", ") + ToLower(t) + "-0…" + std::to_string(job.ReplicasOf(t) - 1);
    errors->push_back(Invalid(AnnotationPath(kMetricsReplicaAnnotation), *replica,
                              "expected a replica of this job as <type>-<index> (" + names + ")"));
  }
  return chosen;
}

}  // namespace trainctl::api
