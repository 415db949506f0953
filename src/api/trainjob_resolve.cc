#include "api/trainjob_resolve.h"

#include <algorithm>
#include <set>

#include "api/field_error.h"
#include "api/json_fields.h"
#include "api/quantity.h"
#include "api/training_runtime.h"
#include "api/validation.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

// The JobSet default a pod template without a restartPolicy gets.
constexpr const char* kJobSetRestartPolicy = "OnFailure";
// batch/v1 Job's default backoffLimit.
constexpr int32_t kJobBackoffLimit = 6;

json& PodSpecOf(json& pod_template) {
  if (!pod_template.is_object()) pod_template = json::object();
  if (!pod_template.contains("spec") || !pod_template["spec"].is_object())
    pod_template["spec"] = json::object();
  return pod_template["spec"];
}

json* ContainerNamed(json& pod_template, const std::string& list, const std::string& name) {
  json& spec = PodSpecOf(pod_template);
  if (!spec.contains(list) || !spec[list].is_array()) return nullptr;
  for (json& c : spec[list])
    if (c.is_object() && StringAt(c, "name") == name) return &c;
  return nullptr;
}

// Sets or replaces entries of a list of objects keyed by `key` (env by name, volumes by name).
void UpsertByKey(json* list, const json& entries, const char* key = "name") {
  if (!entries.is_array()) return;
  if (!list->is_array()) *list = json::array();
  for (const json& e : entries) {
    if (!e.is_object()) continue;
    bool replaced = false;
    for (json& existing : *list) {
      if (existing.is_object() && StringAt(existing, key) == StringAt(e, key)) {
        existing = e;
        replaced = true;
        break;
      }
    }
    if (!replaced) list->push_back(e);
  }
}

void MergeStringMap(json* target, const json& source) {
  if (!source.is_object()) return;
  if (!target->is_object()) *target = json::object();
  for (auto it = source.begin(); it != source.end(); ++it) (*target)[it.key()] = it.value();
}

// Env names of `env` (an []EnvVar) that `reserved` holds.
std::vector<std::string> ReservedIn(const json& env, const std::set<std::string>& reserved) {
  std::vector<std::string> out;
  if (!env.is_array()) return out;
  for (const json& e : env)
    if (reserved.count(StringAt(e, "name"))) out.push_back(StringAt(e, "name"));
  std::sort(out.begin(), out.end());
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

// Upstream's checks of a TrainJob's sections against its runtime's policy.
void CheckPolicy(const TrainingRuntime& rt, const TrainJobSpec& tj, FieldErrorList* errors) {
  if (!tj.trainer) return;
  const TrainerSpec& t = *tj.trainer;
  static const std::set<std::string> kTorch = {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
                                               "PET_MASTER_ADDR", "PET_MASTER_PORT"};
  static const std::set<std::string> kMpi = {
      "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
      "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"};
  static const std::set<std::string> kXgb = {"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT",
                                             "DMLC_TASK_ID", "DMLC_NUM_WORKER"};
  static const std::set<std::string> kJax = {"JAX_NUM_PROCESSES", "JAX_PROCESS_ID",
                                             "JAX_COORDINATOR_ADDRESS"};
  const std::set<std::string>* reserved = nullptr;
  switch (rt.policy) {
    case MlPolicy::kTorch:
      reserved = &kTorch;
      break;
    case MlPolicy::kMpi:
      reserved = &kMpi;
      break;
    case MlPolicy::kJax:
      reserved = &kJax;
      break;
    case MlPolicy::kXGBoost: {
      if (!t.env.is_array()) break;
      for (size_t i = 0; i < t.env.size(); ++i) {
        std::string name = StringAt(t.env[i], "name");
        if (kXgb.count(name))
          errors->push_back(Forbidden("spec.trainer.env[" + std::to_string(i) + "]",
                                      name + " is reserved for the XGBoost runtime"));
      }
      break;
    }
    default:
      break;
  }
  if (reserved) {
    std::vector<std::string> names = ReservedIn(t.env, *reserved);
    if (!names.empty())
      errors->push_back(
          Invalid("spec.trainer.env", t.env,
                  "must not have reserved envs, invalid envs configured: " + JoinNames(names)));
  }
  if (t.num_proc_per_node && rt.policy != MlPolicy::kTorch && rt.policy != MlPolicy::kMpi)
    errors->push_back(Forbidden(
        "spec.trainer.numProcPerNode",
        std::string("the runtime ") + rt.name + " (mlPolicy " + MlPolicyName(rt.policy) +
            ") starts one process per node: only torch and mpi runtimes take numProcPerNode"));
}

// A runtime patch's checks (upstream's JobSet plugin) and its application to the groups.
void ApplyPatches(const json& patches, const std::map<std::string, std::string>& ancestors,
                  std::map<std::string, ReplicaSpec>* groups, FieldErrorList* errors) {
  if (!patches.is_array()) return;
  for (size_t p = 0; p < patches.size(); ++p) {
    const std::string ppath = "spec.runtimePatches[" + std::to_string(p) + "]";
    const json& patch = patches[p];
    const json& tmpl =
        patch.value("trainingRuntimeSpec", json::object()).value("template", json::object());
    if (!tmpl.is_object()) continue;
    const json& jobs = tmpl.value("spec", json::object()).value("replicatedJobs", json::array());
    if (!jobs.is_array()) continue;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const std::string jpath =
          ppath + ".trainingRuntimeSpec.template.spec.replicatedJobs[" + std::to_string(j) + "]";
      const std::string name = StringAt(jobs[j], "name");
      auto group = groups->find(name);
      if (group == groups->end()) {
        errors->push_back(Invalid(jpath + ".name", name,
                                  "must not have replicated job that doesn't exist in the "
                                  "runtime job template"));
        continue;
      }
      const json& pod = jobs[j]
                            .value("template", json::object())
                            .value("spec", json::object())
                            .value("template", json::object());
      if (!pod.is_object()) continue;
      json& target = group->second.pod_template;
      const json& md = pod.value("metadata", json::object());
      if (md.is_object()) {
        if (!target.contains("metadata") || !target["metadata"].is_object())
          target["metadata"] = json::object();
        for (const char* k : {"labels", "annotations"})
          if (md.contains(k)) MergeStringMap(&target["metadata"][k], md[k]);
      }
      const json& spec = pod.value("spec", json::object());
      if (!spec.is_object()) continue;
      json& out = PodSpecOf(target);
      const std::string spath = jpath + ".template.spec.template.spec";
      for (const char* list : {"containers", "initContainers"}) {
        const json& cs = spec.value(list, json::array());
        if (!cs.is_array()) continue;
        for (size_t c = 0; c < cs.size(); ++c) {
          const std::string cname = StringAt(cs[c], "name");
          const std::string cpath = spath + "." + list + "[" + std::to_string(c) + "]";
          json* container = ContainerNamed(target, list, cname);
          if (!container) {
            errors->push_back(
                Invalid(cpath + ".name", cname,
                        std::string("must not have ") +
                            (std::string(list) == "containers" ? "container" : "initContainer") +
                            " that doesn't exist in the runtime job " + name));
            continue;
          }
          const std::string& ancestor = ancestors.at(name);
          bool owned = (ancestor == kAncestorTrainer && cname == kTrainerContainer) ||
                       (ancestor == kAncestorDataset && cname == kAncestorDataset) ||
                       (ancestor == kAncestorModel && cname == kAncestorModel);
          if (cs[c].contains("env") && owned) {
            errors->push_back(Forbidden(cpath + ".env",
                                        "must not have envs for the dataset-initializer, "
                                        "model-initializer, node containers"));
            continue;
          }
          if (cs[c].contains("env")) UpsertByKey(&(*container)["env"], cs[c]["env"]);
          if (cs[c].contains("volumeMounts"))
            UpsertByKey(&(*container)["volumeMounts"], cs[c]["volumeMounts"]);
          if (cs[c].contains("securityContext"))
            (*container)["securityContext"] = cs[c]["securityContext"];
        }
      }
      if (spec.contains("volumes")) UpsertByKey(&out["volumes"], spec["volumes"]);
      if (spec.contains("nodeSelector")) MergeStringMap(&out["nodeSelector"], spec["nodeSelector"]);
      for (const char* list : {"tolerations", "imagePullSecrets", "schedulingGates"}) {
        if (!spec.contains(list) || !spec[list].is_array()) continue;
        if (!out.contains(list) || !out[list].is_array()) out[list] = json::array();
        for (const json& e : spec[list]) out[list].push_back(e);
      }
      for (const char* field :
           {"serviceAccountName", "securityContext", "affinity", "terminationGracePeriodSeconds"})
        if (spec.contains(field)) out[field] = spec[field];
    }
  }
}

// STORAGE_URI, env and envFrom of an initializer's container.
void ApplyInitializer(const InitializerSpec& init, json* container) {
  json env = json::array();
  if (init.storage_uri) env.push_back({{"name", "STORAGE_URI"}, {"value", *init.storage_uri}});
  if (init.env.is_array())
    for (const json& e : init.env) env.push_back(e);
  UpsertByKey(&(*container)["env"], env);
  if (init.secret_ref) {
    if (!container->contains("envFrom") || !(*container)["envFrom"].is_array())
      (*container)["envFrom"] = json::array();
    (*container)["envFrom"].push_back({{"secretRef", {{"name", *init.secret_ref}}}});
  }
}

// resourcesPerNode over the container's resources, name by name within requests, limits and
// claims (upstream merges them: a runtime limit the TrainJob does not name is kept).
void MergeResources(json* container, const json& per_node) {
  json& res = (*container)["resources"];
  if (!res.is_object()) res = json::object();
  for (auto it = per_node.begin(); it != per_node.end(); ++it) {
    if (it->is_object() && res.contains(it.key()) && res[it.key()].is_object())
      MergeStringMap(&res[it.key()], *it);
    else
      res[it.key()] = *it;
  }
}

void ApplyTrainer(const TrainerSpec& t, json* container) {
  if (t.image) (*container)["image"] = *t.image;
  if (t.command) (*container)["command"] = *t.command;
  if (t.args) (*container)["args"] = *t.args;
  if (t.env.is_array()) UpsertByKey(&(*container)["env"], t.env);
  if (t.resources_per_node.is_object()) MergeResources(container, t.resources_per_node);
}

int32_t PositiveAt(const json& obj, const char* key, int32_t fallback) {
  int64_t v = IntAt(obj, key, fallback);
  return v < 1 || v > kMaxReplicasPerType ? fallback : static_cast<int32_t>(v);
}

const json* TrainerContainer(const Job& job) {
  auto it = job.replica_specs.find(job.trainer_group);
  if (it == job.replica_specs.end()) return nullptr;
  const json& tmpl = it->second.pod_template;
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return nullptr;
  const json& spec = tmpl["spec"];
  if (!spec.contains("containers") || !spec["containers"].is_array()) return nullptr;
  for (const json& c : spec["containers"])
    if (StringAt(c, "name") == kTrainerContainer) return &c;
  return nullptr;
}

// A resource of the node container, in whole units rounded up: requests, else limits.
int64_t ResourceOf(const Job& job, bool gpu) {
  const json* c = TrainerContainer(job);
  if (!c || !c->contains("resources") || !(*c)["resources"].is_object()) return 0;
  auto find = [&](const char* list) -> int64_t {
    const json& l = (*c)["resources"].value(list, json::object());
    if (!l.is_object()) return 0;
    for (auto it = l.begin(); it != l.end(); ++it) {
      std::string name = it.key();
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      bool match = gpu ? name.find("gpu") != std::string::npos : name == "cpu";
      if (!match) continue;
      std::string text = it->is_string() ? it->get<std::string>() : it->dump();
      StatusOr<int64_t> milli = ParseQuantityMilli(text);
      if (milli.ok()) return (*milli + 999) / 1000;
    }
    return 0;
  };
  int64_t requests = find("requests");
  return requests > 0 ? requests : find("limits");
}

}  // namespace

int TrainerGpus(const Job& job) { return static_cast<int>(ResourceOf(job, /*gpu=*/true)); }

std::string TorchProcsPerNode(const Job& job) {
  if (job.train_job && job.train_job->trainer && job.train_job->trainer->num_proc_per_node)
    return std::to_string(*job.train_job->trainer->num_proc_per_node);
  if (TrainerGpus(job) > 0) return "auto";
  return std::to_string(std::max<int64_t>(1, ResourceOf(job, /*gpu=*/false)));
}

Status ResolveTrainJob(const TrainingRuntime& runtime, Job* job) {
  if (!job->train_job) return InternalError("ResolveTrainJob: not a decoded TrainJob");
  const TrainJobSpec& tj = *job->train_job;
  FieldErrorList errors;
  CheckPolicy(runtime, tj, &errors);

  const json& jobs = ReplicatedJobs(runtime);
  std::map<std::string, ReplicaSpec> groups;
  std::map<std::string, std::string> ancestors;
  std::vector<std::string> order;
  std::string trainer;
  int32_t num_nodes = runtime.num_nodes;
  if (tj.trainer && tj.trainer->num_nodes) num_nodes = *tj.trainer->num_nodes;
  for (const json& rj : jobs) {
    const std::string name = StringAt(rj, "name");
    const std::string ancestor = AncestorOf(rj);
    const json& job_spec = rj.value("template", json::object()).value("spec", json::object());
    ReplicaSpec rs;
    rs.pod_template =
        job_spec.is_object() ? job_spec.value("template", json::object()) : json::object();
    rs.restart_policy = StringAt(PodSpecOf(rs.pod_template), "restartPolicy", kJobSetRestartPolicy);
    int32_t count = PositiveAt(rj, "replicas", 1) *
                    (job_spec.is_object() ? PositiveAt(job_spec, "parallelism", 1) : 1);
    if (ancestor == kAncestorTrainer) {
      trainer = name;
      // Every policy but MPI sizes the trainer step by the nodes; MPI's trainer step is its
      // launcher, sized by its template (its `node` job takes the nodes).
      if (runtime.policy != MlPolicy::kMpi) count = num_nodes;
    } else if (!ancestor.empty()) {
      count = 1;
    } else if (runtime.policy == MlPolicy::kMpi && name == kTrainerContainer) {
      count = runtime.mpi.run_launcher_as_node ? std::max(1, num_nodes - 1) : num_nodes;
    }
    rs.replicas = count;
    if (rj.contains("dependsOn") && rj["dependsOn"].is_array()) {
      for (const json& dep : rj["dependsOn"]) {
        GroupDependency d;
        d.type = StringAt(dep, "name");
        d.until = StringAt(dep, "status") == "Complete" ? GroupDependency::Until::kComplete
                                                        : GroupDependency::Until::kReady;
        d.why = runtime.kind + " " + runtime.name + " replicatedJobs " + name + ".dependsOn";
        rs.depends_on.push_back(std::move(d));
      }
    }
    ancestors[name] = ancestor;
    order.push_back(name);
    groups[name] = std::move(rs);
  }
  if (tj.trainer && tj.trainer->num_nodes && *tj.trainer->num_nodes < 1)
    errors.push_back(Invalid("spec.trainer.numNodes", *tj.trainer->num_nodes,
                             "must be greater than or equal to 1"));

  ApplyPatches(tj.runtime_patches, ancestors, &groups, &errors);

  for (const auto& [field, init, ancestor] : {std::tuple{"dataset", &tj.dataset, kAncestorDataset},
                                              std::tuple{"model", &tj.model, kAncestorModel}}) {
    if (!*init) continue;
    std::string group;
    for (const auto& [name, a] : ancestors)
      if (a == ancestor) group = name;
    const std::string path = std::string("spec.initializer.") + field;
    if (group.empty()) {
      errors.push_back(Invalid(
          path, field,
          std::string("must have ") + ancestor + " job when trainJob is configured with input " +
              (std::string(field) == "dataset" ? "datasetConfig" : "modelConfig")));
      continue;
    }
    json* container = ContainerNamed(groups[group].pod_template, "containers", ancestor);
    if (container) ApplyInitializer(**init, container);
  }
  if (!trainer.empty() && tj.trainer) {
    if (json* c = ContainerNamed(groups[trainer].pod_template, "containers", kTrainerContainer))
      ApplyTrainer(*tj.trainer, c);
    // MPI with the launcher as a node: the nodes get the same resources as the launcher.
    if (runtime.policy == MlPolicy::kMpi && runtime.mpi.run_launcher_as_node &&
        tj.trainer->resources_per_node.is_object() && groups.count(kTrainerContainer))
      if (json* c = ContainerNamed(groups[kTrainerContainer].pod_template, "containers",
                                   kTrainerContainer))
        MergeResources(c, tj.trainer->resources_per_node);
  }
  if (!errors.empty()) return FieldErrorsToStatus("TrainJob", job->name, errors);

  const json& js = runtime.object["spec"]["template"]["spec"];
  const json& success = js.value("successPolicy", json::object());
  job->success_groups.clear();
  job->success_any = false;
  if (success.is_object()) {
    job->success_any = StringAt(success, "operator", "All") == "Any";
    const json& targets = success.value("targetReplicatedJobs", json::array());
    if (targets.is_array())
      for (const json& t : targets)
        if (t.is_string()) job->success_groups.push_back(t.get<std::string>());
  }
  int32_t backoff = kJobBackoffLimit;
  for (const json& rj : jobs)
    if (StringAt(rj, "name") == trainer)
      backoff = static_cast<int32_t>(
          IntAt(rj.value("template", json::object()).value("spec", json::object()), "backoffLimit",
                kJobBackoffLimit));
  if (!job->run_policy.backoff_limit) job->run_policy.backoff_limit = backoff;
  job->replica_specs = std::move(groups);
  job->has_replica_specs = true;
  job->group_order = std::move(order);
  job->trainer_group = trainer;
  job->runtime = runtime;
  if (runtime.policy == MlPolicy::kMpi) {
    // mpi-operator's fields, as the MPI plugin reads the policy: the slots per host are the
    // TrainJob's numProcPerNode, else the runtime's, or the GPUs per node when that is 1.
    int32_t slots = runtime.mpi.num_proc_per_node;
    if (tj.trainer && tj.trainer->num_proc_per_node)
      slots = *tj.trainer->num_proc_per_node;
    else if (slots == 1 && TrainerGpus(*job) > 1)
      slots = TrainerGpus(*job);
    job->slots_per_worker = slots;
    job->run_launcher_as_worker = runtime.mpi.run_launcher_as_node;
    job->ssh_auth_mount_path = runtime.mpi.ssh_auth_mount_path;
    job->mpi_implementation = runtime.mpi.implementation;
  }
  return Status::Ok();
}

void TrainJobTemplateMetadata(const Job& job, json* labels, json* annotations) {
  if (!job.runtime || !job.train_job) return;
  auto merge = [&](const json& template_holder) {
    const json& metadata = ChildAt(ChildAt(template_holder, "template"), "metadata");
    for (auto [target, key] :
         {std::pair{labels, "labels"}, std::pair{annotations, "annotations"}}) {
      const json& source = ChildAt(metadata, key);
      if (!source.is_object() || source.empty()) continue;
      if (!target->is_object()) *target = json::object();
      for (auto e = source.begin(); e != source.end(); ++e) (*target)[e.key()] = e.value();
    }
  };
  merge(ChildAt(job.runtime->object, "spec"));
  if (job.train_job->runtime_patches.is_array())
    for (const json& p : job.train_job->runtime_patches) merge(ChildAt(p, "trainingRuntimeSpec"));
}

}  // namespace trainctl::api
