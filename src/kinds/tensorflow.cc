// TFJob: Chief/Master, PS, Workers and Evaluator wired through TF_CONFIG.
#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

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
                    .uses_selector = false,
                    .status_rules = {.shape = api::StatusRules::Shape::kChiefOrWorkers,
                                     .type_order = {"Chief", "Evaluator", "Master", "PS",
                                                    "Worker"}}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
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

}  // namespace

const api::KindPlugin& TensorFlowPlugin() {
  static const TensorFlowKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
