// What trainctl adds to a TrainJob's status from its pods, by the engine's rules
// (engine/diagnosis.h, the same as for the v1 kinds), where upstream's status says nothing:
//
//   ReplicasReady  first in the list, only while something keeps the nodes of a TrainJob that
//                  is neither Complete nor Failed from running: False with the reason
//                  (Unschedulable, ImagePullBackOff, CrashLoopBackOff, WaitingForAdmission
//                  under Kueue, …) and one bounded paragraph. No condition while they run, start
//                  or are suspended (upstream's Suspended says so): upstream has none then, and
//                  the `kubeflow` SDK reports a TrainJob Running only while it has no condition.
//                  As engine::ApplyReadiness: a new reason is written at once, with a Warning
//                  event (a Normal AllReplicasRunning one when the problem ends); a new message
//                  under the same reason at most every kReadinessRefresh
//                  (`message_written_at`: when the current one was written; unknown = now may),
//                  else `refresh_after` says when to look again.
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
#include "engine/diagnosis.h"
#include "engine/plan.h"

namespace trainctl::op {

struct TrainJobWhy {
  nlohmann::json status;  // `status` with the conditions above
  std::vector<engine::Event> events;
  std::optional<Duration> refresh_after;
  bool message_written = false;  // ReplicasReady's message (or reason) was written in this pass
};

// `before`: the TrainJob's status as stored; `status`: the one decided from its JobSet
// (TrainJobStatusFrom); `job`: the TrainJob resolved against its runtime; `observed`: its pods;
// `queue_why`: what Kueue says of it while it holds it suspended (operator/kueue_workload.h).
TrainJobWhy DecideTrainJobWhy(const nlohmann::json& before, nlohmann::json status,
                              const api::Job& job,
                              const std::vector<engine::ReplicaObservation>& observed,
                              bool suspended, Time now, std::optional<Time> message_written_at,
                              const std::optional<engine::Readiness>& queue_why = std::nullopt);

// For a TrainJob already finished (no pods looked at): `status` with the Failed message of
// `before` kept when it is the JobSet's message with the first failure added.
nlohmann::json KeepFirstFailure(const nlohmann::json& before, nlohmann::json status);

}  // namespace trainctl::op
