#include "operator/sync_plan.h"

#include "engine/conditions.h"
#include "engine/reconcile.h"

namespace trainctl::op {

std::vector<std::string> RunningMpiWorkers(const std::vector<engine::ReplicaObservation>& observed) {
  std::vector<std::string> names;
  for (const engine::ReplicaObservation& o : observed)
    if (o.type == "Worker" && o.phase == engine::Phase::kRunning && !o.terminating)
      names.push_back(o.name);
  return names;
}

SyncPlan DecideSync(const SyncInput& input, const SyncOptions& options) {
  const api::Job& job = input.job;
  SyncPlan out;
  out.plan = engine::Reconcile(job, input.observed, input.now);
  if (out.plan.skip) return out;
  out.actions = PlanChildren(job, out.plan, input.services, input.observed, options.children);
  const bool finished = engine::IsFinished(out.plan.status);
  const bool suspended = job.run_policy.suspend.value_or(false);
  if (options.pod_groups) out.gang = finished || suspended ? GangStep::kRemove : GangStep::kEnsure;
  if (job.info().has_launcher() && !finished && !suspended) {
    out.ensure_mpi = true;
    out.mpi_running_workers = RunningMpiWorkers(input.observed);
  }
  out.sync_hpa = job.info().supports_hpa && !finished;
  return out;
}

Status HoldForGang(const StatusOr<bool>& ensured, ChildActions* actions,
                   std::optional<Duration>* requeue) {
  if (ensured.ok() && !*ensured) return Status::Ok();
  actions->create_pods.clear();
  actions->create_services.clear();
  if (!ensured.ok()) return ensured.status();
  *requeue = Duration(1000);
  return Status::Ok();
}

StatusDecision DecideStatus(const api::Job& job, const api::JobStatus& planned,
                            const api::JobStatus& stored, const Status& pods,
                            const Status& services, Time now) {
  StatusDecision out;
  api::JobStatus status = planned;
  if (!pods.ok()) {
    MarkCreateFailure(job, &status, "FailedCreatePod", pods.message(), now);
    out.error = pods;
  } else if (!services.ok()) {
    MarkCreateFailure(job, &status, "FailedCreateService", services.message(), now);
    out.error = services;
  }
  if (!SameStatus(status, stored)) {
    status.last_reconcile_time = TruncateToSeconds(now);
    out.write = std::move(status);
  }
  return out;
}

}  // namespace trainctl::op
