// PyTorchJob: a Master and Workers (or Workers alone, elastic) wired for torch.distributed and
// torchrun: MASTER_*/WORLD_SIZE/RANK and torchrun's PET_* (incl. the elastic rendezvous).
#include <cctype>
#include <regex>

#include "api/kind_plugin.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

// nprocPerNode as an integer; "auto", "cpu", "gpu" (or unset) count as 1, as upstream.
int NprocAsInt(const api::Job& job) {
  if (!job.nproc_per_node || job.nproc_per_node->empty()) return 1;
  for (char c : *job.nproc_per_node)
    if (!std::isdigit(static_cast<unsigned char>(c))) return 1;
  return std::stoi(*job.nproc_per_node);
}

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
                    .supports_hpa = true,
                    .status_rules = {.shape = api::StatusRules::Shape::kMasterOrWorkers,
                                     .elastic_success = true}}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, nlohmann::json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override;
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
  bool WaitsForMaster(const api::Job& job, const std::string& type) const override {
    return type == "Worker" && job.HasType("Master");
  }
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

bool PyTorchKind::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  if (job.HasType("Master")) return type == "Master";
  return type == "Worker" && index == 0;
}

StatusOr<api::ReplicaEnv> PyTorchKind::EnvFor(const api::Job& job, const std::string& type,
                                              int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  std::vector<api::EnvVar>& env = out.env;
  env.push_back(Env("PYTHONUNBUFFERED", "1"));
  if (job.HasType("Master")) {
    StatusOr<int> declared = api::DeclaredPort(job, "Master");
    if (!declared.ok()) return declared.status();
    std::string port = std::to_string(endpoints.Port("Master", 0, *declared));
    std::string addr = endpoints.Host("Master", 0);
    int rank = type == "Master" ? index : index + 1;
    env.push_back(Env("MASTER_PORT", port));
    env.push_back(Env("PET_MASTER_PORT", port));
    env.push_back(Env("MASTER_ADDR", addr));
    env.push_back(Env("PET_MASTER_ADDR", addr));
    env.push_back(Env("WORLD_SIZE", std::to_string(job.TotalReplicas() * NprocAsInt(job))));
    env.push_back(Env("RANK", std::to_string(rank)));
    env.push_back(Env("PET_NODE_RANK", std::to_string(rank)));
  }
  if (job.nproc_per_node) env.push_back(Env("PET_NPROC_PER_NODE", *job.nproc_per_node));
  if (job.elastic_policy) {
    const api::ElasticPolicy& ep = *job.elastic_policy;
    std::string host = ep.rdzv_host ? *ep.rdzv_host : endpoints.Host("Worker", 0);
    int port = 0;
    if (ep.rdzv_port) {
      port = *ep.rdzv_port;
    } else {
      StatusOr<int> declared = api::DeclaredPort(job, "Worker");
      if (!declared.ok()) return declared.status();
      port = endpoints.Port("Worker", 0, *declared);
    }
    env.push_back(Env("PET_RDZV_ENDPOINT", host + ":" + std::to_string(port)));
    env.push_back(Env("PET_RDZV_BACKEND", ep.rdzv_backend.value_or("c10d")));
    if (ep.min_replicas && ep.max_replicas) {
      env.push_back(Env("PET_NNODES", std::to_string(*ep.min_replicas) + ":" +
                                          std::to_string(*ep.max_replicas)));
    } else {
      env.push_back(Env("PET_NNODES", std::to_string(job.ReplicasOf("Worker"))));
    }
    if (ep.max_restarts) env.push_back(Env("PET_MAX_RESTARTS", std::to_string(*ep.max_restarts)));
    if (ep.n_proc_per_node)
      env.push_back(Env("PET_NPROC_PER_NODE", std::to_string(*ep.n_proc_per_node)));
    if (ep.rdzv_id) env.push_back(Env("PET_RDZV_ID", *ep.rdzv_id));
    if (!ep.rdzv_conf.empty()) {
      std::string conf;
      for (const api::RdzvConf& kv : ep.rdzv_conf)
        conf += (conf.empty() ? "" : ",") + kv.key + "=" + kv.value;
      env.push_back(Env("PET_RDZV_CONF", conf));
    }
    if (ep.standalone) env.push_back(Env("PET_STANDALONE", ""));
  } else {
    env.push_back(Env("PET_NNODES", std::to_string(job.TotalReplicas())));
  }
  return out;
}

}  // namespace

const api::KindPlugin& PyTorchPlugin() {
  static const PyTorchKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
