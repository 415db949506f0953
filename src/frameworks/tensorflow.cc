// TFJob wiring: TF_CONFIG (normal and enableDynamicWorker sparse form) on the tensorflow
// container of distributed jobs.
#include "frameworks/plugins.h"

namespace trainctl::frameworks {
namespace {

using ordered_json = nlohmann::ordered_json;

const char* const kTypesInOrder[] = {"Chief", "Evaluator", "Master", "PS", "Worker"};

bool IsDistributed(const api::Job& job) {
  int total = 0;
  for (const char* t : kTypesInOrder)
    if (job.HasType(t)) total += job.ReplicasOf(t);
  return total != 1;
}

StatusOr<std::string> Address(const api::Job& job, const std::string& type, int index,
                              const Endpoints& endpoints) {
  StatusOr<int> declared = DeclaredPort(job, type);
  int port = declared.ok() ? *declared : job.info().default_port;
  return endpoints.ServiceHost(type, index) + ":" +
         std::to_string(endpoints.Port(type, index, port));
}

}  // namespace

bool TensorFlowFramework::IsMasterRole(const api::Job& job, const std::string& type,
                                       int index) const {
  if (job.HasType("Chief") || job.HasType("Master")) return type == "Chief" || type == "Master";
  return type == "Worker" && index == 0;
}

StatusOr<ReplicaEnv> TensorFlowFramework::EnvFor(const api::Job& job, const std::string& type,
                                                 int index, const Endpoints& endpoints) const {
  ReplicaEnv out;
  out.default_container_only = true;
  if (!IsDistributed(job)) return out;
  ordered_json config = ordered_json::object();
  ordered_json task = {{"type", api::ToLower(type)}, {"index", index}};
  if (job.enable_dynamic_worker) {
    ordered_json workers = ordered_json::object();
    ordered_json ps = ordered_json::array();
    if (type == "Worker") {
      StatusOr<std::string> self = Address(job, type, index, endpoints);
      if (!self.ok()) return self.status();
      workers[std::to_string(index)] = *self;
      for (int i = 0; i < job.ReplicasOf("PS"); ++i) {
        StatusOr<std::string> a = Address(job, "PS", i, endpoints);
        if (!a.ok()) return a.status();
        ps.push_back(*a);
      }
    } else if (type == "PS") {
      StatusOr<std::string> self = Address(job, type, index, endpoints);
      if (!self.ok()) return self.status();
      ps.push_back(*self);
    }
    config["cluster"] = {{"worker", workers}, {"ps", ps}};
    config["task"] = task;
  } else {
    ordered_json cluster = ordered_json::object();
    // Keys sorted alphabetically by their lower-case name, as upstream's JSON map encoding does.
    for (const char* lower : {"chief", "evaluator", "master", "ps", "worker"}) {
      for (const auto& [t, spec] : job.replica_specs) {
        if (api::ToLower(t) != lower) continue;
        ordered_json hosts = ordered_json::array();
        for (int i = 0; i < job.ReplicasOf(t); ++i) {
          StatusOr<std::string> a = Address(job, t, i, endpoints);
          if (!a.ok()) return a.status();
          hosts.push_back(*a);
        }
        cluster[lower] = hosts;
      }
    }
    config["cluster"] = cluster;
    config["task"] = task;
    config["environment"] = "cloud";
  }
  out.env.push_back(Env("TF_CONFIG", config.dump()));
  return out;
}

}  // namespace trainctl::frameworks
