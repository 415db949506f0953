#include "operator/trainjob_jobset.h"

#include <algorithm>
#include <optional>
#include <set>

#include "api/json_edit.h"
#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "api/restart_scope.h"
#include "api/training_runtime.h"
#include "api/trainjob_resolve.h"
#include "operator/pod_builder.h"
#include "operator/trainjob_mpi.h"
#include "operator/trainjob_pod_group.h"

namespace trainctl::op {
namespace {

using api::ObjectAt;
using api::UpsertNamed;
using nlohmann::json;

constexpr const char* kTrainJobKind = "TrainJob";
constexpr const char* kCondSuspended = "Suspended";
constexpr const char* kCondComplete = "Complete";
constexpr const char* kCondFailed = "Failed";
// metav1.Condition list limit of TrainJob's status (the CRD's maxItems).
constexpr size_t kMaxConditions = 8;

const json& Child(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

void MergeStrings(json* target, const json& source) {
  if (!source.is_object() || source.empty()) return;
  if (!target->is_object()) *target = json::object();
  for (auto it = source.begin(); it != source.end(); ++it) (*target)[it.key()] = it.value();
}

// Upstream's port upsert: a port matches by containerPort, or by name — and a port without a
// name matches one without a name.
void UpsertPort(json* ports, int port) {
  if (!ports->is_array()) *ports = json::array();
  const json entry = {{"containerPort", port}};
  for (json& p : *ports) {
    if (!p.is_object()) continue;
    if (api::IntAt(p, "containerPort", -1) == port || !p.contains("name")) {
      p = entry;
      return;
    }
  }
  ports->push_back(entry);
}

json* ContainerIn(json& pod_template, const char* list, const std::string& name) {
  json& spec = ObjectAt(pod_template, "spec");
  if (!spec.contains(list) || !spec[list].is_array()) return nullptr;
  for (json& c : spec[list])
    if (c.is_object() && api::StringAt(c, "name") == name) return &c;
  return nullptr;
}

void UpsertEnv(json* container, const std::vector<api::EnvVar>& env) {
  for (const api::EnvVar& e : env) UpsertNamed(&(*container)["env"], EnvVarJson(e));
}

// The policy's env of the trainer step, as EnvFor computes it over the JobSet's endpoints.
// `as_if_trainer`: as if the TrainJob had a `trainer` section (torch's envInjection targets get
// the env either way).
StatusOr<std::vector<api::EnvVar>> PolicyEnv(const api::Job& job, bool as_if_trainer) {
  const JobSetEndpoints endpoints(job.name);
  const api::KindPlugin& plugin = api::PluginFor(job.kind);
  std::optional<api::Job> copy;
  if (as_if_trainer && !job.train_job->trainer) {
    copy = job;
    copy->train_job->trainer = api::TrainerSpec{};
  }
  StatusOr<api::ReplicaEnv> env =
      plugin.EnvFor(copy ? *copy : job, job.trainer_group, 0, endpoints);
  if (!env.ok()) return env.status();
  return env->env;
}

// The runtimePatches' job-template labels and annotations of replicated job `name`.
void PatchJobMetadata(const api::Job& job, const std::string& name, json* job_template) {
  const json& patches = job.train_job->runtime_patches;
  if (!patches.is_array()) return;
  for (const json& p : patches) {
    const json& jobs =
        Child(Child(Child(Child(p, "trainingRuntimeSpec"), "template"), "spec"), "replicatedJobs");
    if (!jobs.is_array()) continue;
    for (const json& rj : jobs) {
      if (api::StringAt(rj, "name") != name) continue;
      const json& md = Child(Child(rj, "template"), "metadata");
      for (const char* key : {"labels", "annotations"})
        if (Child(md, key).is_object() && !Child(md, key).empty())
          MergeStrings(&ObjectAt(*job_template, "metadata")[key], md[key]);
    }
  }
}

// TRAINCTL_RESTART_ATTEMPT read from the attempt JobSet labels each pod with.
api::EnvVar AttemptEnv() {
  api::EnvVar v;
  v.name = api::kRestartAttemptEnv;
  v.value_from = {
      {"fieldRef",
       {{"fieldPath", std::string("metadata.labels['") + kJobSetRestartAttempt + "']"}}}};
  return v;
}

bool InjectsPolicyEnv(api::MlPolicy policy) {
  return policy == api::MlPolicy::kTorch || policy == api::MlPolicy::kJax ||
         policy == api::MlPolicy::kXGBoost;
}

}  // namespace

std::string JobSetEndpoints::Host(const std::string& type, int index) const {
  return job_name_ + "-" + type + "-0-" + std::to_string(index) + "." + job_name_;
}

json TrainJobOwnerReference(const std::string& name, const std::string& uid) {
  return {{"apiVersion", api::kTrainerApiVersion},
          {"kind", kTrainJobKind},
          {"name", name},
          {"uid", uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

StatusOr<json> BuildJobSet(const api::Job& job, const std::string& trainjob_uid) {
  if (!job.runtime || !job.train_job)
    return FailedPreconditionError("TrainJob " + job.namespace_ + "/" + job.name +
                                   " is not resolved against a runtime");
  const api::TrainingRuntime& rt = *job.runtime;
  if (rt.policy == api::MlPolicy::kFlux)
    return FailedPreconditionError("TrainJob " + job.namespace_ + "/" + job.name + ": " + rt.kind +
                                   " " + rt.name + ": mlPolicy " + api::MlPolicyName(rt.policy) +
                                   " is not served on a cluster yet");

  json spec = Child(Child(Child(rt.object, "spec"), "template"), "spec");
  if (!spec.is_object()) spec = json::object();
  json& jobs = spec["replicatedJobs"];
  if (!jobs.is_array()) jobs = json::array();

  // trainctl.dev/restart-scope: Gang — JobSet's own restart of every Job, counted once against
  // the job's backoff limit, unless the runtime has a failurePolicy of its own.
  const bool gang = api::RestartScopeOf(job) == api::RestartScope::kGang;
  if (gang && !spec.contains("failurePolicy"))
    spec["failurePolicy"] = {{"maxRestarts", job.run_policy.backoff_limit.value_or(6)}};

  const bool with_trainer = job.train_job->trainer.has_value();
  // MPI's launcher env comes with or without a trainer section, and opens no port.
  const bool mpi = rt.policy == api::MlPolicy::kMpi;
  const bool policy_env = (with_trainer && InjectsPolicyEnv(rt.policy)) || mpi;
  std::vector<api::EnvVar> env;
  if (policy_env) {
    StatusOr<std::vector<api::EnvVar>> e = PolicyEnv(job, /*as_if_trainer=*/false);
    if (!e.ok()) return e.status();
    env = *std::move(e);
  }

  for (json& rj : jobs) {
    const std::string name = api::StringAt(rj, "name");
    auto group = job.replica_specs.find(name);
    if (group == job.replica_specs.end())
      return InternalError("TrainJob " + job.name + ": replicated job " + name +
                           " has no resolved group");
    const bool ancestor = !api::AncestorOf(rj).empty();
    json& job_template = ObjectAt(rj, "template");
    PatchJobMetadata(job, name, &job_template);
    json& job_spec = ObjectAt(job_template, "spec");

    json pod = group->second.pod_template;
    if (!pod.is_object()) pod = json::object();
    if (!group->second.restart_policy.empty())
      ObjectAt(pod, "spec")["restartPolicy"] = group->second.restart_policy;
    if (name == job.trainer_group && policy_env) {
      if (json* node = ContainerIn(pod, "containers", api::kTrainerContainer)) {
        UpsertEnv(node, env);
        if (!mpi) UpsertPort(&(*node)["ports"], api::kTrainerPort);
      }
    }
    AddTrainJobMpiVolumes(job, name, &pod);
    AddCheckpointNotice(job, &ObjectAt(pod, "spec"));
    MarkPodForPodGroup(TrainJobGangKind(job), job.name, &pod);
    if (gang) {  // a failed pod fails its Job at once; JobSet restarts every Job together
      json& pod_spec = ObjectAt(pod, "spec");
      pod_spec["restartPolicy"] = "Never";
      for (const char* list : {"containers", "initContainers"})
        if (pod_spec.contains(list) && pod_spec[list].is_array())
          for (json& c : pod_spec[list])
            if (c.is_object()) UpsertEnv(&c, {AttemptEnv()});
      job_spec["backoffLimit"] = 0;
    }
    // A failed node's last output in its container's end (the first failure's text, the why).
    SetTerminationMessagePolicy(&ObjectAt(pod, "spec"));
    job_spec["template"] = std::move(pod);

    // The trainer step's and MPI's `node` job's size are the resolved node counts.
    const int64_t count = name == job.trainer_group || name == job.MpiWorkerGroup()
                              ? job.ReplicasOf(name)
                              : std::max<int64_t>(1, api::IntAt(job_spec, "parallelism", 1));
    job_spec["parallelism"] = count;
    job_spec["completions"] = count;
    if (ancestor) rj["replicas"] = 1;
  }

  // torch's envInjection: the torch env, master address included, into the named containers.
  if (rt.policy == api::MlPolicy::kTorch && !rt.torch_env_targets.empty()) {
    StatusOr<std::vector<api::EnvVar>> torch_env = PolicyEnv(job, /*as_if_trainer=*/true);
    if (!torch_env.ok()) return torch_env.status();
    for (const api::EnvInjectionTarget& target : rt.torch_env_targets) {
      json* pod = nullptr;
      for (json& rj : jobs)
        if (api::StringAt(rj, "name") == target.job_name)
          pod = &ObjectAt(ObjectAt(ObjectAt(rj, "template"), "spec"), "template");
      for (const std::string& cname : target.container_names) {
        json* c = pod ? ContainerIn(*pod, "containers", cname) : nullptr;
        if (!c && pod) c = ContainerIn(*pod, "initContainers", cname);
        if (!c)
          return InvalidError("envInjection target podSet \"" + target.job_name +
                              "\" container \"" + cname + "\" not found in runtime template");
        UpsertEnv(c, *torch_env);
      }
    }
  }
  spec["suspend"] = job.run_policy.suspend.value_or(false);

  json metadata = {{"name", job.name}, {"namespace", job.namespace_}};
  json labels = json::object(), annotations = json::object();
  api::TrainJobTemplateMetadata(job, &labels, &annotations);
  if (!labels.empty()) metadata["labels"] = std::move(labels);
  if (!annotations.empty()) metadata["annotations"] = std::move(annotations);
  metadata["ownerReferences"] = json::array({TrainJobOwnerReference(job.name, trainjob_uid)});
  return json{{"apiVersion", kJobSetApiVersion},
              {"kind", "JobSet"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

namespace {

json* FindCondition(json& conditions, const std::string& type) {
  for (json& c : conditions)
    if (c.is_object() && api::StringAt(c, "type") == type) return &c;
  return nullptr;
}

const json* FindCondition(const json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions)
    if (c.is_object() && api::StringAt(c, "type") == type) return &c;
  return nullptr;
}

bool IsTrue(const json& conditions, const std::string& type) {
  const json* c = FindCondition(conditions, type);
  return c && api::StringAt(*c, "status") == "True";
}

// metav1.Condition's shape: type, status, reason, message, lastTransitionTime and, when set,
// observedGeneration.
json ConditionOf(const std::string& type, const std::string& status, const std::string& reason,
                 const std::string& message, const std::string& transition = "",
                 int64_t generation = 0) {
  json c = {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
  if (!transition.empty()) c["lastTransitionTime"] = transition;
  if (generation != 0) c["observedGeneration"] = generation;
  return c;
}

// meta.SetStatusCondition: a new type is appended; an existing one takes the new status (its
// lastTransitionTime moving only then), reason, message and observedGeneration.
void SetCondition(json* conditions, json cond, Time now) {
  const std::string transition = api::StringAt(cond, "lastTransitionTime");
  json* existing = FindCondition(*conditions, api::StringAt(cond, "type"));
  if (!existing) {
    if (transition.empty()) cond["lastTransitionTime"] = FormatRfc3339(now);
    conditions->push_back(std::move(cond));
    return;
  }
  if (api::StringAt(*existing, "status") != api::StringAt(cond, "status")) {
    (*existing)["status"] = cond["status"];
    (*existing)["lastTransitionTime"] = transition.empty() ? FormatRfc3339(now) : transition;
  }
  (*existing)["reason"] = cond["reason"];
  (*existing)["message"] = cond["message"];
  if (cond.contains("observedGeneration"))
    (*existing)["observedGeneration"] = cond["observedGeneration"];
  else
    existing->erase("observedGeneration");
}

// A JobSet condition, when True, as the TrainJob's condition `type`.
void CopyTrue(const json& jobset_conditions, const char* from, const char* type, json* out,
              Time now) {
  const json* c = FindCondition(jobset_conditions, from);
  if (!c || api::StringAt(*c, "status") != "True") return;
  SetCondition(
      out,
      ConditionOf(type, "True", api::StringAt(*c, "reason"), api::StringAt(*c, "message"),
                  api::StringAt(*c, "lastTransitionTime"), api::IntAt(*c, "observedGeneration", 0)),
      now);
}

}  // namespace

json TrainJobStatusFrom(const json& trainjob, const json* jobset, Time now) {
  json status = Child(trainjob, "status");
  if (!status.is_object()) status = json::object();
  json conditions = Child(status, "conditions");
  if (!conditions.is_array()) conditions = json::array();

  if (api::BoolAt(Child(trainjob, "spec"), "suspend", false))
    SetCondition(&conditions,
                 ConditionOf(kCondSuspended, "True", "Suspended", "TrainJob is suspended"), now);
  else if (IsTrue(conditions, kCondSuspended))
    SetCondition(&conditions,
                 ConditionOf(kCondSuspended, "False", "Resumed", "TrainJob is resumed"), now);

  if (jobset) {
    const json& js_status = Child(*jobset, "status");
    const json& js_conditions = Child(js_status, "conditions");
    CopyTrue(js_conditions, "Completed", kCondComplete, &conditions, now);
    CopyTrue(js_conditions, "Failed", kCondFailed, &conditions, now);
    json jobs = json::array();
    const json& replicated = Child(js_status, "replicatedJobsStatus");
    if (replicated.is_array())
      for (const json& r : replicated)
        jobs.push_back({{"name", api::StringAt(r, "name")},
                        {"ready", api::IntAt(r, "ready", 0)},
                        {"succeeded", api::IntAt(r, "succeeded", 0)},
                        {"failed", api::IntAt(r, "failed", 0)},
                        {"active", api::IntAt(r, "active", 0)},
                        {"suspended", api::IntAt(r, "suspended", 0)}});
    if (jobs.empty())
      status.erase("jobsStatus");
    else
      status["jobsStatus"] = std::move(jobs);
  }

  // The CRD's limit: the oldest conditions other than upstream's own go first.
  static const std::set<std::string> kOwn = {kCondSuspended, kCondComplete, kCondFailed};
  for (size_t i = 0; conditions.size() > kMaxConditions && i < conditions.size();) {
    if (kOwn.count(api::StringAt(conditions[i], "type")))
      ++i;
    else
      conditions.erase(i);
  }
  if (conditions.empty())
    status.erase("conditions");
  else
    status["conditions"] = std::move(conditions);
  return status.empty() ? json() : status;
}

std::optional<Time> TrainJobDeadline(const json& trainjob) {
  const json& spec = Child(trainjob, "spec");
  const int64_t seconds = api::IntAt(spec, "activeDeadlineSeconds", 0);
  if (seconds <= 0 || api::BoolAt(spec, "suspend", false)) return std::nullopt;
  const json& conditions = Child(Child(trainjob, "status"), "conditions");
  if (IsTrue(conditions, kCondComplete) || IsTrue(conditions, kCondFailed)) return std::nullopt;
  std::string since = api::StringAt(Child(trainjob, "metadata"), "creationTimestamp");
  if (const json* resumed = FindCondition(conditions, kCondSuspended);
      resumed && api::StringAt(*resumed, "status") == "False")
    since = api::StringAt(*resumed, "lastTransitionTime", since);
  std::optional<Time> start = ParseRfc3339(since);
  if (!start) return std::nullopt;
  return *start + std::chrono::seconds(seconds);
}

json WithDeadlineExceeded(json status, Time now) {
  if (!status.is_object()) status = json::object();
  json conditions = Child(status, "conditions");
  if (!conditions.is_array()) conditions = json::array();
  SetCondition(
      &conditions,
      ConditionOf(kCondFailed, "True", "DeadlineExceeded", "TrainJob exceeded its active deadline"),
      now);
  status["conditions"] = std::move(conditions);
  return status;
}

bool JobSetUnanswered(const json& jobset, Time now, Duration grace) {
  const json& status = Child(jobset, "status");
  if (status.is_object() && !status.empty()) return false;
  std::optional<Time> created =
      ParseRfc3339(api::StringAt(Child(jobset, "metadata"), "creationTimestamp"));
  return created && now - *created >= grace;
}

}  // namespace trainctl::op
