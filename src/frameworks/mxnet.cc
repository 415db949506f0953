// MXJob wiring (kind removed upstream in v1.9, served here for old manifests): MX_CONFIG and
// the DMLC_* variables of MXNet's parameter-server kvstore.
#include "frameworks/plugins.h"

namespace trainctl::frameworks {

bool MxnetFramework::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Server";
}

StatusOr<ReplicaEnv> MxnetFramework::EnvFor(const api::Job& job, const std::string& type,
                                            int index, const Endpoints& endpoints) const {
  ReplicaEnv out;
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();
  std::map<std::string, std::string> sorted_types;  // lower → exact, for sorted keys
  for (const auto& [t, spec] : job.replica_specs) sorted_types[api::ToLower(t)] = t;
  for (const auto& [lower, t] : sorted_types) {
    StatusOr<int> declared = DeclaredPort(job, t);
    int port = declared.ok() ? *declared : job.info().default_port;
    nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
    for (int i = 0; i < job.ReplicasOf(t); ++i)
      hosts.push_back({{"url", endpoints.Host(t, i)}, {"port", endpoints.Port(t, i, port)}});
    cluster[lower] = hosts;
    const nlohmann::json& tmpl = job.replica_specs.at(t).pod_template;
    std::string label;
    if (tmpl.is_object() && tmpl.contains("metadata") && tmpl["metadata"].is_object() &&
        tmpl["metadata"].contains("annotations") && tmpl["metadata"]["annotations"].is_object())
      label = tmpl["metadata"]["annotations"].value("tuner-server-key", "");
    labels[lower] = label;
  }
  nlohmann::ordered_json config = {{"cluster", cluster},
                                   {"labels", labels},
                                   {"task", {{"type", api::ToLower(type)}, {"index", index}}}};
  out.env.push_back(Env("MX_CONFIG", config.dump()));
  if (job.HasType("Scheduler")) {
    StatusOr<int> declared = DeclaredPort(job, "Scheduler");
    int port = declared.ok() ? *declared : job.info().default_port;
    out.env.push_back(Env("DMLC_PS_ROOT_PORT", std::to_string(endpoints.Port("Scheduler", 0, port))));
    out.env.push_back(Env("DMLC_PS_ROOT_URI", endpoints.Host("Scheduler", 0)));
  }
  out.env.push_back(Env("DMLC_NUM_SERVER", std::to_string(job.ReplicasOf("Server"))));
  out.env.push_back(Env("DMLC_NUM_WORKER", std::to_string(job.ReplicasOf("Worker"))));
  out.env.push_back(Env("DMLC_ROLE", api::ToLower(type)));
  out.env.push_back(Env("DMLC_USE_KUBERNETES", "1"));
  if (type == "Worker") out.env.push_back(Env("DMLC_WORKER_ID", std::to_string(index)));
  return out;
}

}  // namespace trainctl::frameworks
