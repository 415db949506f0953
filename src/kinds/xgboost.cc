// XGBoostJob: a Master (the tracker) and Workers, for XGBoost and LightGBM.
#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

class XGBoostKind final : public api::KindPlugin {
 public:
  XGBoostKind()
      : KindPlugin({.kind = api::Kind::kXGBoostJob,
                    .name = "XGBoostJob",
                    .plural = "xgboostjobs",
                    .spec_map_field = "xgbReplicaSpecs",
                    .replica_types = {"Master", "Worker"},
                    .default_container = "xgboost",
                    .port_name = "xgboostjob-port",
                    .default_port = 9999,
                    .default_restart_policy = "Never",
                    .framework_label = "xgboost",
                    .controller_name = "xgboostjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .uses_selector = false,
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Master"},
                                     .running_on_finish = true}}) {}

  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void XGBoostKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  api::FieldErrorList* errors = &out->errors;
  ValidateReplicaTemplates(job, errors);
  ValidateTypeNames(job, info().replica_types, errors);
  auto master = job.replica_specs.find("Master");
  if (master == job.replica_specs.end()) {
    errors->push_back(api::Required(api::ReplicaSpecPath(job, "Master"), "must be present"));
  } else if (!master->second.replicas || *master->second.replicas != 1) {
    errors->push_back(
        api::Forbidden(api::ReplicaSpecPath(job, "Master") + ".replicas", "must be 1"));
  }
}

}  // namespace

const api::KindPlugin& XGBoostPlugin() {
  static const XGBoostKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
