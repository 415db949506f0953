// Spacing of a job's syncs by their own cost. A sync reads every pod of its job, so a job of
// thousands of replicas whose pods change hundreds of times a second would otherwise be synced
// back to back, each sync redoing the whole job for one more pod. After a sync whose reading and
// deciding took `took` (not its API calls, which do not grow with the job), the job's pod and
// service events wait until `QuietUntil`: kSyncSpacingFactor times that cost, at most
// kMaxSyncSpacing; under kMinSpacedSync (a job of a few replicas) nothing is spaced. So a job's
// syncs use at most 1/(1 + factor) of a worker while its children churn, and no event waits longer
// than the cap. Job changes and timed requeues are not spaced. Pure, thread-safe.
#pragma once

#include <optional>

#include "common/clock.h"

namespace trainctl::op {

inline constexpr int kSyncSpacingFactor = 48;
inline constexpr Duration kMinSpacedSync{1};     // ms
inline constexpr Duration kMaxSyncSpacing{250};  // ms

// nullopt: the job's next event may sync it at once.
std::optional<Time> QuietUntil(Time sync_ended, Duration took);

}  // namespace trainctl::op
