#include "jobs/job_source.h"

#include "api/metrics_policy.h"
#include "api/replica_env.h"
#include "jobs/why.h"

namespace trainctl::jobs {

using nlohmann::json;

json DetailDocument(const JobDetail& detail, const std::string& source) {
  json doc = {{"source", source},
              {"job", detail.job},
              {"why", JobWhy(detail.job)},
              {"replicas", detail.replicas},
              {"events", detail.events},
              {"failure", detail.failure},
              {"workspaces", detail.workspaces},
              {"warnings", detail.warnings}};
  for (const auto& [key, value] : detail.location.items())
    if (!doc.contains(key)) doc[key] = value;
  return doc;
}

StatusOr<std::string> MetricsReplica(const json& job) {
  TRAINCTL_ASSIGN_OR_RETURN(api::Job decoded, api::DecodeJob(job));
  std::optional<api::MetricsPolicy> policy = api::MetricsPolicyOf(decoded);
  if (!policy)
    return NotFoundError("metrics are off for " + decoded.name + " (annotation " +
                         api::kMetricsAnnotation + ")");
  std::string name = api::ReplicaName(decoded, policy->type, policy->index);
  return name.substr(decoded.name.size() + 1);
}

}  // namespace trainctl::jobs
