// XGBoostJob: a Master (the tracker) and Workers, for XGBoost and LightGBM.
#include "api/kind_plugin.h"

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
                    .injects_default_port = true}) {}
};

}  // namespace

const api::KindPlugin& XGBoostPlugin() {
  static const XGBoostKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
