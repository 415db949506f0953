// The job history's snapshot of a finished job (jobs::ClusterSnapshot), made from what the
// controller already read for its sync: the job with its stored final status, and one replica
// row and one log target per pod from the pod cache (the node from the cached pod). Events are
// left to the recorder (recording/job_event_log.h). Nothing is listed from the API server.
//
// The job's apiVersion is the one its kind is served as (kubeflow.org/v1, a TrainJob's
// trainer.kubeflow.org/v1alpha1). A job whose groups come from its runtime (a TrainJob) says
// through SnapshotLayout what its kind's facts cannot: each group's container and its rank 0.
//
// Pure; thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "api/metrics_policy.h"
#include "engine/plan.h"
#include "jobs/history_capture.h"

namespace trainctl::recording {

// What the controller that resolved a job knows of its replicas beyond its kind's facts.
struct SnapshotLayout {
  // Replica type → the container whose state and log are the replica's; a type not here gets
  // the kind's default container.
  std::map<std::string, std::string> containers;
  // True: `metrics` below was decided from the resolved job (api::MetricsPolicyOf) and the
  // record uses it; false: the record reads the job's own annotations (jobs::MetricsReplica).
  bool resolved = false;
  // The replica whose log gives the metric series and whose tail is always kept (rank 0 unless
  // the job names another); nullopt: none (metrics off).
  std::optional<api::MetricsPolicy> metrics;
};

// `job`: the object with its final status. `node_of`: pod name → node name.
jobs::ClusterSnapshot MakeSnapshot(nlohmann::json job, api::Kind kind,
                                   const std::vector<engine::ReplicaObservation>& replicas,
                                   const std::map<std::string, std::string>& node_of,
                                   const SnapshotLayout& layout = {});

}  // namespace trainctl::recording
