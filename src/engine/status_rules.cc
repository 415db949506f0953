#include "engine/status_rules.h"

#include "api/restart_policy.h"
#include "engine/conditions.h"

namespace trainctl::engine {
namespace {

using Shape = api::StatusRules::Shape;

struct Counts {
  int replicas = 0, expected = 0, running = 0, failed = 0, succeeded = 0;
};

Counts CountsOf(const api::Job& job, const Plan& plan, const std::string& type) {
  Counts c;
  c.replicas = job.ReplicasOf(type);
  auto it = plan.status.replica_statuses.find(type);
  if (it != plan.status.replica_statuses.end()) {
    c.running = it->second.active;
    c.failed = it->second.failed;
    c.succeeded = it->second.succeeded;
  }
  c.expected = c.replicas - c.succeeded;
  return c;
}

std::string Reason(const api::Job& job, const char* suffix) {
  return std::string(job.info().name) + suffix;
}

void MarkRunning(const api::Job& job, const std::string& message, Time now, Plan* plan) {
  SetCondition(&plan->status, kRunning, "True", Reason(job, "Running"), message, now);
}

void MarkSucceeded(const api::Job& job, const std::string& message, Time now, Plan* plan) {
  if (HasCondition(plan->status, kFailed)) return;
  if (!plan->status.completion_time) plan->status.completion_time = now;
  if (SetCondition(&plan->status, kSucceeded, "True", Reason(job, "Succeeded"), message, now)) {
    plan->events.push_back({"Normal", Reason(job, "Succeeded"), message});
    plan->metrics.push_back(Metric::kJobSucceeded);
  }
}

void MarkRestarting(const api::Job& job, const std::string& message, Time now, Plan* plan) {
  if (SetCondition(&plan->status, kRestarting, "True", Reason(job, "Restarting"), message, now))
    plan->events.push_back({"Warning", Reason(job, "Restarting"), message});
}

std::string FailedBecause(const api::Job& job, const std::string& prefix, int n,
                          const std::string& type) {
  return prefix + " is failed because " + std::to_string(n) + " " + type + " replica(s) failed.";
}

std::string RestartingBecause(const std::string& prefix, int n, const std::string& type) {
  return prefix + " is restarting because " + std::to_string(n) + " " + type +
         " replica(s) failed.";
}

// Order in which types are evaluated: the kind's declared order (stable, unlike upstream's
// Go map iteration), then types the kind does not know.
std::vector<std::string> TypesInOrder(const api::Job& job) {
  std::vector<std::string> out;
  const api::StatusRules& rules = job.info().status_rules;
  const std::vector<std::string>& order =
      rules.type_order.empty() ? job.ReplicaTypes() : rules.type_order;
  for (const std::string& t : order)
    if (job.HasType(t)) out.push_back(t);
  for (const auto& [t, spec] : job.replica_specs) {
    bool known = false;
    for (const std::string& o : order) known = known || o == t;
    if (!known) out.push_back(t);
  }
  return out;
}

api::RestartPolicy PolicyOf(const api::Job& job, const std::string& type) {
  auto it = job.replica_specs.find(type);
  return it == job.replica_specs.end() ? api::RestartPolicy::kUnset
                                       : api::ParseRestartPolicy(it->second.restart_policy);
}

// Shape::kMasterOrWorkers: PyTorch, Paddle and JAX (§4.7).
void MasterOrWorkers(const api::Job& job, Time now, Plan* plan) {
  const api::StatusRules& rules = job.info().status_rules;
  const std::string kind = job.info().name;
  const std::string short_name = kind + " " + job.name;
  const std::string long_name = kind + " " + job.namespace_ + "/" + job.name;
  bool has_master = rules.master_decides && job.HasType("Master");
  for (const std::string& type : TypesInOrder(job)) {
    Counts c = CountsOf(job, *plan, type);
    if (has_master) {
      if (type == "Master") {
        if (c.running > 0) MarkRunning(job, short_name + " is running.", now, plan);
        if (c.expected == 0) {
          MarkSucceeded(job, short_name + " is successfully completed.", now, plan);
          return;
        }
      }
    } else if (type == "Worker") {
      bool elastic_done = rules.elastic_success && job.elastic_policy && c.succeeded > 0;
      if (c.running > 0 && c.expected != 0) MarkRunning(job, long_name + " is running.", now, plan);
      if (c.expected == 0 || elastic_done) {
        MarkSucceeded(job, long_name + " successfully completed.", now, plan);
        return;
      }
    }
    if (c.failed > 0 && c.replicas > c.succeeded + c.running) {
      const api::RestartPolicy policy = PolicyOf(job, type);
      if (policy != api::RestartPolicy::kNever &&
          !(policy == api::RestartPolicy::kExitCode && HasCondition(plan->status, kFailed))) {
        MarkRestarting(job, RestartingBecause(short_name, c.failed, type), now, plan);
      } else {
        MarkFailed(job, FailedBecause(job, short_name, c.failed, type), now, plan);
      }
    }
  }
}

bool WorkerZeroCompleted(const api::Job& job, const std::vector<ReplicaObservation>& observed) {
  if (!job.HasType("Worker")) return true;
  for (const ReplicaObservation& r : observed)
    if (r.type == "Worker" && r.index == 0 && !r.terminating && r.phase == Phase::kSucceeded &&
        r.exit_code.value_or(0) == 0)
      return true;
  return false;
}

// Shape::kChiefOrWorkers: TF.
void ChiefOrWorkers(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                    bool restarting_at_start, Time now, Plan* plan) {
  const std::string name = std::string(job.info().name) + " " + job.namespace_ + "/" + job.name;
  bool has_chief = job.HasType("Chief") || job.HasType("Master");
  bool worker0_done = WorkerZeroCompleted(job, observed);
  for (const std::string& type : TypesInOrder(job)) {
    Counts c = CountsOf(job, *plan, type);
    bool is_chief = type == "Chief" || type == "Master";
    if (has_chief && is_chief) {
      if (c.running > 0) MarkRunning(job, name + " is running.", now, plan);
      if (c.expected == 0) MarkSucceeded(job, name + " successfully completed.", now, plan);
    } else if (!has_chief && type == "Worker") {
      if (c.running > 0) MarkRunning(job, name + " is running.", now, plan);
      if (c.expected == 0 || (worker0_done && job.success_policy != "AllWorkers"))
        MarkSucceeded(job, name + " successfully completed.", now, plan);
    }
    if (c.failed > 0) {
      if (restarting_at_start) {
        MarkRestarting(job, RestartingBecause(name, c.failed, type), now, plan);
      } else if (job.enable_dynamic_worker && type == "Worker") {
        continue;
      } else {
        MarkFailed(job,
                   name + " has failed because " + std::to_string(c.failed) + " " + type +
                       " replica(s) failed.",
                   now, plan);
      }
    }
  }
}

// The lead type of Shape::kLeadType: the first of the kind's lead types the job has, else the
// last one.
std::string LeadType(const api::Job& job, const api::StatusRules& rules) {
  for (const std::string& type : rules.lead_types)
    if (job.HasType(type)) return type;
  return rules.lead_types.empty() ? "" : rules.lead_types.back();
}

// Shape::kLeadType: XGBoost, MPI and MX. The lead type decides success; failures restart only
// under ExitCode.
void LeadTypeRules(const api::Job& job, Time now, Plan* plan) {
  const api::StatusRules& rules = job.info().status_rules;
  const std::string lead = LeadType(job, rules);
  const std::string name_prefix = std::string(job.info().name) + " " + job.name;
  for (const std::string& type : TypesInOrder(job)) {
    Counts c = CountsOf(job, *plan, type);
    if (type == lead) {
      if (c.running > 0) MarkRunning(job, name_prefix + " is running.", now, plan);
      if (c.expected == 0) {
        if (rules.running_on_finish) MarkRunning(job, name_prefix + " is running.", now, plan);
        MarkSucceeded(job, name_prefix + " is successfully completed.", now, plan);
        return;
      }
    }
    if (c.failed > 0) {
      if (rules.running_on_finish) MarkRunning(job, name_prefix + " is running.", now, plan);
      if (PolicyOf(job, type) == api::RestartPolicy::kExitCode &&
          !HasCondition(plan->status, kFailed)) {
        MarkRestarting(job, RestartingBecause(name_prefix, c.failed, type), now, plan);
      } else {
        std::string prefix =
            rules.failed_prefix.empty() ? name_prefix : rules.failed_prefix + " " + job.name;
        MarkFailed(job, FailedBecause(job, prefix, c.failed, type), now, plan);
      }
    }
  }
}

// Shape::kJobSet: a TrainJob, as JobSet judges its replicated jobs. Running while any replica
// runs; succeeded once every group of the successPolicy has (or any, under operator Any);
// a failed replica restarts the job unless its group's restart policy is Never.
void JobSetRules(const api::Job& job, Time now, Plan* plan) {
  const std::string name = std::string(job.info().name) + " " + job.namespace_ + "/" + job.name;
  const std::vector<std::string> types = TypesInOrder(job);
  const std::vector<std::string>& targets = job.success_groups.empty() ? types : job.success_groups;
  bool running = false;
  int done = 0;
  for (const std::string& type : types) {
    Counts c = CountsOf(job, *plan, type);
    running = running || c.running > 0;
    if (c.failed > 0 && c.replicas > c.succeeded + c.running) {
      if (PolicyOf(job, type) != api::RestartPolicy::kNever)
        MarkRestarting(job, RestartingBecause(name, c.failed, type), now, plan);
      else
        MarkFailed(job, FailedBecause(job, name, c.failed, type), now, plan);
    }
  }
  for (const std::string& type : targets)
    if (job.HasType(type) && CountsOf(job, *plan, type).expected <= 0) ++done;
  const bool succeeded = job.success_any ? done > 0 : done == static_cast<int>(targets.size());
  if (running && !succeeded) MarkRunning(job, name + " is running.", now, plan);
  if (succeeded) MarkSucceeded(job, name + " successfully completed.", now, plan);
}

}  // namespace

void MarkFailed(const api::Job& job, const std::string& message, Time now, Plan* plan,
                bool emit_event, const std::string& reason) {
  if (HasCondition(plan->status, kFailed)) return;
  const std::string why = reason.empty() ? Reason(job, "Failed") : reason;
  if (!plan->status.completion_time) plan->status.completion_time = now;
  SetCondition(&plan->status, kFailed, "True", why, message, now);
  if (emit_event) plan->events.push_back({"Normal", why, message});
  plan->metrics.push_back(Metric::kJobFailed);
}

void FailOnEvictedMpiV2Workers(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                               Time now, Plan* plan) {
  if (!job.IsMpiV2() || IsFinished(plan->status)) return;
  int evicted = 0;
  for (const ReplicaObservation& r : observed)
    if (r.type == "Worker" && r.phase == Phase::kFailed && r.end_reason == "Evicted") ++evicted;
  if (evicted == 0) return;
  const std::string reason = "MPIJobEvicted";  // mpi-operator v0.8's, not Reason(job, …)
  std::string message = std::to_string(evicted) + "/" + std::to_string(job.ReplicasOf("Worker")) +
                        " workers are evicted";
  plan->events.push_back({"Warning", reason, message});
  MarkFailed(job, message, now, plan, /*emit_event=*/false, reason);
}

void ApplyKindStatusRules(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                          bool restarting_at_start, Time now, Plan* plan) {
  switch (job.info().status_rules.shape) {
    case Shape::kMasterOrWorkers:
      MasterOrWorkers(job, now, plan);
      break;
    case Shape::kChiefOrWorkers:
      ChiefOrWorkers(job, observed, restarting_at_start, now, plan);
      break;
    case Shape::kLeadType:
      LeadTypeRules(job, now, plan);
      break;
    case Shape::kJobSet:
      JobSetRules(job, now, plan);
      break;
  }
}

}  // namespace trainctl::engine
