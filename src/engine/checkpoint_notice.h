// The checkpoint-notice step of the engine (api/checkpoint_notice.h, docs/status-machine.md
// "Checkpoint notice"): before the replicas of a job with a notice policy are stopped for a
// reason that is not their own failure, the job records a notice, every replica is told it, and
// the stop waits until the notice's stopAt or until every replica reported that it is done.
// The active deadline is not moved: its notice comes `seconds` before it.
//
// A notice lives on the job (Plan::notice_record), so a restarted operator or runner holds the
// same stop to the same time; replicas that were not told it yet (or were told another) are
// listed in Plan::notify on every pass. Pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"

namespace trainctl::engine {

inline constexpr const char* kCheckpointNoticeReason = "CheckpointNotice";

// Whether the stop of every replica for `reason` (api::kNoticeFor…) may go ahead in this pass:
// yes without a notice policy, without a replica alive (Running, not being removed: a Pending
// one has nothing to save), once the recorded notice for `reason` reached its stopAt, or once every
// replica alive reported that it is done. Otherwise the stop is held: the first time, the notice
// is recorded with a CheckpointNotice event naming `because`; its stopAt is now + its seconds,
// but never after the stop of a notice already told for this attempt nor after the active
// deadline. A recorded stopAt beyond now + the policy's seconds (not trainctl's) is ignored.
bool NoticeAllowsStop(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                      const std::string& reason, const std::string& because, Time now, Plan* plan);

// Whether a gang restart of the job's current attempt was announced (a GangRestart notice is
// pending): it is then decided, even once the failed replica is gone from view (its pod
// deleted meanwhile): nothing is created in its slot and the restart goes ahead at stopAt.
bool PendingGangRestart(const api::Job& job, const Plan& plan, Time now);

// The active deadline's notice: from `deadline_at` − its seconds on, the notice is recorded
// (once, and not over another notice still pending); before that, a requeue for it.
void NoticeBeforeDeadline(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                          Time deadline_at, Time now, Plan* plan);

// A job with a notice policy carries the notice finalizer, one without drops it.
void KeepNoticeFinalizer(const api::Job& job, Plan* plan);

// A job being deleted (deletionTimestamp set) that holds the notice finalizer: its running
// replicas are told (reason Deleted) and the finalizer is released once NoticeAllowsStop says
// the stop may go ahead; the garbage collector then deletes the pods. Nothing else is decided.
void ReconcileDeletion(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                       Time now, Plan* plan);

// Takes back a notice whose reason is over (a Suspended notice once the job is not suspended).
void ExpireNotice(const api::Job& job, Plan* plan);

// Lists in plan->notify the replicas alive, and not being removed by this plan, that were told
// another notice than the job's (after this plan's notice_record).
void NotifyReplicas(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                    Plan* plan);

}  // namespace trainctl::engine
