#include "operator/hpa.h"

#include "api/json_fields.h"
#include "operator/cache_types.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

using nlohmann::json;

std::optional<json> DesiredHpa(const api::Job& job) {
  if (!job.info().supports_hpa || !job.spec.is_object()) return std::nullopt;
  const json& elastic = job.spec.value("elasticPolicy", json());
  if (!elastic.is_object() || !elastic.contains("metrics") || elastic["metrics"].is_null())
    return std::nullopt;
  json spec = {{"scaleTargetRef",
                {{"apiVersion", api::kApiVersion}, {"kind", job.info().name}, {"name", job.name}}},
               {"metrics", elastic["metrics"]}};
  if (job.elastic_policy && job.elastic_policy->min_replicas)
    spec["minReplicas"] = *job.elastic_policy->min_replicas;
  if (job.elastic_policy && job.elastic_policy->max_replicas)
    spec["maxReplicas"] = *job.elastic_policy->max_replicas;
  return json{{"apiVersion", "autoscaling/v2"},
              {"kind", "HorizontalPodAutoscaler"},
              {"metadata",
               {{"name", job.name},
                {"namespace", job.namespace_},
                {"ownerReferences", json::array({OwnerReference(job)})}}},
              {"spec", spec}};
}

HpaAction DecideHpa(const api::Job& job, const std::optional<json>& desired, const json& existing) {
  bool exists = existing.is_object();
  std::string uid = job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : "";
  if (exists && ControllerOwnerUid(existing) != uid) return HpaAction::kNone;
  bool suspended = job.run_policy.suspend.value_or(false);
  if (!desired || suspended) return exists ? HpaAction::kDelete : HpaAction::kNone;
  if (!exists) return HpaAction::kCreate;
  const json& have = existing.value("spec", json::object());
  const json& want = (*desired)["spec"];
  for (const char* field : {"scaleTargetRef", "minReplicas", "maxReplicas", "metrics"})
    if (have.value(field, json()) != want.value(field, json())) return HpaAction::kUpdate;
  return HpaAction::kNone;
}

}  // namespace trainctl::op
