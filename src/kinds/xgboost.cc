// XGBoostJob: a Master (the tracker) and Workers, for XGBoost and LightGBM:
// MASTER_*/WORLD_SIZE/RANK for the tracker, WORKER_* for LightGBM.
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
                    .status_rules = {.shape = api::StatusRules::Shape::kLeadType,
                                     .lead_types = {"Master"},
                                     .running_on_finish = true}}) {}

  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
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

bool XGBoostKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Master";
}

StatusOr<api::ReplicaEnv> XGBoostKind::EnvFor(const api::Job& job, const std::string& type,
                                              int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  StatusOr<int> master_port = api::DeclaredPort(job, "Master");
  if (!master_port.ok()) return master_port.status();
  int total = 0;
  for (const auto& [t, spec] : job.replica_specs) total += spec.replicas.value_or(0);
  int rank = type == "Master" ? index : index + job.ReplicasOf("Master");
  out.env.push_back(Env("MASTER_PORT", std::to_string(endpoints.Port("Master", 0, *master_port))));
  out.env.push_back(Env("MASTER_ADDR", endpoints.Host("Master", 0)));
  out.env.push_back(Env("WORLD_SIZE", std::to_string(total)));
  out.env.push_back(Env("RANK", std::to_string(rank)));
  out.env.push_back(Env("PYTHONUNBUFFERED", "1"));
  if (total > 1 && job.HasType("Worker")) {
    StatusOr<int> worker_port = api::DeclaredPort(job, "Worker");
    if (!worker_port.ok()) return worker_port.status();
    out.env.push_back(
        Env("WORKER_PORT", std::to_string(endpoints.Port("Worker", 0, *worker_port))));
    std::string addrs;
    for (int i = 0; i < total - 1; ++i)
      addrs += (i ? "," : "") + endpoints.Host("Worker", i);
    out.env.push_back(Env("WORKER_ADDRS", addrs));
  }
  return out;
}

}  // namespace

const api::KindPlugin& XGBoostPlugin() {
  static const XGBoostKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
