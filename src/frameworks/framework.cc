#include "frameworks/framework.h"

#include <algorithm>

#include "frameworks/plugins.h"

namespace trainctl::frameworks {

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

std::string ReplicaName(const api::Job& job, const std::string& type, int index) {
  if (job.kind == api::Kind::kMPIJob && type == "Launcher") return job.name + "-launcher";
  return ReplicaName(job.name, type, index);
}

std::string ReplicaName(const std::string& job_name, const std::string& type, int index) {
  std::string name = job_name + "-" + api::ToLower(type) + "-" + std::to_string(index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

StatusOr<int> DeclaredPort(const api::Job& job, const std::string& type) {
  const api::KindInfo& info = job.info();
  auto spec = job.replica_specs.find(type);
  if (spec == job.replica_specs.end())
    return InvalidError("replica type " + type + " is not in the job");
  std::optional<size_t> index =
      api::DefaultContainerIndex(spec->second.pod_template, info.default_container);
  const nlohmann::json* containers = api::Containers(spec->second.pod_template);
  if (index && containers) {
    const nlohmann::json& c = (*containers)[*index];
    if (c.contains("ports") && c["ports"].is_array()) {
      for (const nlohmann::json& p : c["ports"]) {
        if (p.is_object() && p.value("name", "") == info.port_name &&
            p.contains("containerPort") && p["containerPort"].is_number_integer())
          return p["containerPort"].get<int>();
      }
    }
  }
  return FailedPreconditionError(std::string("port not found: container ") +
                                 info.default_container + " of " + type + " has no port named " +
                                 info.port_name);
}

const Framework& ForKind(api::Kind kind) {
  static const PyTorchFramework kPyTorch;
  static const TensorFlowFramework kTF;
  static const XGBoostFramework kXGBoost;
  static const MpiFramework kMpi;
  static const PaddleFramework kPaddle;
  static const JaxFramework kJax;
  static const MxnetFramework kMxnet;
  switch (kind) {
    case api::Kind::kPyTorchJob: return kPyTorch;
    case api::Kind::kTFJob: return kTF;
    case api::Kind::kXGBoostJob: return kXGBoost;
    case api::Kind::kMPIJob: return kMpi;
    case api::Kind::kPaddleJob: return kPaddle;
    case api::Kind::kJAXJob: return kJax;
    case api::Kind::kMXJob: return kMxnet;
  }
  return kPyTorch;
}

}  // namespace trainctl::frameworks
