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

std::vector<std::string> LastLines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

LogChunk WholeLines(std::string window, size_t from, size_t size) {
  LogChunk chunk;
  chunk.size = size;
  size_t end = window.rfind('\n');
  bool full_window = from + window.size() < size;  // more follows: a line may be cut
  if (end != std::string::npos)
    window.resize(end + 1);
  else if (!full_window && from + window.size() == size && !window.empty())
    window.clear();  // a partial last line: wait for its end
  chunk.next = from + window.size();
  chunk.text = std::move(window);
  return chunk;
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
