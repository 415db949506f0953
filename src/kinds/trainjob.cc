// TrainJob (Kubeflow Trainer v2, trainer.kubeflow.org/v1alpha1): its spec decoded with field
// paths, checked as upstream's CRD rules check it, and, once resolved against its runtime
// (api/trainjob_resolve.h), each trainer node's env from the runtime's mlPolicy:
//   torch    PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT
//   jax      JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS
//   xgboost  DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER
// into the trainer step's `node` container only, and only when the TrainJob has a trainer
// section (as upstream). The groups other than the trainer's get none.
//   mpi      the trainer step is mpirun's launcher: OMPI_MCA_orte_default_hostfile
//            (/etc/mpi/hostfile), OMPI_MCA_orte_keep_fqdn_hostnames, OMPI_MCA_orte_set_default_
//            slots (the slots per host), OMPI_MCA_plm_rsh_args, trainer section or not; the
//            `node` job gets none (its sshd only serves the launcher)
#include <regex>
#include <set>

#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "api/trainjob_resolve.h"
#include "kinds/common.h"

namespace trainctl::kinds {
namespace {

using nlohmann::json;

std::optional<std::vector<std::string>> Strings(api::FieldReader& r, const std::string& field) {
  const json* a = r.Array(field);
  if (!a) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < a->size(); ++i) {
    if (!(*a)[i].is_string()) {
      r.errors()->push_back(api::Invalid(r.Path(field) + "[" + std::to_string(i) + "]",
                                         api::TypeName((*a)[i]), "must be of type string"));
      continue;
    }
    out.push_back((*a)[i].get<std::string>());
  }
  return out;
}

// An []EnvVar: each an object with a name.
json EnvList(api::FieldReader& r, const std::string& field) {
  const json* env = r.Array(field);
  if (!env) return nullptr;
  for (size_t i = 0; i < env->size(); ++i) {
    std::string path = r.Path(field) + "[" + std::to_string(i) + "]";
    if (!(*env)[i].is_object()) {
      r.errors()->push_back(api::Invalid(path, api::TypeName((*env)[i]), "must be of type object"));
      continue;
    }
    api::FieldReader er((*env)[i], path, r.errors());
    if (er.String("name").value_or("").empty())
      r.errors()->push_back(api::Required(path + ".name", ""));
    er.String("value");
  }
  return *env;
}

std::optional<api::InitializerSpec> DecodeInitializer(api::FieldReader& r, const char* field) {
  const json* obj = r.Object(field);
  if (!obj) return std::nullopt;
  api::FieldReader ir(*obj, r.Path(field), r.errors());
  api::InitializerSpec out;
  out.storage_uri = ir.String("storageUri");
  out.env = EnvList(ir, "env");
  if (const json* secret = ir.Object("secretRef")) {
    api::FieldReader sr(*secret, ir.Path("secretRef"), r.errors());
    out.secret_ref = sr.String("name");
  }
  return out;
}

class TrainJobKind final : public api::KindPlugin {
 public:
  TrainJobKind()
      : KindPlugin({.kind = api::Kind::kTrainJob,
                    .name = "TrainJob",
                    .plural = "trainjobs",
                    .spec_map_field = "",
                    .replica_types = {},
                    .default_container = api::kTrainerContainer,
                    .port_name = "",
                    .default_port = api::kTrainerPort,
                    .default_restart_policy = "OnFailure",
                    .framework_label = "trainer",
                    .controller_name = "trainjob-controller",
                    .normalizes_type_case = false,
                    .injects_default_port = false,
                    .status_rules = {.shape = api::StatusRules::Shape::kJobSet},
                    .api_versions = {api::kTrainerApiVersion},
                    .runtime_resolved = true,
                    .operator_serves = false,
                    .short_name = "tj"}) {}

  void DecodeSpec(api::FieldReader& spec, api::Job* job) const override;
  void EncodeSpec(const api::Job& job, json* spec) const override;
  void Default(api::Job* job) const override;
  void Validate(const api::Job& job, api::ValidationResult* out) const override;
  bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override {
    return type == job.trainer_group && index == 0;
  }
  StatusOr<api::ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                   const api::Endpoints& endpoints) const override;
};

void TrainJobKind::DecodeSpec(api::FieldReader& spec, api::Job* job) const {
  api::TrainJobSpec tj;
  if (const json* ref = spec.Object("runtimeRef")) {
    api::FieldReader r(*ref, spec.Path("runtimeRef"), spec.errors());
    tj.runtime_ref.name = r.String("name").value_or("");
    tj.runtime_ref.api_group = r.String("apiGroup").value_or("");
    tj.runtime_ref.kind = r.String("kind").value_or("");
  }
  if (const json* init = spec.Object("initializer")) {
    api::FieldReader r(*init, spec.Path("initializer"), spec.errors());
    tj.dataset = DecodeInitializer(r, "dataset");
    tj.model = DecodeInitializer(r, "model");
  }
  if (const json* trainer = spec.Object("trainer")) {
    api::FieldReader r(*trainer, spec.Path("trainer"), spec.errors());
    api::TrainerSpec t;
    t.image = r.String("image");
    t.command = Strings(r, "command");
    t.args = Strings(r, "args");
    t.env = EnvList(r, "env");
    t.num_nodes = r.Integer<int32_t>("numNodes");
    if (const json* res = r.Object("resourcesPerNode")) t.resources_per_node = *res;
    t.num_proc_per_node = r.Integer<int32_t>("numProcPerNode");
    tj.trainer = std::move(t);
  }
  if (const json* patches = spec.Array("runtimePatches")) {
    for (size_t i = 0; i < patches->size(); ++i)
      if (!(*patches)[i].is_object())
        spec.errors()->push_back(
            api::Invalid(spec.Path("runtimePatches") + "[" + std::to_string(i) + "]",
                         api::TypeName((*patches)[i]), "must be of type object"));
    tj.runtime_patches = *patches;
  }
  job->run_policy.suspend = spec.Bool("suspend");
  job->run_policy.active_deadline_seconds = spec.Integer<int64_t>("activeDeadlineSeconds");
  job->run_policy.managed_by = spec.String("managedBy");
  job->train_job = std::move(tj);
}

void TrainJobKind::EncodeSpec(const api::Job& job, json* spec) const {
  spec->erase("runPolicy");
  if (job.train_job) {
    const api::RuntimeRef& ref = job.train_job->runtime_ref;
    json& out = (*spec)["runtimeRef"];
    if (!out.is_object()) out = json::object();
    out["name"] = ref.name;
    if (!ref.api_group.empty()) out["apiGroup"] = ref.api_group;
    if (!ref.kind.empty()) out["kind"] = ref.kind;
  }
  const api::RunPolicy& p = job.run_policy;
  if (p.suspend) (*spec)["suspend"] = *p.suspend;
  if (p.active_deadline_seconds) (*spec)["activeDeadlineSeconds"] = *p.active_deadline_seconds;
  if (p.managed_by) (*spec)["managedBy"] = *p.managed_by;
}

// The schema's defaults (upstream's CRD).
void TrainJobKind::Default(api::Job* job) const {
  if (job->train_job) {
    api::RuntimeRef& ref = job->train_job->runtime_ref;
    if (ref.api_group.empty()) ref.api_group = api::kTrainerGroup;
    if (ref.kind.empty()) ref.kind = api::kClusterTrainingRuntimeKind;
  }
  if (!job->run_policy.suspend) job->run_policy.suspend = false;
  if (!job->run_policy.managed_by) job->run_policy.managed_by = api::kManagedByTrainer;
}

// Upstream's CRD rules of a TrainJob on its own (the runtime's are api/trainjob_resolve.h's).
void TrainJobKind::Validate(const api::Job& job, api::ValidationResult* out) const {
  api::FieldErrorList* errors = &out->errors;
  static const std::regex kRfc1035("[a-z]([-a-z0-9]*[a-z0-9])?");
  if (job.name.empty()) {
    errors->push_back(api::Required("metadata.name", "name is required"));
  } else {
    if (!std::regex_match(job.name, kRfc1035))
      errors->push_back(api::Invalid("metadata.name", job.name,
                                     "metadata.name must match RFC 1035 DNS label format"));
    if (job.name.size() > 63)
      errors->push_back(api::Invalid("metadata.name", job.name,
                                     "metadata.name must be no more than 63 characters"));
  }
  if (!job.train_job) return;
  const api::TrainJobSpec& tj = *job.train_job;
  if (tj.runtime_ref.name.empty())
    errors->push_back(api::Required("spec.runtimeRef.name", "the runtime the TrainJob runs on"));
  else if (tj.runtime_ref.name.size() > 253)
    errors->push_back(api::Invalid("spec.runtimeRef.name", tj.runtime_ref.name,
                                   "must be no more than 253 characters"));
  static const std::regex kUri("[A-Za-z][A-Za-z0-9+.-]*://.+");
  for (const auto& [field, init] : {std::pair{"dataset", &tj.dataset}, {"model", &tj.model}}) {
    if (!*init || !(*init)->storage_uri) continue;
    const std::string& uri = *(*init)->storage_uri;
    const std::string path = std::string("spec.initializer.") + field + ".storageUri";
    if (uri.size() > 2048)
      errors->push_back(
          api::Invalid(path, uri.substr(0, 64) + "…", "must be no more than 2048 characters"));
    else if (!uri.empty() && !std::regex_match(uri, kUri))
      errors->push_back(api::Invalid(
          path, uri, "storageUri may be empty, or it must be a valid URI (scheme://...)"));
  }
  if (tj.trainer) {
    const api::TrainerSpec& t = *tj.trainer;
    if (t.num_nodes && *t.num_nodes < 1)
      errors->push_back(api::Invalid("spec.trainer.numNodes", *t.num_nodes,
                                     "must be greater than or equal to 1"));
    if (t.num_nodes && *t.num_nodes > api::kMaxReplicasPerType)
      errors->push_back(api::Invalid(
          "spec.trainer.numNodes", *t.num_nodes,
          "must be less than or equal to " + std::to_string(api::kMaxReplicasPerType)));
    if (t.num_proc_per_node && *t.num_proc_per_node < 1)
      errors->push_back(api::Invalid("spec.trainer.numProcPerNode", *t.num_proc_per_node,
                                     "numProcPerNode must be greater than or equal to 1"));
    if (t.image && t.image->size() > 500)
      errors->push_back(api::Invalid("spec.trainer.image", t.image->substr(0, 64) + "…",
                                     "must be no more than 500 characters"));
    for (const auto& [field, list] : {std::pair{"command", &t.command}, {"args", &t.args}})
      if (*list && (*list)->size() > 128)
        errors->push_back(api::Invalid(std::string("spec.trainer.") + field,
                                       static_cast<int64_t>((*list)->size()),
                                       "must have at most 128 items"));
  }
  if (tj.runtime_patches.is_array()) {
    if (tj.runtime_patches.size() > 16)
      errors->push_back(api::Invalid("spec.runtimePatches",
                                     static_cast<int64_t>(tj.runtime_patches.size()),
                                     "must have at most 16 items"));
    // manager: a domain-prefixed path ("example.com/tool"), each once.
    static const std::regex kManager(
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9._/-]+");
    std::set<std::string> managers;
    for (size_t i = 0; i < tj.runtime_patches.size(); ++i) {
      const std::string path = "spec.runtimePatches[" + std::to_string(i) + "].manager";
      std::string manager = api::StringAt(tj.runtime_patches[i], "manager");
      if (manager.empty())
        errors->push_back(api::Required(path, ""));
      else if (!std::regex_match(manager, kManager))
        errors->push_back(api::Invalid(path, manager,
                                       "must be a domain-prefixed path (such as \"acme.io/foo\")"));
      else if (!managers.insert(manager).second)
        errors->push_back(api::Invalid(path, manager, "Duplicate value"));
    }
  }
  if (job.run_policy.active_deadline_seconds && *job.run_policy.active_deadline_seconds < 1)
    errors->push_back(api::Invalid("spec.activeDeadlineSeconds",
                                   *job.run_policy.active_deadline_seconds,
                                   "must be greater than or equal to 1"));
  if (job.run_policy.managed_by && *job.run_policy.managed_by != api::kManagedByTrainer &&
      *job.run_policy.managed_by != api::kManagedByMultiKueue)
    errors->push_back(api::Invalid("spec.managedBy", *job.run_policy.managed_by,
                                   "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                                   "kueue.x-k8s.io/multikueue if set"));
}

// A node's index: its value, or (one template for every node) the pod's completion index.
api::EnvVar IndexEnv(const std::string& name, int index, const api::Endpoints& endpoints) {
  if (!endpoints.IndexFromPod()) return Env(name, std::to_string(index));
  api::EnvVar v;
  v.name = name;
  v.value_from = {{"fieldRef",
                   {{"fieldPath", std::string("metadata.annotations['") +
                                      api::kCompletionIndexAnnotation + "']"}}}};
  return v;
}

StatusOr<api::ReplicaEnv> TrainJobKind::EnvFor(const api::Job& job, const std::string& type,
                                               int index, const api::Endpoints& endpoints) const {
  api::ReplicaEnv out;
  out.default_container_only = true;  // the trainer step's `node` container
  // MPI: the launcher's mpirun finds the hosts in the hostfile the operator (or the runner)
  // writes, with or without a trainer section.
  if (job.IsMpiTrainJob()) {
    if (!job.IsMpiLauncher(type)) return out;
    out.env.push_back(Env("OMPI_MCA_orte_default_hostfile", api::kTrainJobMpiHostfile));
    out.env.push_back(Env("OMPI_MCA_orte_keep_fqdn_hostnames", "true"));
    out.env.push_back(
        Env("OMPI_MCA_orte_set_default_slots", std::to_string(job.slots_per_worker.value_or(1))));
    out.env.push_back(Env("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"));
    return out;
  }
  // As upstream, a TrainJob without a trainer section gets no policy env.
  if (!job.runtime || type != job.trainer_group || !job.train_job || !job.train_job->trainer)
    return out;
  const int nodes = job.ReplicasOf(type);
  const std::string host = endpoints.Host(type, 0);
  const std::string port = std::to_string(endpoints.Port(type, 0, api::kTrainerPort));
  switch (job.runtime->policy) {
    case api::MlPolicy::kTorch:
      out.env.push_back(Env("PET_NNODES", std::to_string(nodes)));
      out.env.push_back(Env("PET_NPROC_PER_NODE", api::TorchProcsPerNode(job)));
      out.env.push_back(IndexEnv("PET_NODE_RANK", index, endpoints));
      out.env.push_back(Env("PET_MASTER_ADDR", host));
      out.env.push_back(Env("PET_MASTER_PORT", port));
      break;
    case api::MlPolicy::kJax:
      out.env.push_back(Env("JAX_NUM_PROCESSES", std::to_string(nodes)));
      out.env.push_back(IndexEnv("JAX_PROCESS_ID", index, endpoints));
      out.env.push_back(Env("JAX_COORDINATOR_ADDRESS", host + ":" + port));
      break;
    case api::MlPolicy::kXGBoost:
      out.env.push_back(Env("DMLC_TRACKER_URI", host));
      out.env.push_back(Env("DMLC_TRACKER_PORT", port));
      out.env.push_back(IndexEnv("DMLC_TASK_ID", index, endpoints));
      out.env.push_back(
          Env("DMLC_NUM_WORKER", std::to_string(nodes * std::max(1, api::TrainerGpus(job)))));
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

const api::KindPlugin& TrainJobPlugin() {
  static const TrainJobKind kPlugin;
  return kPlugin;
}

}  // namespace trainctl::kinds
