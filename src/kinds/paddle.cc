// PaddleJob: collective mode (Workers only) or parameter-server mode (Master and Workers),
// wired through PADDLE_*.
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
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
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

bool PaddleKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return type == "Master";
}

StatusOr<api::ReplicaEnv> PaddleKind::EnvFor(const api::Job& job, const std::string& type,
                                             int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  std::vector<api::EnvVar>& env = out.env;
  env.push_back(Env("PYTHONUNBUFFERED", "1"));
  env.push_back(Env("PADDLE_JOB_ID", job.name));
  env.push_back(Env("PADDLE_NNODES", std::to_string(job.TotalReplicas())));
  bool ps_mode = job.HasType("Master");
  std::string master_type = ps_mode ? "Master" : "Worker";
  StatusOr<int> declared = api::DeclaredPort(job, master_type);
  int port = endpoints.Port(master_type, 0, declared.ok() ? *declared : job.info().default_port);
  if (type == master_type && index == 0) {
    env.push_back({"POD_IP_DUMMY", "", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}});
    env.push_back(Env("PADDLE_MASTER", "$(POD_IP_DUMMY):" + std::to_string(port)));
  } else {
    env.push_back(
        Env("PADDLE_MASTER", endpoints.Host(master_type, 0) + ":" + std::to_string(port)));
  }
  if (ps_mode) {
    if (type == "Master") env.push_back(Env("PADDLE_SERVER_NUM", "1"));
    if (type == "Worker") env.push_back(Env("PADDLE_TRAINER_NUM", "1"));
  }
  return out;
}

}  // namespace

const api::KindPlugin& PaddlePlugin() {
  static const PaddleKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
