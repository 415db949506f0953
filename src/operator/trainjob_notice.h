// The checkpoint notice of a TrainJob on a cluster (api/checkpoint_notice.h, the engine's rules
// in engine/checkpoint_notice.h, the same as for the v1 kinds): what trainctl decides, without
// I/O, before the pods of a TrainJob with trainctl.dev/checkpoint-notice-seconds are stopped
// for a reason that is not their own failure.
//
//   suspend   spec.suspend set while its JobSet runs with nodes alive: the notice (Suspended)
//             is recorded on the TrainJob and told to every pod, and the JobSet's suspend is
//             held (`hold_suspend`) until the notice's stopAt or until every pod alive reported
//             done (the pod annotation trainctl.dev/checkpoint-done); resumed, it is taken back
//   deadline  from activeDeadlineSeconds − its seconds on, the notice (ActiveDeadline, stopAt =
//             the deadline, which never moves); the JobSet is deleted at the deadline as upstream
//   deletion  a TrainJob being deleted holds the notice finalizer (carried while it has a
//             policy) until its pods were told (Deleted) and are done or the seconds ran out;
//             then the finalizer goes and the garbage collector deletes the JobSet and its pods
//   gang      JobSet restarts every node itself the moment one fails: no notice holds it (the
//             survivors are stopped by the JobSet controller, not by trainctl)
//
// `plan` carries what to write, as the engine's Plan does for v1: notice_record (the TrainJob's
// trainctl.dev/checkpoint-notice annotation), notice_finalizer, notify (the pods to tell),
// events and requeue_after. Pure and thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "api/job.h"
#include "common/clock.h"
#include "engine/plan.h"

namespace trainctl::op {

struct TrainJobNotice {
  engine::Plan plan;
  bool hold_suspend = false;  // keep the JobSet running although spec.suspend is set
};

// `job`: the TrainJob resolved against its runtime (its metadata as stored); `jobset_running`:
// its JobSet exists and is not suspended; `observed`: its pods; `deadline`: TrainJobDeadline;
// `being_deleted`: its deletionTimestamp is set.
TrainJobNotice DecideTrainJobNotice(const api::Job& job, bool jobset_running,
                                    const std::vector<engine::ReplicaObservation>& observed,
                                    std::optional<Time> deadline, bool being_deleted, Time now);

}  // namespace trainctl::op
