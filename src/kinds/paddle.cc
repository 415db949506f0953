// PaddleJob: collective mode (Workers only) or parameter-server mode (Master and Workers).
#include "api/kind_plugin.h"
#include "kinds/common.h"

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
                    .injects_default_port = true,
                    .uses_selector = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kMasterOrWorkers}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void PaddleKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  DecodeElasticPolicy(spec, job);
}

void PaddleKind::EncodeSpec(const api::Job& job, nlohmann::json* spec) const {
  EncodeElasticPolicy(job, spec);
}

void PaddleKind::Default(api::Job* job) const { DefaultElasticPolicy(job); }

void PaddleKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  // Upstream's PaddleJob webhook quotes the container name in its message.
  ValidateReplicaTemplates(job, std::string("'") + info().default_container + "'", &out->errors);
  ValidateTypeNames(job, info().replica_types, &out->errors);
}

}  // namespace

const api::KindPlugin& PaddlePlugin() {
  static const PaddleKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
