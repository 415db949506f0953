// The decision core: (job, observed replicas, now) → plan. Shared by `trainctl run` and
// `trainctl operator`.
//
// Pure: no I/O, no clock reads, no global state; deterministic for equal inputs, thread-safe.
// The job must be defaulted (api::ApplyDefaults). Implements the upstream reconcile algorithm
// with the fixes listed in docs/compatibility.md.
#pragma once

#include <vector>

#include "api/job.h"
#include "engine/failure_policy.h"  // IsRetryableExitCode
#include "engine/plan.h"

namespace trainctl::engine {

Plan Reconcile(const api::Job& job, const std::vector<ReplicaObservation>& observed, Time now);

}  // namespace trainctl::engine

namespace trainctl::engine {

// The status of `job` after it is failed from outside the decision core (e.g. the local runner
// was interrupted): Failed=True with the kind's reason and `message`, completion time set.
api::JobStatus FailedStatus(const api::Job& job, const std::string& message, Time now);

}  // namespace trainctl::engine
