// PyTorchJob: Master and Workers wired for torch.distributed and torchrun (incl. elastic
// training with an HPA).
#include <regex>

#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

class PyTorchKind final : public api::KindPlugin {
 public:
  PyTorchKind()
      : KindPlugin({.kind = api::Kind::kPyTorchJob,
                    .name = "PyTorchJob",
                    .plural = "pytorchjobs",
                    .spec_map_field = "pytorchReplicaSpecs",
                    .replica_types = {"Master", "Worker"},
                    .default_container = "pytorch",
                    .port_name = "pytorchjob-port",
                    .default_port = 23456,
                    .default_restart_policy = "OnFailure",
                    .framework_label = "pytorch",
                    .controller_name = "pytorchjob-controller",
                    .normalizes_type_case = true,
                    .injects_default_port = true,
                    .uses_selector = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kMasterOrWorkers,
                                     .elastic_success = true}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
};

void PyTorchKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  job->nproc_per_node = spec.String("nprocPerNode");
  DecodeElasticPolicy(spec, job);
}

void PyTorchKind::EncodeSpec(const api::Job& job, nlohmann::json* spec) const {
  if (job.nproc_per_node) (*spec)["nprocPerNode"] = *job.nproc_per_node;
  EncodeElasticPolicy(job, spec);
}

void PyTorchKind::Default(api::Job* job) const {
  DefaultElasticPolicy(job);
  if (!job->nproc_per_node && !(job->elastic_policy && job->elastic_policy->n_proc_per_node))
    job->nproc_per_node = "auto";
}

void PyTorchKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  api::FieldErrorList* errors = &out->errors;
  ValidateReplicaTemplates(job, errors);
  ValidateTypeNames(job, info().replica_types, errors);
  for (const auto& [type, spec] : job.replica_specs) {
    if (type == "Master") {
      if (!spec.replicas || *spec.replicas != 1)
        errors->push_back(
            api::Forbidden(api::ReplicaSpecPath(job, type) + ".replicas", "must be 1"));
    } else if (spec.replicas && *spec.replicas < 1) {
      errors->push_back(
          api::Forbidden(api::ReplicaSpecPath(job, type) + ".replicas", "must be at least 1"));
    }
  }
  if (job.elastic_policy) {
    if (!job.HasType("Worker"))
      errors->push_back(api::Required(api::ReplicaSpecPath(job, "Worker"),
                                      "must be configured if elastic policy is used"));
    if (job.elastic_policy->n_proc_per_node) {
      out->warnings.push_back(
          "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead");
      if (job.nproc_per_node)
        errors->push_back(api::Forbidden("spec.elasticPolicy.nProcPerNode",
                                         "must not be used with spec.nprocPerNode"));
    }
  }
  if (job.nproc_per_node) {
    static const std::regex kNproc("auto|cpu|gpu|[0-9]+");
    if (!std::regex_match(*job.nproc_per_node, kNproc))
      errors->push_back(api::Invalid("spec.nprocPerNode", *job.nproc_per_node,
                                     "must be auto, cpu, gpu or an integer"));
  }
}

}  // namespace

const api::KindPlugin& PyTorchPlugin() {
  static const PyTorchKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
