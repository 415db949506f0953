#include "operator/trainjob_notice.h"

#include "api/checkpoint_notice.h"
#include "engine/checkpoint_notice.h"

namespace trainctl::op {

TrainJobNotice DecideTrainJobNotice(const api::Job& job, bool jobset_running,
                                    const std::vector<engine::ReplicaObservation>& observed,
                                    std::optional<Time> deadline, bool being_deleted, Time now) {
  TrainJobNotice out;
  engine::Plan& plan = out.plan;
  if (being_deleted) {
    engine::ReconcileDeletion(job, observed, now, &plan);
    return out;
  }
  engine::KeepNoticeFinalizer(job, &plan);
  if (!api::NoticePolicyOf(job)) return out;
  // The engine bounds a stop's notice by the active deadline from the job's start: a TrainJob's
  // counts from its creation or last resume (TrainJobDeadline).
  if (deadline && job.run_policy.active_deadline_seconds)
    plan.status.start_time =
        *deadline - std::chrono::seconds(*job.run_policy.active_deadline_seconds);
  engine::ExpireNotice(job, &plan);
  if (job.run_policy.suspend.value_or(false) && jobset_running)
    out.hold_suspend = !engine::NoticeAllowsStop(job, observed, api::kNoticeForSuspend,
                                                 "the TrainJob was suspended", now, &plan);
  if (deadline && now < *deadline)
    engine::NoticeBeforeDeadline(job, observed, *deadline, now, &plan);
  engine::NotifyReplicas(job, observed, &plan);
  return out;
}

}  // namespace trainctl::op
