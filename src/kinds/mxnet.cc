// MXJob (kind removed upstream in v1.9, served here for old manifests): MXNet's
// parameter-server roles (Scheduler, Servers, Workers) and the tuner roles, wired through
// MX_CONFIG and the DMLC_* variables of MXNet's parameter-server kvstore.
#include <map>

#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

class MxnetKind final : public api::KindPlugin {
 public:
  MxnetKind()
      : KindPlugin({.kind = api::Kind::kMXJob,
                    .name = "MXJob",
                    .plural = "mxjobs",
                    .spec_map_field = "mxReplicaSpecs",
                    .replica_types = {"Scheduler", "Server", "Worker", "TunerTracker",
                                      "TunerServer", "Tuner"},
                    .default_container = "mxnet",
                    .port_name = "mxjob-port",
                    .default_port = 9091,
                    .default_restart_policy = "Never",
                    .framework_label = "mxnet",
                    .controller_name = "mxjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Scheduler", "Worker"},
                                     .failed_prefix = "mxjob"}}) {}

  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
};

void MxnetKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  ValidateReplicaTemplates(job, &out->errors);
  ValidateTypeNames(job, info().replica_types, &out->errors);
}

bool MxnetKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Server";
}

StatusOr<api::ReplicaEnv> MxnetKind::EnvFor(const api::Job& job, const std::string& type,
                                            int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();
  std::map<std::string, std::string> sorted_types;  // lower → exact, for sorted keys
  for (const auto& [t, spec] : job.replica_specs) sorted_types[api::ToLower(t)] = t;
  for (const auto& [lower, t] : sorted_types) {
    StatusOr<int> declared = api::DeclaredPort(job, t);
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
    StatusOr<int> declared = api::DeclaredPort(job, "Scheduler");
    int port = declared.ok() ? *declared : job.info().default_port;
    out.env.push_back(
        Env("DMLC_PS_ROOT_PORT", std::to_string(endpoints.Port("Scheduler", 0, port))));
    out.env.push_back(Env("DMLC_PS_ROOT_URI", endpoints.Host("Scheduler", 0)));
  }
  out.env.push_back(Env("DMLC_NUM_SERVER", std::to_string(job.ReplicasOf("Server"))));
  out.env.push_back(Env("DMLC_NUM_WORKER", std::to_string(job.ReplicasOf("Worker"))));
  out.env.push_back(Env("DMLC_ROLE", api::ToLower(type)));
  out.env.push_back(Env("DMLC_USE_KUBERNETES", "1"));
  if (type == "Worker") out.env.push_back(Env("DMLC_WORKER_ID", std::to_string(index)));
  return out;
}

}  // namespace

const api::KindPlugin& MxnetPlugin() {
  static const MxnetKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
