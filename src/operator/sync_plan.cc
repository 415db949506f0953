#include "operator/sync_plan.h"

#include <algorithm>

#include "engine/conditions.h"
#include "engine/diagnosis.h"
#include "engine/reconcile.h"

namespace trainctl::op {

std::vector<std::string> RunningMpiWorkers(
    const std::vector<engine::ReplicaObservation>& observed) {
  std::vector<std::string> names;
  for (const engine::ReplicaObservation& o : observed)
    if (o.type == "Worker" && o.phase == engine::Phase::kRunning && !o.terminating)
      names.push_back(o.name);
  return names;
}

SyncPlan DecideSync(const SyncInput& input, const SyncOptions& options) {
  const api::Job& job = input.job;
  SyncPlan out;
  out.plan = job.IsMpiV2() ? engine::Reconcile(MpiV2EngineView(job), input.observed, input.now)
                           : engine::Reconcile(job, input.observed, input.now);
  if (out.plan.skip) return out;
  if (input.launcher_failed) ApplyLauncherFailure(*input.launcher_failed, &out.plan);
  out.actions = PlanChildren(job, out.plan, input.services, input.observed, options.children);
  const bool finished = engine::IsFinished(out.plan.status);
  const bool suspended = job.run_policy.suspend.value_or(false);
  if (options.pod_groups) out.gang = finished || suspended ? GangStep::kRemove : GangStep::kEnsure;
  if (job.info().has_launcher() && !finished && !suspended) {
    out.ensure_mpi = true;
    out.mpi_running_workers = RunningMpiWorkers(input.observed);
  }
  out.sync_hpa = job.info().supports_hpa && !finished;
  if (finished && input.hold_for_history) {
    out.record = engine::IsFinished(input.stored);  // the API has the final status to read
    std::optional<Time> done = out.plan.status.completion_time;
    // Only a deletion is held (and only then looked at again): a job that keeps its pods
    // (cleanPodPolicy None) and is not due for its TTL costs nothing while it waits.
    const bool deletes = !out.actions.delete_pods.empty() || out.plan.delete_job;
    if (deletes && (!done || input.now - *done < kHistoryHold)) {
      out.held = true;
      out.actions.delete_pods.clear();
      if (out.plan.delete_job) {
        out.plan.delete_job = false;
        DropUnmadeDeletion(&out.plan.metrics, &out.plan.events);
      }
      // The recorder wakes the job when its record is written; this is the safety net.
      if (!out.plan.requeue_after || *out.plan.requeue_after > kHistoryRecheck)
        out.plan.requeue_after = kHistoryRecheck;
    }
  }
  return out;
}

Status HoldForGang(const StatusOr<GangHold>& ensured, ChildActions* actions,
                   std::optional<Duration>* requeue) {
  if (ensured.ok() && !ensured->held) return Status::Ok();
  actions->create_pods.clear();
  actions->create_services.clear();
  if (!ensured.ok()) return ensured.status();
  *requeue = Duration(1000);
  return Status::Ok();
}

namespace {

// The same failure as the one stored is not a new transition: keep the stored condition's
// times (the engine saw Created=True again, see PrepareStatusForEngine).
void KeepStoredTimes(const api::JobStatus& stored, const char* type, api::JobStatus* status) {
  const api::Condition* before = engine::FindCondition(stored, type);
  if (!before) return;
  for (api::Condition& c : status->conditions) {
    if (c.type != type) continue;
    if (c.status == before->status && c.reason == before->reason && c.message == before->message) {
      c.last_transition_time = before->last_transition_time;
      c.last_update_time = before->last_update_time;
    }
  }
}

}  // namespace

Duration CountWindowFor(Duration base, int32_t replicas) {
  if (base <= Duration(0)) return Duration(0);
  const int64_t steps = std::max<int64_t>(
      1, (int64_t{replicas} + kReplicasPerCountWindow - 1) / kReplicasPerCountWindow);
  const Duration grown = base * steps;
  return std::max(base, std::min(grown, kMaxCountWindow));
}

Duration NotReadyCountWindowFor(Duration base, int32_t replicas) {
  const Duration window = CountWindowFor(base, replicas);
  if (window <= Duration(0)) return window;
  const Duration starting = base < kMaxCountWindow / kNotReadyCountWindowFactor
                                ? base * kNotReadyCountWindowFactor
                                : kMaxCountWindow;
  return std::max(window, std::min(starting, kMaxCountWindow));
}

Duration NotReadyHoldFor(Duration window, const api::JobStatus& stored, Time since) {
  if (window <= Duration(0)) return window;
  const api::Condition* waiting = engine::FindCondition(stored, engine::kReplicasReady);
  if (!waiting || waiting->status != "False" || since <= waiting->last_transition_time)
    return window;
  const Duration waited =
      std::chrono::duration_cast<Duration>(since - waiting->last_transition_time);
  return std::max(window, std::min(waited, kMaxNotReadyHold));
}

namespace {

// A first status held since `since` (CountCoalescing) says it was decided then: Created's times
// and a start time set meanwhile (`stored` has none) are `since`, as the engine would have
// written them at once.
void KeepFirstStatusTimes(Time since, const api::JobStatus& stored, api::JobStatus* status) {
  const Time at = TruncateToSeconds(since);
  for (api::Condition& c : status->conditions)
    if (c.type == engine::kCreated && c.status == "True" && at < c.last_transition_time)
      c.last_transition_time = c.last_update_time = at;
  if (!stored.start_time && status->start_time && at < *status->start_time) status->start_time = at;
}

}  // namespace

StatusDecision DecideStatus(const api::Job& job, const api::JobStatus& planned,
                            const api::JobStatus& stored, const Status& pods,
                            const Status& services, Time now, const std::string& gang_held,
                            const CountCoalescing& coalescing,
                            const std::optional<engine::Readiness>& queue_why) {
  StatusDecision out;
  api::JobStatus status = planned;
  std::optional<engine::Readiness> why;
  if (!pods.ok()) {
    MarkCreateFailure(job, &status, "FailedCreatePod", pods.message(), now);
    out.error = pods;
    bool quota = pods.message().find("exceeded quota") != std::string::npos;
    why = engine::Readiness{false, quota ? "QuotaExceeded" : "FailedCreatePod",
                            "pods cannot be created: " + pods.message(), true};
  } else if (!services.ok()) {
    MarkCreateFailure(job, &status, "FailedCreateService", services.message(), now);
    out.error = services;
  } else if (!gang_held.empty()) {
    why = engine::Readiness{false, "GangNotAdmitted", gang_held, false};
  } else if (queue_why) {
    why = *queue_why;
  }
  if (!out.error.ok()) KeepStoredTimes(stored, engine::kCreated, &status);
  if (why && !engine::IsFinished(status)) {
    // Start from the stored condition, so that an unchanged reason costs no write and no event.
    engine::ClearReadiness(&status);
    if (const api::Condition* c = engine::FindCondition(stored, engine::kReplicasReady))
      status.conditions.insert(status.conditions.begin(), *c);
    engine::ApplyReadiness(*why, TruncateToSeconds(now), &status, &out.events, &out.requeue_after);
  }
  if (SameStatus(status, stored)) return out;
  const bool first = !engine::FindCondition(stored, engine::kCreated);
  if (first && coalescing.first_status_window > Duration(0) && out.error.ok() &&
      gang_held.empty() && OnlyFirstStatus(status, stored)) {
    const Time since = coalescing.held_since.value_or(now);
    const Time due = since + coalescing.first_status_window;
    if (now < due) {
      out.held_since = since;
      out.first_status_held = true;
      const Duration wait = std::chrono::duration_cast<Duration>(due - now);
      if (!out.requeue_after || wait < *out.requeue_after) out.requeue_after = wait;
      return out;
    }
  }
  if (first && coalescing.held_since) KeepFirstStatusTimes(*coalescing.held_since, stored, &status);
  const bool not_ready = OnlyNotReadyDetailsDiffer(status, stored);
  const Time since = coalescing.held_since.value_or(now);
  const Duration window =
      not_ready
          ? NotReadyHoldFor(std::max(coalescing.window, coalescing.not_ready_window), stored, since)
          : coalescing.window;
  if (window > Duration(0) && out.error.ok() &&
      (not_ready || OnlyReplicaCountsDiffer(status, stored))) {
    const Time due = since + window;
    if (now < due) {
      out.held_since = since;
      const Duration wait = std::chrono::duration_cast<Duration>(due - now);
      if (!out.requeue_after || wait < *out.requeue_after) out.requeue_after = wait;
      return out;
    }
  }
  status.last_reconcile_time = TruncateToSeconds(now);
  out.write = std::move(status);
  return out;
}

void DropUnmadeDeletion(std::vector<engine::Metric>* metrics, std::vector<engine::Event>* events) {
  std::erase(*metrics, engine::Metric::kJobDeleted);
  std::erase_if(*events,
                [](const engine::Event& e) { return e.reason == engine::kDeletedJobReason; });
}

}  // namespace trainctl::op
