// PaddleJob: collective mode (Workers only) or parameter-server mode (Master and Workers).
#include "api/kind_plugin.h"

namespace trainctl::kinds {
namespace {

class PaddleKind final : public api::KindPlugin {
 public:
  PaddleKind()
      : KindPlugin({.kind = api::Kind::kPaddleJob,
                    .name = "PaddleJob",
                    .plural = "paddlejobs",
                    .spec_map_field = "paddleReplicaSpecs",
                    .replica_types = {"Master", "Worker"},
                    .default_container = "paddle",
                    .port_name = "master",
                    .default_port = 36543,
                    .default_restart_policy = "OnFailure",
                    .framework_label = "paddle",
                    .controller_name = "paddlejob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true}) {}
};

}  // namespace

const api::KindPlugin& PaddlePlugin() {
  static const PaddleKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
