// Turns what the API server returns for a job's pods and events into the shapes the CLI
// prints for local jobs (format.h), and picks the containers whose logs `logs` reads.
// Pure functions over API JSON; malformed items are skipped, never thrown on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/replica_env.h"
#include "engine/plan.h"

namespace trainctl::jobs {

// JobSet's pod labels: the JobSet's name, and the replicated job a pod belongs to.
inline constexpr const char* kLabelJobSetName = "jobset.sigs.k8s.io/jobset-name";
inline constexpr const char* kLabelReplicatedJobName = "jobset.sigs.k8s.io/replicatedjob-name";

// The pods of a PodList whose controller owner reference has `job_uid` (all pods when the
// uid is empty), as describe's replica rows: name, type, index, state (Pending, Running,
// Succeeded, Failed, or the waiting/terminated reason of the main container, Terminating),
// restarts, exitCode (when terminated), node, podIP. Sorted by replica type, then index.
// `type` is the key of `replica_specs` (the job's spec map, e.g. its pytorchReplicaSpecs) that
// the pod's lower-case replica-type label names, "Master" as `trainctl run` shows it; the label
// itself when no key matches. An MPIJob v2beta1's pods are typed by their job-role label, and
// its launcher is the pod of its batch Job `<job>-launcher` (not owned by the job itself). A
// TrainJob's pods are its JobSet's (owned by the JobSet's Jobs, carrying its name label: the
// caller selects them by it), typed by their replicated job and indexed by completion index.
nlohmann::json ReplicaRowsFromPods(const nlohmann::json& pod_list, const std::string& job_uid,
                                   const nlohmann::json& replica_specs = nlohmann::json());

// One replica as a controller's cache sees it, as a row of the same shape (podIP left out);
// `node` "" when unknown. A replica that ended also has reason and finishTime when known.
nlohmann::json ReplicaRowFromObservation(const engine::ReplicaObservation& replica,
                                         const std::string& node);

// `rows` in ReplicaRowsFromPods's order: replica type, then index, then name.
nlohmann::json SortedReplicaRows(std::vector<nlohmann::json> rows);

// One event row {time, type, reason, object, message}; a count above 1 is added to the reason
// as "Reason (x3)".
nlohmann::json EventRow(const std::string& time, const std::string& type, const std::string& reason,
                        long long count, const std::string& object, const std::string& message);

// `listed` (EventRowsFromApi) with the rows of `known` whose type, reason and message none of
// `listed` has (its reason compared without " (xN)"), oldest first.
std::vector<nlohmann::json> MergeEventRows(std::vector<nlohmann::json> listed,
                                           const std::vector<nlohmann::json>& known);

// An EventList as describe's event rows {time, type, reason, object, message}, oldest first.
// time is lastTimestamp, else eventTime, else firstTimestamp; a repeated event's count is
// added to its reason as "Reason (x3)".
std::vector<nlohmann::json> EventRowsFromApi(const nlohmann::json& event_list);

struct LogTarget {
  std::string short_name;  // "worker-0": the pod name without "<job>-"
  std::string pod;
  std::string container;
  bool started = false;  // the container has run (a log exists)
  int restarts = 0;
  std::string state;  // as in ReplicaRowsFromPods, for messages
};

// The pods of `job_name`/`job_uid` in a PodList whose logs to read, sorted by short name.
// `container` is `default_container` when the pod has one by that name, else its first
// container. `replica` ("worker-0" or a pod name) keeps only that one; empty keeps all.
std::vector<LogTarget> LogTargets(const nlohmann::json& pod_list, const std::string& job_name,
                                  const std::string& job_uid, const std::string& default_container,
                                  const std::string& replica);

}  // namespace trainctl::jobs
