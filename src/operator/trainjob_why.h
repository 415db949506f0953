// What trainctl adds to a TrainJob's status from its pods, by the engine's rules
// (engine/diagnosis.h, the same as for the v1 kinds), where upstream's status says nothing:
//
//   ReplicasReady  first in the list, while the TrainJob is neither Complete nor Failed:
//                  True/AllReplicasRunning, or False with why its nodes are not all running
//                  (Unschedulable, ImagePullBackOff, CrashLoopBackOff, Starting, …, one
//                  bounded paragraph); False/Suspended (WaitingForAdmission under Kueue) while
//                  suspended. As engine::ApplyReadiness: lastTransitionTime moves when the status
//                  does; a new reason is written at once, with an event for a problem; a new
//                  message under the same reason at most every kReadinessRefresh
//                  (`message_written_at`: when the current one was written; unknown = now may),
//                  else `refresh_after` says when to look again. Removed once finished.
//   Failed         the message of the pass that first sets it gets "\nFirst failure: <node>
//                  exited with code C …" and its last output (engine::FirstFailure); later
//                  passes keep that message while the JobSet's stays the same.
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "api/job.h"
#include "common/clock.h"
#include "engine/plan.h"

namespace trainctl::op {

struct TrainJobWhy {
  nlohmann::json status;  // `status` with the conditions above
  std::vector<engine::Event> events;
  std::optional<Duration> refresh_after;
  bool message_written = false;  // ReplicasReady's message (or reason) was written in this pass
};

// `before`: the TrainJob's status as stored; `status`: the one decided from its JobSet
// (TrainJobStatusFrom); `job`: the TrainJob resolved against its runtime; `observed`: its pods.
TrainJobWhy DecideTrainJobWhy(const nlohmann::json& before, nlohmann::json status,
                              const api::Job& job,
                              const std::vector<engine::ReplicaObservation>& observed,
                              bool suspended, Time now, std::optional<Time> message_written_at);

// For a TrainJob already finished (no pods looked at): `status` with the Failed message of
// `before` kept when it is the JobSet's message with the first failure added.
nlohmann::json KeepFirstFailure(const nlohmann::json& before, nlohmann::json status);

}  // namespace trainctl::op
