// TFJob: Chief/Master, PS, Workers and Evaluator wired through TF_CONFIG (normal and
// enableDynamicWorker sparse form) on the tensorflow container of distributed jobs.
#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
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
                              const api::Endpoints& endpoints) {
  StatusOr<int> declared = api::DeclaredPort(job, type);
  int port = declared.ok() ? *declared : job.info().default_port;
  return endpoints.ServiceHost(type, index) + ":" +
         std::to_string(endpoints.Port(type, index, port));
}

class TensorFlowKind final : public api::KindPlugin {
 public:
  TensorFlowKind()
      : KindPlugin({.kind = api::Kind::kTFJob,
                    .name = "TFJob",
                    .plural = "tfjobs",
                    .spec_map_field = "tfReplicaSpecs",
                    .replica_types = {"PS", "Worker", "Chief", "Master", "Evaluator"},
                    .default_container = "tensorflow",
                    .port_name = "tfjob-port",
                    .default_port = 2222,
                    .default_restart_policy = "Never",
                    .framework_label = "tensorflow",
                    .controller_name = "tfjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kChiefOrWorkers,
                                     .type_order = {"Chief", "Evaluator", "Master", "PS",
                                                    "Worker"}}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
};

void TensorFlowKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  job->success_policy = spec.String("successPolicy").value_or("");
  job->enable_dynamic_worker = spec.Bool("enableDynamicWorker").value_or(false);
}

void TensorFlowKind::EncodeSpec(const api::Job& job, nlohmann::json* spec) const {
  if (spec->contains("successPolicy")) (*spec)["successPolicy"] = job.success_policy;
}

void TensorFlowKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  api::FieldErrorList* errors = &out->errors;
  ValidateReplicaTemplates(job, errors);
  if (job.HasType("Chief") && job.HasType("Master"))
    errors->push_back(api::Forbidden(api::ReplicaSpecsPath(job),
                                     "must not have more than 1 Chief or Master role"));
  if (!job.success_policy.empty() && job.success_policy != "AllWorkers")
    errors->push_back(
        api::NotSupported("spec.successPolicy", job.success_policy, {"", "AllWorkers"}));
}

bool TensorFlowKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  if (job.HasType("Chief") || job.HasType("Master")) return type == "Chief" || type == "Master";
  return type == "Worker" && index == 0;
}

StatusOr<api::ReplicaEnv> TensorFlowKind::EnvFor(const api::Job& job, const std::string& type,
                                                 int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
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

}  // namespace

const api::KindPlugin& TensorFlowPlugin() {
  static const TensorFlowKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
