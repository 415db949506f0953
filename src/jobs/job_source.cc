#include "jobs/job_source.h"

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

}  // namespace trainctl::jobs
