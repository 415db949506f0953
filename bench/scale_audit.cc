#include "scale_audit.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace trainctl::bench {

uint64_t AuditLogSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return in ? static_cast<uint64_t>(in.tellg()) : 0;
}

AuditCounts CountAudit(const std::string& path, uint64_t offset, const std::string& username) {
  AuditCounts counts;
  std::ifstream in(path);
  in.seekg(static_cast<std::streamoff>(offset));
  std::set<std::string> seen;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json e = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object() || e.value("kind", "") != "Event") continue;
    if (!e.contains("user") || e["user"].value("username", "") != username) continue;
    if (!seen.insert(e.value("auditID", "")).second) continue;
    const nlohmann::json ref = e.value("objectRef", nlohmann::json::object());
    std::string resource = ref.value("resource", "");
    const std::string sub = ref.value("subresource", "");
    if (!sub.empty()) resource += "/" + sub;
    if (resource.empty()) {  // a non-resource URL (/healthz, discovery): its path
      resource = e.value("requestURI", "");
      resource = resource.substr(0, resource.find('?'));
    }
    const std::string verb = e.value("verb", "");
    ++counts.by_request[verb + " " + resource];
    ++counts.total;
    if (e.contains("responseStatus") && e["responseStatus"].value("code", 0) == 409)
      ++counts.conflicts;
    if ((verb == "create" || verb == "update" || verb == "patch" || verb == "delete" ||
         verb == "deletecollection") &&
        ref.value("resource", "") != "leases")
      ++counts.writes;
    if (ref.value("apiGroup", "") == "kubeflow.org" && sub == "status" &&
        (verb == "update" || verb == "patch"))
      ++counts.job_status_writes;
  }
  return counts;
}

}  // namespace trainctl::bench
