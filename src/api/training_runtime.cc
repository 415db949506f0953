#include "api/training_runtime.h"

#include <algorithm>
#include <set>

#include "api/field_reader.h"
#include "api/json_fields.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

const json& EmptyArray() {
  static const json kEmpty = json::array();
  return kEmpty;
}

const std::string kJobsPath = "spec.template.spec.replicatedJobs";

std::string JobPath(size_t i) { return kJobsPath + "[" + std::to_string(i) + "]"; }

// The container an ancestor step must have (upstream's runtime webhook).
const char* RequiredContainer(const std::string& ancestor) {
  if (ancestor == kAncestorTrainer) return kTrainerContainer;
  if (ancestor == kAncestorDataset) return kAncestorDataset;
  if (ancestor == kAncestorModel) return kAncestorModel;
  return nullptr;
}

void DecodeMlPolicy(const json& ml, TrainingRuntime* rt, FieldErrorList* errors) {
  const std::string path = "spec.mlPolicy";
  FieldReader r(ml, path, errors);
  if (std::optional<int32_t> n = r.Integer<int32_t>("numNodes")) {
    rt->num_nodes = *n;
    if (*n < 1)
      errors->push_back(Invalid(path + ".numNodes", *n, "must be greater than or equal to 1"));
  }
  int policies = 0;
  for (const auto& [field, policy] : {std::pair{"torch", MlPolicy::kTorch},
                                      {"mpi", MlPolicy::kMpi},
                                      {"jax", MlPolicy::kJax},
                                      {"xgboost", MlPolicy::kXGBoost},
                                      {"flux", MlPolicy::kFlux}}) {
    if (r.Object(field)) {
      ++policies;
      rt->policy = policy;
    }
  }
  if (policies > 1)
    errors->push_back(Invalid(path, ml, "Only one of the policy can be configured"));
  if (const json* mpi = r.Object("mpi")) {
    FieldReader m(*mpi, path + ".mpi", errors);
    if (auto n = m.Integer<int32_t>("numProcPerNode")) {
      rt->mpi.num_proc_per_node = *n;
      if (*n < 1)
        errors->push_back(
            Invalid(path + ".mpi.numProcPerNode", *n, "NumProcPerNode in mpiPolicy must be >= 1"));
    }
    if (auto impl = m.String("mpiImplementation")) {
      if (*impl == "") *impl = "OpenMPI";
      rt->mpi.implementation = *impl;
      if (*impl != "OpenMPI")
        errors->push_back(NotSupported(path + ".mpi.mpiImplementation", *impl, {"OpenMPI", ""}));
    }
    if (auto p = m.String("sshAuthMountPath")) rt->mpi.ssh_auth_mount_path = *p;
    if (auto b = m.Bool("runLauncherAsNode")) rt->mpi.run_launcher_as_node = *b;
  }
  if (const json* flux = r.Object("flux")) {
    FieldReader f(*flux, path + ".flux", errors);
    if (auto n = f.Integer<int32_t>("numProcPerNode")) {
      rt->flux_num_proc_per_node = *n;
      if (*n < 1)
        errors->push_back(Invalid(path + ".flux.numProcPerNode", *n,
                                  "NumProcPerNode in fluxPolicy must be >= 1"));
    }
  }
  const json* torch = r.Object("torch");
  if (!torch) return;
  FieldReader t(*torch, path + ".torch", errors);
  const json* injection = t.Object("envInjection");
  if (!injection) return;
  FieldReader inj(*injection, path + ".torch.envInjection", errors);
  const json* targets = inj.Array("targets");
  if (!targets) return;
  for (size_t i = 0; i < targets->size(); ++i) {
    std::string tpath = path + ".torch.envInjection.targets[" + std::to_string(i) + "]";
    const json& target = (*targets)[i];
    if (!target.is_object()) {
      errors->push_back(Invalid(tpath, TypeName(target), "must be of type object"));
      continue;
    }
    FieldReader tr(target, tpath, errors);
    EnvInjectionTarget out;
    out.job_name = tr.String("jobName").value_or("");
    if (const json* names = tr.Array("containerNames")) {
      for (size_t j = 0; j < names->size(); ++j) {
        if (!(*names)[j].is_string()) {
          errors->push_back(Invalid(tpath + ".containerNames[" + std::to_string(j) + "]",
                                    TypeName((*names)[j]), "must be of type string"));
          continue;
        }
        out.container_names.push_back((*names)[j].get<std::string>());
      }
      if (std::count(out.container_names.begin(), out.container_names.end(), kTrainerContainer))
        errors->push_back(Invalid(tpath + ".containerNames", *names,
                                  "containerNames must not include the main node container "
                                  "because PET_* envs are always injected into it"));
    }
    rt->torch_env_targets.push_back(std::move(out));
  }
}

// The JobSet template: replicated jobs with names, replicas 1 for an ancestor step and its
// required container, at least a trainer step, dependsOn and successPolicy naming jobs that
// exist.
void CheckTemplate(const json& spec, FieldErrorList* errors) {
  const json* tmpl = spec.contains("template") ? &spec["template"] : nullptr;
  const json* js = tmpl && tmpl->is_object() && tmpl->contains("spec") ? &(*tmpl)["spec"] : nullptr;
  const json* jobs =
      js && js->is_object() && js->contains("replicatedJobs") ? &(*js)["replicatedJobs"] : nullptr;
  if (!jobs || jobs->is_null()) {
    errors->push_back(Required(kJobsPath, "a runtime's JobSet template lists its replicated jobs"));
    return;
  }
  if (!jobs->is_array()) {
    errors->push_back(Invalid(kJobsPath, TypeName(*jobs), "must be of type array"));
    return;
  }
  std::set<std::string> names;
  bool has_trainer = false;
  for (size_t i = 0; i < jobs->size(); ++i) {
    const json& rj = (*jobs)[i];
    if (!rj.is_object()) {
      errors->push_back(Invalid(JobPath(i), TypeName(rj), "must be of type object"));
      continue;
    }
    FieldReader r(rj, JobPath(i), errors);
    std::optional<std::string> name = r.String("name");
    if (!name || name->empty()) {
      errors->push_back(Required(JobPath(i) + ".name", ""));
    } else if (!names.insert(*name).second) {
      errors->push_back(Invalid(JobPath(i) + ".name", *name,
                                "Duplicate value: another replicated job has this name"));
    }
    std::optional<int32_t> replicas = r.Integer<int32_t>("replicas");
    if (replicas && *replicas < 1)
      errors->push_back(Invalid(JobPath(i) + ".replicas", *replicas, "must be greater than 0"));
    const std::string ancestor = AncestorOf(rj);
    if (const char* container = RequiredContainer(ancestor)) {
      has_trainer = has_trainer || ancestor == kAncestorTrainer;
      if (replicas.value_or(1) != 1)
        errors->push_back(Invalid(JobPath(i) + ".replicas", *replicas, "always must be 1"));
      const json& pod = rj.value("template", json::object()).value("spec", json::object());
      const json& containers =
          pod.is_object() && pod.contains("template")
              ? pod["template"].value("spec", json::object()).value("containers", json::array())
              : EmptyArray();
      bool found = false;
      if (containers.is_array())
        for (const json& c : containers) found = found || StringAt(c, "name") == container;
      if (!found)
        errors->push_back(Invalid(JobPath(i) + ".template.spec.template.spec.containers",
                                  containers,
                                  std::string("must contain the required container for the "
                                              "ancestor: ") +
                                      ancestor));
    }
  }
  if (!has_trainer && !jobs->empty())
    errors->push_back(Required(kJobsPath, std::string("no replicated job is labelled ") +
                                              kLabelAncestorStep + ": " + kAncestorTrainer +
                                              ", so a TrainJob has no step to train in"));
  for (size_t i = 0; i < jobs->size(); ++i) {
    const json& rj = (*jobs)[i];
    if (!rj.is_object() || !rj.contains("dependsOn")) continue;
    const json& deps = rj["dependsOn"];
    if (!deps.is_array()) {
      errors->push_back(
          Invalid(JobPath(i) + ".dependsOn", TypeName(deps), "must be of type array"));
      continue;
    }
    for (size_t d = 0; d < deps.size(); ++d) {
      std::string dpath = JobPath(i) + ".dependsOn[" + std::to_string(d) + "]";
      std::string dep = StringAt(deps[d], "name");
      std::string status = StringAt(deps[d], "status");
      if (!names.count(dep))
        errors->push_back(Invalid(dpath + ".name", dep, "names no replicated job of this runtime"));
      if (status != "Ready" && status != "Complete")
        errors->push_back(NotSupported(dpath + ".status", status, {"Ready", "Complete"}));
    }
  }
  const json& policy = js->value("successPolicy", json::object());
  if (!policy.is_object()) return;
  std::string op = StringAt(policy, "operator", "All");
  if (op != "All" && op != "Any")
    errors->push_back(
        NotSupported("spec.template.spec.successPolicy.operator", op, {"All", "Any"}));
  const json& targets = policy.value("targetReplicatedJobs", json::array());
  if (!targets.is_array()) return;
  for (size_t t = 0; t < targets.size(); ++t)
    if (!targets[t].is_string() || !names.count(targets[t].get<std::string>()))
      errors->push_back(Invalid(
          "spec.template.spec.successPolicy.targetReplicatedJobs[" + std::to_string(t) + "]",
          targets[t], "names no replicated job of this runtime"));
}

}  // namespace

const char* MlPolicyName(MlPolicy policy) {
  switch (policy) {
    case MlPolicy::kTorch:
      return "torch";
    case MlPolicy::kMpi:
      return "mpi";
    case MlPolicy::kJax:
      return "jax";
    case MlPolicy::kXGBoost:
      return "xgboost";
    case MlPolicy::kFlux:
      return "flux";
    case MlPolicy::kPlain:
      break;
  }
  return "plain";
}

bool IsRuntimeDocument(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  std::string api_version = StringAt(doc, "apiVersion");
  std::string kind = StringAt(doc, "kind");
  return api_version.rfind(std::string(kTrainerGroup) + "/", 0) == 0 &&
         (kind == kTrainingRuntimeKind || kind == kClusterTrainingRuntimeKind);
}

StatusOr<TrainingRuntime> DecodeTrainingRuntime(const nlohmann::json& doc,
                                                const std::string& source) {
  TrainingRuntime rt;
  rt.kind = StringAt(doc, "kind");
  rt.source = source;
  FieldErrorList errors;
  FieldReader top(doc, "", &errors);
  if (top.String("apiVersion").value_or("") != kTrainerApiVersion)
    errors.push_back(NotSupported("apiVersion", StringAt(doc, "apiVersion"), {kTrainerApiVersion}));
  const json* md = top.Object("metadata");
  if (md) {
    FieldReader m(*md, "metadata", &errors);
    rt.name = m.String("name").value_or("");
    rt.namespace_ = m.String("namespace").value_or("");
    m.Object("labels");
  }
  if (rt.name.empty()) errors.push_back(Required("metadata.name", ""));
  if (rt.kind == kClusterTrainingRuntimeKind) {
    rt.namespace_.clear();
  } else if (rt.namespace_.empty()) {
    rt.namespace_ = "default";
  }
  const json* spec = top.Object("spec");
  if (!spec || spec->empty()) {
    errors.push_back(Required("spec", "a runtime has at least a template"));
  } else {
    FieldReader s(*spec, "spec", &errors);
    if (const json* ml = s.Object("mlPolicy")) DecodeMlPolicy(*ml, &rt, &errors);
    if (const json* pg = s.Object("podGroupPolicy")) rt.pod_group_policy = *pg;
    if (s.Object("template"))
      CheckTemplate(*spec, &errors);
    else
      errors.push_back(Required("spec.template", "the JobSet template the runtime runs"));
  }
  if (!errors.empty()) return FieldErrorsToStatus(rt.kind, rt.name, errors);
  rt.object = doc;
  return rt;
}

const nlohmann::json& ReplicatedJobs(const TrainingRuntime& runtime) {
  const json* at = &runtime.object;
  for (const char* key : {"spec", "template", "spec", "replicatedJobs"}) {
    if (!at->is_object() || !at->contains(key)) return EmptyArray();
    at = &(*at)[key];
  }
  return at->is_array() ? *at : EmptyArray();
}

std::string AncestorOf(const nlohmann::json& replicated_job) {
  if (!replicated_job.is_object()) return "";
  const json& tmpl = replicated_job.value("template", json::object());
  if (!tmpl.is_object()) return "";
  const json& md = tmpl.value("metadata", json::object());
  if (!md.is_object()) return "";
  return StringAt(md.value("labels", json::object()), kLabelAncestorStep);
}

void RuntimeCatalog::Add(TrainingRuntime runtime) {
  for (TrainingRuntime& existing : runtimes_) {
    if (existing.kind == runtime.kind && existing.namespace_ == runtime.namespace_ &&
        existing.name == runtime.name) {
      existing = std::move(runtime);
      return;
    }
  }
  runtimes_.push_back(std::move(runtime));
}

StatusOr<const TrainingRuntime*> RuntimeCatalog::Find(const RuntimeRef& ref,
                                                      const std::string& job_namespace) const {
  const std::string kind = ref.kind.empty() ? kClusterTrainingRuntimeKind : ref.kind;
  const std::string group = ref.api_group.empty() ? kTrainerGroup : ref.api_group;
  if (group != kTrainerGroup ||
      (kind != kTrainingRuntimeKind && kind != kClusterTrainingRuntimeKind))
    return InvalidError("spec.runtimeRef: Unsupported value: \"" + kind + "." + group +
                        "\": unsupported runtime: supported runtimes are " + kTrainingRuntimeKind +
                        "." + kTrainerGroup + " and " + kClusterTrainingRuntimeKind + "." +
                        kTrainerGroup);
  const bool cluster = kind == kClusterTrainingRuntimeKind;
  std::string others;
  for (const TrainingRuntime& rt : runtimes_) {
    if (rt.kind == kind && rt.name == ref.name && (cluster || rt.namespace_ == job_namespace))
      return &rt;
    if (rt.name == ref.name || rt.kind == kind) {
      std::string where = rt.namespace_.empty() ? "" : rt.namespace_ + "/";
      others += (others.empty() ? "" : ", ") + rt.kind + " " + where + rt.name;
    }
  }
  std::string searched = cluster ? std::string("the ClusterTrainingRuntimes")
                                 : "the TrainingRuntimes of namespace " + job_namespace;
  return InvalidError("spec.runtimeRef.name: Not found: \"" + ref.name + "\": no " + kind +
                      " of that name among " + searched +
                      (others.empty() ? " (there are none)" : " (found: " + others + ")") +
                      "; the runtime must exist before the TrainJob");
}

}  // namespace trainctl::api
