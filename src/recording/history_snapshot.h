// The job history's snapshot of a finished job (jobs::ClusterSnapshot), made from what the
// controller already read for its sync: the job with its stored final status, and one replica
// row and one log target per pod from the pod cache (the node from the cached pod). Events are
// left to the recorder (recording/job_event_log.h). Nothing is listed from the API server.
//
// Pure; thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "engine/plan.h"
#include "jobs/history_capture.h"

namespace trainctl::recording {

// `job`: the object with its final status. `node_of`: pod name → node name.
jobs::ClusterSnapshot MakeSnapshot(nlohmann::json job, api::Kind kind,
                                   const std::vector<engine::ReplicaObservation>& replicas,
                                   const std::map<std::string, std::string>& node_of);

}  // namespace trainctl::recording
