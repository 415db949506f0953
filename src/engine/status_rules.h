// Per-kind success / failure / running rules (docs/compatibility.md), applied after the
// replica statuses of a pass are counted. The rules of a kind are data (api::StatusRules in its
// KindInfo, given by its plugin); this file interprets them. Pure; internal to engine/.
#pragma once

#include <vector>

#include "api/job.h"
#include "engine/plan.h"

namespace trainctl::engine {

// Updates plan->status conditions (and completion time, events, metrics) for `job` from
// plan->status.replica_statuses. `restarting_at_start` is whether Restarting was True before
// the kind rules ran (TF re-asserts it).
void ApplyKindStatusRules(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                          bool restarting_at_start, Time now, Plan* plan);

// An MPIJob of v2beta1, as mpi-operator v0.8 judges it: any worker evicted (its pod Failed
// with reason Evicted) fails the job at once, reason MPIJobEvicted, "<n>/<workers> workers are
// evicted", with a Warning event of that reason. Nothing for other jobs or a finished one.
void FailOnEvictedMpiV2Workers(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                               Time now, Plan* plan);

// Sets Failed (terminal) with the kind's reason (or `reason` when given), completion time,
// event and metric.
void MarkFailed(const api::Job& job, const std::string& message, Time now, Plan* plan,
                bool emit_event = true, const std::string& reason = "");

}  // namespace trainctl::engine
