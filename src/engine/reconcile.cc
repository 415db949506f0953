#include "engine/reconcile.h"

#include <algorithm>
#include <map>

#include "api/checkpoint_notice.h"
#include "api/progress_policy.h"
#include "api/restart_policy.h"
#include "api/restart_scope.h"
#include "engine/checkpoint_notice.h"
#include "engine/conditions.h"
#include "engine/diagnosis.h"
#include "engine/groups.h"
#include "engine/status_rules.h"

namespace trainctl::engine {
namespace {

using api::Job;

std::string Reason(const Job& job, const char* suffix) {
  return std::string(job.info().name) + suffix;
}

std::string Selector(const Job& job, const std::string& type) {
  return std::string(api::kLabelJobName) + "=" + job.name + "," + api::kLabelOperatorName + "=" +
         job.info().controller_name + "," + api::kLabelReplicaType + "=" + api::ToLower(type);
}

bool RetriesFailures(const std::string& policy) {
  return api::RetriesFailures(api::ParseRestartPolicy(policy));
}

void AddRequeue(Plan* plan, Duration d) {
  if (d < Duration::zero()) d = Duration::zero();
  if (!plan->requeue_after || d < *plan->requeue_after) plan->requeue_after = d;
}

// Replicas to stop when the job has finished, per cleanPodPolicy (§4.12).
void CleanUpFinished(const Job& job, const std::vector<ReplicaObservation>& observed, Plan* plan) {
  std::string policy = job.run_policy.clean_pod_policy.value_or("None");
  for (const ReplicaObservation& r : observed) {
    if (r.terminating) continue;
    bool active = r.phase == Phase::kRunning || r.phase == Phase::kPending;
    if (policy == "All" || (policy == "Running" && active))
      plan->remove.push_back({r.type, r.index, r.name});
  }
}

void RemoveAll(const std::vector<ReplicaObservation>& observed, Plan* plan) {
  for (const ReplicaObservation& r : observed)
    if (!r.terminating) plan->remove.push_back({r.type, r.index, r.name});
}

void ApplyTtl(const Job& job, Time now, Plan* plan) {
  if (!job.run_policy.ttl_seconds_after_finished || job.run_policy.suspend.value_or(false)) return;
  if (!plan->status.completion_time) plan->status.completion_time = now;
  Time expiry = *plan->status.completion_time +
                std::chrono::seconds(*job.run_policy.ttl_seconds_after_finished);
  if (now >= expiry) {
    plan->delete_job = true;
    plan->events.push_back({"Normal", kDeletedJobReason, "Deleted job: " + job.name});
    plan->metrics.push_back(Metric::kJobDeleted);
  } else {
    AddRequeue(plan, std::chrono::duration_cast<Duration>(expiry - now));
  }
}

// A finished job: clean up, fold active into succeeded on success, TTL.
void ReconcileFinished(const Job& job, const std::vector<ReplicaObservation>& observed, Time now,
                       Plan* plan) {
  CleanUpFinished(job, observed, plan);
  if (HasCondition(plan->status, kSucceeded)) {
    for (auto& [type, rs] : plan->status.replica_statuses) {
      rs.succeeded += rs.active;
      rs.active = 0;
    }
  }
  ApplyTtl(job, now, plan);
}

void ReconcileSuspended(const Job& job, const std::vector<ReplicaObservation>& observed, Time now,
                        Plan* plan) {
  // With a checkpoint notice the replicas run on until its stopAt (or until all are done), and
  // count as active meanwhile: their resources are still held.
  if (NoticeAllowsStop(job, observed, api::kNoticeForSuspend, "the job is suspended", now, plan)) {
    RemoveAll(observed, plan);
    for (const auto& [type, spec] : job.replica_specs)
      plan->status.replica_statuses[type].active = 0;
  } else {
    for (const auto& [type, spec] : job.replica_specs) {
      int running = 0;
      for (const ReplicaObservation& r : observed)
        if (r.type == type && !r.terminating && r.phase == Phase::kRunning) running++;
      plan->status.replica_statuses[type].active = running;
    }
  }
  std::string message = std::string(job.info().name) + " " + job.name + " is suspended.";
  if (HasCondition(plan->status, kRunning))
    SetCondition(&plan->status, kRunning, "False", Reason(job, "Suspended"), message, now);
  if (!HasCondition(plan->status, kSuspended)) {
    SetCondition(&plan->status, kSuspended, "True", Reason(job, "Suspended"), message, now);
    plan->events.push_back({"Normal", Reason(job, "Suspended"), message});
  }
}

// In-place restarts of the replicas there now, per type, for the types whose restart policy
// retries failures. A replica being removed is left out: its restarts were added to
// past_restarts when its removal was planned (or it is going away with its count).
std::map<std::string, int> LiveRestarts(const Job& job,
                                        const std::vector<ReplicaObservation>& observed) {
  std::map<std::string, int> out;
  for (const ReplicaObservation& r : observed) {
    if (r.terminating || r.restarts <= 0) continue;
    auto spec = job.replica_specs.find(r.type);
    if (spec != job.replica_specs.end() && RetriesFailures(spec->second.restart_policy))
      out[r.type] += r.restarts;
  }
  return out;
}

int RetriesSoFar(const Job& job, const std::vector<ReplicaObservation>& observed,
                 const api::JobStatus& status) {
  // A Gang job's restarts are its attempts, recorded on the job: never derived from replicas.
  if (api::RestartScopeOf(job) == api::RestartScope::kGang) return api::RestartAttemptOf(job);
  int retries = 0;
  for (const auto& [type, rs] : status.replica_statuses) retries += rs.past_restarts;
  for (const auto& [type, live] : LiveRestarts(job, observed)) retries += live;
  return retries;
}

std::string BackoffMessage(const Job& job) {
  return "Job " + job.name + " has failed because it has reached the specified backoff limit";
}

// A failed replica as counted, with what applying its verdict needs.
struct FailedSlot {
  const ReplicaObservation* pod = nullptr;
  int in_place = 0;  // its in-place restarts, when its policy retries failures
};

// Counts the replica slots: creates missing replicas, scales down, counts replica statuses
// (§4.4), and collects the failed replicas in order (type, then index) for the failure policy.
void CountSlots(const Job& job, const std::vector<ReplicaObservation>& observed, Plan* plan,
                std::map<std::string, api::ReplicaStatus>* statuses,
                std::vector<FailedReplica>* failed, std::vector<FailedSlot>* slots_failed) {
  for (const auto& [type, spec] : job.replica_specs) {
    int replicas = spec.replicas.value_or(1);
    // A group that waits for another (initializers, a held launcher) is not made yet.
    bool may_create = UnmetDependencies(job, type, observed).empty();
    api::ReplicaStatus rs;
    auto previous = plan->status.replica_statuses.find(type);
    if (previous != plan->status.replica_statuses.end())
      rs.past_restarts = previous->second.past_restarts;
    if (job.info().uses_selector) rs.selector = Selector(job, type);

    std::map<int, std::vector<const ReplicaObservation*>> slots;
    for (const ReplicaObservation& r : observed)
      if (r.type == type && r.index >= 0) slots[r.index].push_back(&r);
    int slot_count = replicas;
    if (!slots.empty()) slot_count = std::max(slot_count, slots.rbegin()->first + 1);

    for (int index = 0; index < slot_count; ++index) {
      auto it = slots.find(index);
      const ReplicaObservation* pod = nullptr;
      bool any_terminating = false;
      if (it != slots.end()) {
        for (const ReplicaObservation* r : it->second) {
          if (r->terminating)
            any_terminating = true;
          else if (!pod)
            pod = r;
        }
      }
      if (!pod) {
        // A replacement waits until the old replica is gone (no duplicate names).
        if (index < replicas && !any_terminating && may_create)
          plan->create.push_back({type, index, ""});
        continue;
      }
      if (index >= replicas) plan->remove.push_back({type, index, pod->name});
      switch (pod->phase) {
        case Phase::kRunning:
          rs.active++;
          break;
        case Phase::kSucceeded:
          rs.succeeded++;
          break;
        case Phase::kFailed:
          rs.failed++;
          failed->push_back({type, index, pod->exit_code, index < replicas});
          slots_failed->push_back({pod, RetriesFailures(spec.restart_policy) ? pod->restarts : 0});
          break;
        case Phase::kPending:
          break;
      }
    }
    (*statuses)[type] = rs;
  }
}

bool WithinBackoff(const Job& job, int retries) {
  return !job.run_policy.backoff_limit || retries <= *job.run_policy.backoff_limit;
}

// "Restart all": every replica stops and the job starts again, one retry (the caller checked
// backoffLimit). A Replica-scope job counts it on `type`'s restarts (the first type when
// empty); a Gang job records its next attempt on the job (Plan::restart_attempt) and the
// replicas of the next attempt are created once every one of this attempt is gone. Callers: a
// retried failure of a Gang job, and the progress timeout's Restart policy.
void RestartAll(const Job& job, const std::vector<ReplicaObservation>& observed,
                const std::string& type, const std::string& because, const std::string& why,
                Time now, Plan* plan) {
  RemoveAll(observed, plan);
  plan->create.clear();
  auto counted = plan->status.replica_statuses.find(type);
  if (counted == plan->status.replica_statuses.end())
    counted = plan->status.replica_statuses.begin();
  if (counted != plan->status.replica_statuses.end()) {
    counted->second.past_restarts += 1;
    counted->second.restarts += 1;
  }
  std::string reason = Reason(job, "Restarting");
  std::string message = "job " + job.name + " is restarting because " + because + ".";
  if (api::RestartScopeOf(job) == api::RestartScope::kGang) {
    int next = api::RestartAttemptOf(job) + 1;
    plan->restart_attempt = next;
    // The next attempt's replicas start without a notice.
    if (!api::RecordedNoticeText(job).empty() || plan->notice_record) plan->notice_record = "";
    reason = kGangRestartReason;
    message = "job " + job.name + " is restarting every replica as attempt " +
              std::to_string(next) + " because " + because + ".";
  }
  if (!why.empty()) message += " " + why;
  SetCondition(&plan->status, kRestarting, "True", reason, message, now);
  plan->events.push_back({"Warning", reason, message});
  plan->metrics.push_back(Metric::kJobRestarted);
}

// Counts the slots, asks the failure policy about the failed replicas and carries out its
// verdicts: restarts (counted against backoffLimit, each in-place restart folded into
// past_restarts once) or the job's failure. Returns true while a gang restart waits for its
// checkpoint notice (nothing is created or counted meanwhile).
bool ReconcileReplicas(const Job& job, const std::vector<ReplicaObservation>& observed, Time now,
                       int* retries, Plan* plan) {
  std::map<std::string, int> live = LiveRestarts(job, observed);
  std::map<std::string, api::ReplicaStatus> statuses;
  std::vector<FailedReplica> failed;
  std::vector<FailedSlot> slots;
  CountSlots(job, observed, plan, &statuses, &failed, &slots);
  FailureDecision decision = DecideFailures(job, failed, *retries);
  *retries = decision.retries;
  const bool restart_all = decision.restart_all && !decision.fatal;
  for (size_t i = 0; i < failed.size(); ++i) {
    const FailedReplica& f = failed[i];
    const ReplicaObservation& pod = *slots[i].pod;
    if (f.exit_code) {
      plan->events.push_back({"Normal", "ExitedWithCode",
                              "Pod: " + job.namespace_ + "." + pod.name + " exited with code " +
                                  std::to_string(*f.exit_code)});
    }
    switch (decision.verdicts[i]) {
      case FailureVerdict::kRestart: {
        if (restart_all) break;  // below, once for the whole gang
        statuses[f.type].past_restarts += 1 + slots[i].in_place;
        live[f.type] -= slots[i].in_place;  // now part of past_restarts: counted once
        plan->remove.push_back({f.type, f.index, pod.name});
        std::string message =
            "job " + job.name + " is restarting because " + f.type + " replica(s) failed.";
        SetCondition(&plan->status, kRestarting, "True", Reason(job, "Restarting"), message, now);
        plan->events.push_back({"Warning", Reason(job, "Restarting"), message});
        plan->metrics.push_back(Metric::kJobRestarted);
        break;
      }
      case FailureVerdict::kBackoffExceeded:
        MarkFailed(job, BackoffMessage(job), now, plan);
        break;
      case FailureVerdict::kPermanent: {
        std::string message =
            "job \"" + job.name + "\" is failing because \"" + f.type + "\" replica(s) failed.";
        plan->events.push_back({"Warning", Reason(job, "Failed"), message});
        MarkFailed(job, message, now, plan, /*emit_event=*/false);
        break;
      }
      case FailureVerdict::kNone:
        break;
    }
  }
  for (auto& [type, rs] : statuses) {
    rs.restarts = rs.past_restarts + live[type];
    plan->status.replica_statuses[type] = rs;
  }
  if (restart_all) {
    size_t first = 0;
    while (decision.verdicts[first] != FailureVerdict::kRestart) ++first;
    const FailedReplica& f = failed[first];
    std::string because = f.type + " replica " + std::to_string(f.index) + " failed";
    if (f.exit_code) because += " with exit code " + std::to_string(*f.exit_code);
    if (!f.exit_code && slots[first].pod->end_reason == "Deleted")
      because = f.type + " replica " + std::to_string(f.index) + " was deleted";
    if (!NoticeAllowsStop(job, observed, api::kNoticeForGangRestart,
                          because + " and every replica restarts as attempt " +
                              std::to_string(api::RestartAttemptOf(job) + 1),
                          now, plan)) {
      plan->create.clear();
      return true;
    }
    RestartAll(job, observed, f.type, because, "", now, plan);
  } else if (!decision.fatal && PendingGangRestart(job, *plan, now)) {
    // Announced before, and the replica that failed is gone from view since (its pod deleted
    // while the notice ran): still decided. Nothing refills its slot meanwhile.
    const std::string because = "a replica failed (announced by the checkpoint notice)";
    if (!NoticeAllowsStop(job, observed, api::kNoticeForGangRestart, because, now, plan)) {
      plan->create.clear();
      return true;
    }
    RestartAll(job, observed, "", because, "", now, plan);
  }
  return false;
}

// Appends `text` to the condition `type` when this pass set it, and to its event.
void AppendToNewCondition(const Job& job, const char* type, const std::string& text, Plan* plan) {
  api::Condition* now_set = nullptr;
  for (api::Condition& c : plan->status.conditions)
    if (c.type == type && c.status == "True") now_set = &c;
  if (!now_set) return;
  const api::Condition* before = FindCondition(job.status, type);
  if (before && *before == *now_set) return;  // not set in this pass
  const std::string original = now_set->message;
  now_set->message = original + text;
  for (Event& e : plan->events)
    if (e.reason == now_set->reason && e.message == original) e.message = now_set->message;
}

// Appends who failed first to the Failed or Restarting condition this pass set, and to its
// event (docs/status-machine.md, "Why"); a Succeeded condition set in this pass says which
// process failed while the job ran.
void AttributeFailure(const Job& job, const std::vector<ReplicaObservation>& observed, Plan* plan) {
  // The lead replica decides success (upstream's rule); a rank that failed meanwhile is said.
  if (std::string note = FailedRanksNote(observed); !note.empty())
    AppendToNewCondition(job, kSucceeded, note, plan);
  std::optional<std::string> first = FirstFailure(observed);
  if (!first) return;
  for (const char* type : {kFailed, kRestarting})
    AppendToNewCondition(job, type, "\n" + *first, plan);
}

// ReplicasReady for a job that is neither finished nor suspended; applies the progress policy.
// What a gang's next attempt waits for: its previous attempt's replicas to be gone (attempts
// never overlap). A pod whose node is lost never finishes terminating; the user is told how to
// let the gang go on (force-deleting is theirs to decide: the old rank may still run there).
std::string WaitingForEarlierAttempt(const std::vector<ReplicaObservation>& earlier) {
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < earlier.size() && i < kNamed; ++i)
    names += (i ? ", " : "") + earlier[i].name;
  if (earlier.size() > kNamed) names += " and " + std::to_string(earlier.size() - kNamed) + " more";
  return "; the next attempt starts once every replica of the previous one is gone, still "
         "there: " +
         names +
         " (on a cluster a pod whose node is lost never goes: force-deleting it lets the gang "
         "go on)";
}

void UpdateReadiness(const Job& job, const std::vector<ReplicaObservation>& observed,
                     const std::vector<ReplicaObservation>& earlier, Time now, int retries,
                     Plan* plan) {
  Readiness readiness = AssessReplicas(job, observed, now);
  if (!readiness.ready && !earlier.empty()) readiness.message += WaitingForEarlierAttempt(earlier);
  std::optional<api::ProgressPolicy> policy = api::ProgressPolicyOf(job);
  if (readiness.ready && policy) {
    const api::Condition* current = FindCondition(job.status, kReplicasReady);
    Time ready_since = now;
    if (current && current->status == "True") ready_since = current->last_transition_time;
    if (current && current->reason == "ProgressTimeout")
      ready_since = current->last_transition_time - policy->timeout;  // until new output
    ProgressVerdict verdict = CheckProgress(*policy, observed, ready_since, now);
    if (verdict.check_after) AddRequeue(plan, *verdict.check_after);
    if (verdict.hung) {
      readiness = {false, "ProgressTimeout", verdict.message, true};
      bool first_time = !current || current->reason != "ProgressTimeout";
      if (policy->action == api::ProgressAction::kFail) {
        plan->events.push_back({"Warning", "ProgressTimeout", verdict.message});
        MarkFailed(
            job, "Job " + job.name + " has failed because it made no progress. " + verdict.message,
            now, plan);
        return;
      }
      if (policy->action == api::ProgressAction::kRestart && first_time) {
        if (!WithinBackoff(job, retries + 1)) {
          MarkFailed(job, BackoffMessage(job) + ". " + verdict.message, now, plan);
          return;
        }
        RestartAll(job, observed, "", "it made no progress", verdict.message, now, plan);
      }
    }
  }
  ApplyReadiness(readiness, now, &plan->status, &plan->events, &plan->requeue_after);
}

// A Gang job's replicas split by attempt: those of the job's current attempt, and those of an
// earlier one (a gang restart decided before; being stopped). Other jobs: all are current.
struct AttemptSplit {
  std::vector<ReplicaObservation> current;
  std::vector<ReplicaObservation> earlier;
};

AttemptSplit SplitByAttempt(const Job& job, const std::vector<ReplicaObservation>& observed) {
  AttemptSplit out;
  if (api::RestartScopeOf(job) != api::RestartScope::kGang) {
    out.current = observed;
    return out;
  }
  int attempt = api::RestartAttemptOf(job);
  for (const ReplicaObservation& r : observed) {
    if (r.attempt < attempt) {
      out.earlier.push_back(r);
    } else if (r.terminating && r.index < job.ReplicasOf(r.type) &&
               RetriesFailures(job.replica_specs.at(r.type).restart_policy)) {
      // A replica of the current attempt that goes away while the job runs was not removed by
      // the engine (its removals end an attempt, or the job): deleted or evicted from outside.
      // Its peers are left in a collective without it, so it is a failure of the gang.
      ReplicaObservation gone = r;
      gone.terminating = false;
      gone.phase = Phase::kFailed;
      gone.exit_code.reset();
      gone.end_reason = "Deleted";
      out.current.push_back(std::move(gone));
    } else {
      out.current.push_back(r);
    }
  }
  return out;
}

// The running job's replicas: an earlier attempt's are removed and no replica of the current
// attempt is created while any of them exists (attempts never overlap); then slots, failures,
// kind status rules, who failed first and readiness over the current attempt's.
void ReconcileActive(const Job& job, const std::vector<ReplicaObservation>& all, Time now,
                     int* retries, Plan* plan) {
  AttemptSplit split = SplitByAttempt(job, all);
  const std::vector<ReplicaObservation>& observed = split.current;
  bool restarting_before = HasCondition(plan->status, kRestarting);
  const bool gang_notice = ReconcileReplicas(job, observed, now, retries, plan);
  RemoveAll(split.earlier, plan);
  if (!split.earlier.empty()) plan->create.clear();
  bool restarting_at_start = HasCondition(plan->status, kRestarting) || restarting_before;
  // A gang restart decided in this pass is the job's state: the kind's rules would read the
  // failed replica as a restart (or, for lead-type kinds, a failure) of its own.
  if (!plan->restart_attempt && !gang_notice) {
    FailOnEvictedMpiV2Workers(job, observed, now, plan);  // before the kind's own reason
    ApplyKindStatusRules(job, observed, restarting_at_start, now, plan);
  }
  AttributeFailure(job, observed, plan);
  if (!IsFinished(plan->status)) UpdateReadiness(job, observed, split.earlier, now, *retries, plan);
}

bool SameExceptReconcileTime(api::JobStatus a, api::JobStatus b) {
  a.last_reconcile_time.reset();
  b.last_reconcile_time.reset();
  return a == b;
}

}  // namespace

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending:
      return "Pending";
    case Phase::kRunning:
      return "Running";
    case Phase::kSucceeded:
      return "Succeeded";
    case Phase::kFailed:
      return "Failed";
  }
  return "Unknown";
}

Plan Reconcile(const Job& job, const std::vector<ReplicaObservation>& observed, Time now) {
  Plan plan;
  now = TruncateToSeconds(now);
  if (!api::ManagedByUs(job.run_policy.managed_by)) {
    plan.skip = true;
    plan.status = job.status;
    return plan;
  }
  plan.status = job.status;
  if (api::BeingDeleted(job.metadata) && api::HasNoticeFinalizer(job.metadata)) {
    // Only a notice finalizer keeps a deleted job here (the operator); no status is written.
    ReconcileDeletion(job, observed, now, &plan);
    return plan;
  }
  KeepNoticeFinalizer(job, &plan);
  const std::string kind = job.info().name;
  if (!FindCondition(plan.status, kCreated)) {
    SetCondition(&plan.status, kCreated, "True", Reason(job, "Created"),
                 kind + " " + job.name + " is created.", now);
    plan.metrics.push_back(Metric::kJobCreated);
  }

  if (IsFinished(plan.status)) {
    ReconcileFinished(job, observed, now, &plan);
  } else if (job.run_policy.suspend.value_or(false)) {
    ReconcileSuspended(job, observed, now, &plan);
  } else {
    if (HasCondition(plan.status, kSuspended)) {
      std::string message = kind + " " + job.name + " is resumed.";
      SetCondition(&plan.status, kSuspended, "False", Reason(job, "Resumed"), message, now);
      plan.status.start_time = now;
      plan.events.push_back({"Normal", Reason(job, "Resumed"), message});
    }
    if (!plan.status.start_time) plan.status.start_time = now;
    ExpireNotice(job, &plan);
    int retries = RetriesSoFar(job, observed, plan.status);
    const std::optional<int64_t>& deadline = job.run_policy.active_deadline_seconds;
    if (job.run_policy.backoff_limit && retries > *job.run_policy.backoff_limit) {
      MarkFailed(job, BackoffMessage(job), now, &plan);
      AttributeFailure(job, observed, &plan);
    } else if (deadline && now - *plan.status.start_time >= std::chrono::seconds(*deadline)) {
      MarkFailed(job,
                 "Job " + job.name +
                     " has failed because it was active longer than specified "
                     "deadline",
                 now, &plan);
    } else {
      if (deadline) {
        Time deadline_at = *plan.status.start_time + std::chrono::seconds(*deadline);
        AddRequeue(&plan, std::chrono::duration_cast<Duration>(deadline_at - now));
        NoticeBeforeDeadline(job, observed, deadline_at, now, &plan);
      }
      ReconcileActive(job, observed, now, &retries, &plan);
    }
    if (IsFinished(plan.status)) {
      // Finished in this pass: clean up now rather than on a later pass (upstream #1579, #1546);
      // restarts and creations planned above are moot.
      plan.remove.clear();
      plan.create.clear();
      ReconcileFinished(job, observed, now, &plan);
    }
  }
  if (!IsFinished(plan.status)) NotifyReplicas(job, observed, &plan);
  if (IsFinished(plan.status)) {
    ClearReadiness(&plan.status);
  } else if (job.run_policy.suspend.value_or(false)) {
    ApplyReadiness(SuspendedReadiness(job), now, &plan.status, &plan.events, &plan.requeue_after);
  }
  plan.status_changed = !SameExceptReconcileTime(plan.status, job.status);
  if (plan.status_changed) plan.status.last_reconcile_time = now;
  return plan;
}

}  // namespace trainctl::engine

namespace trainctl::engine {

api::JobStatus FailedStatus(const api::Job& job, const std::string& message, Time now) {
  Plan plan;
  plan.status = job.status;
  MarkFailed(job, message, TruncateToSeconds(now), &plan, /*emit_event=*/false);
  return plan.status;
}

}  // namespace trainctl::engine
