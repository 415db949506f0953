#include "engine/checkpoint_notice.h"

#include <algorithm>

#include "api/checkpoint_notice.h"
#include "api/restart_scope.h"

namespace trainctl::engine {
namespace {

void Requeue(Plan* plan, Duration d) {
  if (d < Duration::zero()) d = Duration::zero();
  if (!plan->requeue_after || d < *plan->requeue_after) plan->requeue_after = d;
}

// A replica that can act on a notice: running, not being stopped. A Pending one (unscheduled,
// pulling its image, in its init containers) has nothing to save; it is told once it runs.
bool Alive(const ReplicaObservation& r) { return !r.terminating && r.phase == Phase::kRunning; }

bool BeingRemoved(const ReplicaObservation& r, const Plan& plan) {
  return std::any_of(plan.remove.begin(), plan.remove.end(),
                     [&](const ReplicaRef& ref) { return ref.name == r.name; });
}

// The job's notice after this plan's record so far.
std::string EffectiveText(const api::Job& job, const Plan& plan) {
  return plan.notice_record ? *plan.notice_record : api::RecordedNoticeText(job);
}

void Record(const api::Job& job, const api::Notice& notice, const std::string& because,
            bool sooner_when_done, Plan* plan) {
  plan->notice_record = api::EncodeNotice(notice);
  std::string message = "every replica of " + std::string(job.info().name) + " " + job.name +
                        " stops at " + FormatRfc3339(notice.stop_at) + " because " + because +
                        "; each was told to checkpoint (a notice of " +
                        std::to_string(notice.seconds) + " s in its TRAINCTL_NOTICE_FILE)";
  if (sooner_when_done) message += ", and the stop comes sooner once every one reports done";
  plan->events.push_back({"Normal", kCheckpointNoticeReason, message + "."});
}

}  // namespace

bool NoticeAllowsStop(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                      const std::string& reason, const std::string& because, Time now, Plan* plan) {
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(job);
  if (!policy) return true;
  std::vector<const ReplicaObservation*> alive;
  for (const ReplicaObservation& r : observed)
    if (Alive(r) && !BeingRemoved(r, *plan)) alive.push_back(&r);
  if (alive.empty()) return true;
  const int attempt = api::RestartAttemptOf(job);
  const std::string text = EffectiveText(job, *plan);
  std::optional<api::Notice> recorded = api::DecodeNotice(text);
  if (!recorded || recorded->reason != reason || recorded->attempt != attempt) {
    api::Notice notice{reason, now + std::chrono::seconds(policy->seconds), attempt,
                       policy->seconds};
    Record(job, notice, because, /*sooner_when_done=*/true, plan);
    Requeue(plan, std::chrono::seconds(policy->seconds));
    return false;
  }
  if (now >= recorded->stop_at) return true;
  bool all_done = std::all_of(alive.begin(), alive.end(), [&](const ReplicaObservation* r) {
    return r->notice_done && r->notice == text;
  });
  if (all_done) return true;
  Requeue(plan, std::chrono::duration_cast<Duration>(recorded->stop_at - now));
  return false;
}

void NoticeBeforeDeadline(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                          Time deadline_at, Time now, Plan* plan) {
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(job);
  if (!policy) return;
  Time notice_at = deadline_at - std::chrono::seconds(policy->seconds);
  if (now < notice_at) {
    Requeue(plan, std::chrono::duration_cast<Duration>(notice_at - now));
    return;
  }
  const int attempt = api::RestartAttemptOf(job);
  std::optional<api::Notice> recorded = api::DecodeNotice(EffectiveText(job, *plan));
  if (recorded && recorded->attempt == attempt) {
    if (recorded->reason == api::kNoticeForDeadline && recorded->stop_at == deadline_at) return;
    if (recorded->reason != api::kNoticeForDeadline && recorded->stop_at > now) return;
  }
  if (std::none_of(observed.begin(), observed.end(), Alive)) return;
  int left =
      static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(deadline_at - now).count());
  api::Notice notice{api::kNoticeForDeadline, deadline_at, attempt, std::max(left, 0)};
  Record(job, notice, "its activeDeadlineSeconds is reached", /*sooner_when_done=*/false, plan);
}

void KeepNoticeFinalizer(const api::Job& job, Plan* plan) {
  bool wants = api::NoticePolicyOf(job).has_value();
  if (wants != api::HasNoticeFinalizer(job.metadata)) plan->notice_finalizer = wants;
}

void ReconcileDeletion(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                       Time now, Plan* plan) {
  if (!api::HasNoticeFinalizer(job.metadata)) return;
  if (NoticeAllowsStop(job, observed, api::kNoticeForDelete, "the job is being deleted", now,
                       plan)) {
    plan->notice_finalizer = false;
    return;
  }
  NotifyReplicas(job, observed, plan);
}

void ExpireNotice(const api::Job& job, Plan* plan) {
  std::optional<api::Notice> recorded = api::DecodeNotice(EffectiveText(job, *plan));
  if (recorded && recorded->reason == api::kNoticeForSuspend &&
      !job.run_policy.suspend.value_or(false))
    plan->notice_record = "";
}

void NotifyReplicas(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                    Plan* plan) {
  const std::string text = EffectiveText(job, *plan);
  for (const ReplicaObservation& r : observed)
    if (Alive(r) && r.notice != text && !BeingRemoved(r, *plan))
      plan->notify.push_back({r.type, r.index, r.name});
}

}  // namespace trainctl::engine
