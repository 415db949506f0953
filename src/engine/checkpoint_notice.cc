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

// The job's notice as recorded, when it can be true: a stopAt later than now + the policy's
// seconds was not written by trainctl (a hand-edited annotation) and is ignored, so that no
// stop is held past what the policy allows.
std::optional<api::Notice> Pending(const api::Job& job, const Plan& plan, int seconds, Time now) {
  std::optional<api::Notice> recorded = api::DecodeNotice(EffectiveText(job, plan));
  if (recorded && recorded->stop_at > now + std::chrono::seconds(seconds)) return std::nullopt;
  return recorded;
}

// When a stop announced now comes at the latest: `seconds` from now, never after a notice of the
// same attempt already told (its replicas were promised that time) nor after the job's active
// deadline (which never moves).
Time StopAt(const api::Job& job, const Plan& plan, const std::optional<api::Notice>& pending,
            int attempt, int seconds, Time now) {
  Time stop_at = now + std::chrono::seconds(seconds);
  if (pending && pending->attempt == attempt && pending->stop_at > now)
    stop_at = std::min(stop_at, pending->stop_at);
  const std::optional<int64_t>& deadline = job.run_policy.active_deadline_seconds;
  if (deadline && plan.status.start_time)
    stop_at = std::min(stop_at, *plan.status.start_time + std::chrono::seconds(*deadline));
  return std::max(stop_at, now);
}

}  // namespace

bool PendingGangRestart(const api::Job& job, const Plan& plan, Time now) {
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(job);
  if (!policy || api::RestartScopeOf(job) != api::RestartScope::kGang) return false;
  std::optional<api::Notice> pending = Pending(job, plan, policy->seconds, now);
  return pending && pending->reason == api::kNoticeForGangRestart &&
         pending->attempt == api::RestartAttemptOf(job);
}

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
  std::optional<api::Notice> recorded = Pending(job, *plan, policy->seconds, now);
  if (!recorded || recorded->reason != reason || recorded->attempt != attempt) {
    Time stop_at = StopAt(job, *plan, recorded, attempt, policy->seconds, now);
    if (stop_at <= now) return true;  // the deadline, or a stop already told, is due
    int seconds =
        static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(stop_at - now).count());
    Record(job, {reason, stop_at, attempt, seconds}, because, /*sooner_when_done=*/true, plan);
    Requeue(plan, std::chrono::duration_cast<Duration>(stop_at - now));
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
    // A deadline notice given for another deadline (activeDeadlineSeconds was raised, or the
    // job resumed): taken back.
    std::optional<api::Notice> recorded = api::DecodeNotice(EffectiveText(job, *plan));
    if (recorded && recorded->reason == api::kNoticeForDeadline) plan->notice_record = "";
    return;
  }
  const int attempt = api::RestartAttemptOf(job);
  std::optional<api::Notice> recorded = Pending(job, *plan, policy->seconds, now);
  if (recorded && recorded->attempt == attempt) {
    if (recorded->reason == api::kNoticeForDeadline && recorded->stop_at == deadline_at) return;
    // Another stop was announced for this attempt (a gang restart): it comes no later than the
    // deadline (StopAt), and its own pass carries it out.
    if (recorded->reason != api::kNoticeForDeadline) return;
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
  if (!api::NoticePolicyOf(job)) return;
  const std::string text = EffectiveText(job, *plan);
  for (const ReplicaObservation& r : observed)
    if (Alive(r) && r.notice != text && !BeingRemoved(r, *plan))
      plan->notify.push_back({r.type, r.index, r.name});
}

}  // namespace trainctl::engine
