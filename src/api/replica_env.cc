#include "api/replica_env.h"

#include <algorithm>

#include "api/json_fields.h"

namespace trainctl::api {

ServiceEndpoints::ServiceEndpoints(std::string job_name, std::string ns, std::string cluster_domain)
    : job_name_(std::move(job_name)),
      namespace_(std::move(ns)),
      cluster_domain_(std::move(cluster_domain)) {}

std::string ServiceEndpoints::Host(const std::string& type, int index) const {
  return ReplicaName(job_name_, type, index);
}

std::string ServiceEndpoints::ServiceHost(const std::string& type, int index) const {
  std::string host = ReplicaName(job_name_, type, index) + "." + namespace_ + ".svc";
  if (!cluster_domain_.empty()) host += "." + cluster_domain_;
  return host;
}

std::string ReplicaName(const Job& job, const std::string& type, int index) {
  if (job.info().IsLauncher(type)) return job.name + "-launcher";
  return ReplicaName(job.name, type, index);
}

std::string ReplicaName(const std::string& job_name, const std::string& type, int index) {
  std::string name = job_name + "-" + ToLower(type) + "-" + std::to_string(index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

StatusOr<int> DeclaredPort(const Job& job, const std::string& type) {
  const KindInfo& info = job.info();
  auto spec = job.replica_specs.find(type);
  if (spec == job.replica_specs.end())
    return InvalidError("replica type " + type + " is not in the job");
  std::optional<size_t> index =
      DefaultContainerIndex(spec->second.pod_template, info.default_container);
  const nlohmann::json* containers = Containers(spec->second.pod_template);
  if (index && containers) {
    const nlohmann::json& c = (*containers)[*index];
    if (c.contains("ports") && c["ports"].is_array()) {
      for (const nlohmann::json& p : c["ports"]) {
        if (p.is_object() && api::StringAt(p, "name") == info.port_name &&
            p.contains("containerPort") && p["containerPort"].is_number_integer())
          return p["containerPort"].get<int>();
      }
    }
  }
  return FailedPreconditionError(std::string("port not found: container ") +
                                 info.default_container + " of " + type + " has no port named " +
                                 info.port_name);
}

}  // namespace trainctl::api
