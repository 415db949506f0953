// Replica groups that wait for others (api::GroupDependency): whether a group's replicas may be
// made now, from what is observed, and what the why says while they wait. The one rule behind
// MPIJob v2beta1's WaitForWorkersReady launcher on both substrates and, for Trainer v2,
// initializers that finish before the trainer starts. Pure.
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"

namespace trainctl::engine {

// The dependencies of `type` that `observed` does not meet yet: kReady until every replica of
// the other group is observed not pending (running, or already ended) and not terminating;
// kComplete until every one has succeeded. Empty: its replicas may be made.
std::vector<api::GroupDependency> UnmetDependencies(
    const api::Job& job, const std::string& type, const std::vector<ReplicaObservation>& observed);

// For the why of a job whose group `type` waits: "the Launcher is made once every Worker runs
// (launcherCreationPolicy WaitForWorkersReady)"; "" when it waits for nothing.
std::string HeldGroupPhrase(const std::string& type,
                            const std::vector<api::GroupDependency>& unmet);

}  // namespace trainctl::engine
