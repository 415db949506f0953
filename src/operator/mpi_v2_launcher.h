// The launcher of an MPIJob of kubeflow.org/v2beta1 as the decision core sees it. Its pod is
// not the MPIJob's: a batch/v1 Job (`<job>-launcher`, operator/mpi_v2_children.h) makes it, and
// retries it up to its backoffLimit. So the launcher replica is observed through that Job, as
// mpi-operator v0.8.0 does:
//
//   no Job             no launcher observation (the engine plans it; the Job is created)
//   Job Complete       Succeeded (its succeeded pod, or the Job's own name when that is gone)
//   Job Failed         Failed, with the Job's reason and message (BackoffLimitExceeded,
//                      DeadlineExceeded, …), for BackoffLimitExceeded also the last failed
//                      pod's reason and message, as upstream words it
//   otherwise          the Job's current pod (Running before Pending); a pod that failed while
//                      the Job goes on is a retry under way, so Pending: never the job's failure
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"
#include "kube/pod_summary.h"

namespace trainctl::op {

// What the operator's informer keeps of a launcher Job.
struct LauncherJobSummary {
  std::string namespace_;
  std::string name;
  kube::Uid uid{};
  kube::Uid owner_uid{};  // its controller (the MPIJob)
  bool suspended = false;
  bool complete = false;  // condition Complete True
  bool failed = false;    // condition Failed True
  std::string failed_reason;
  std::string failed_message;
};

// nullopt: not a Job with a namespace, a name and a uid.
std::optional<LauncherJobSummary> ProjectLauncherJob(const nlohmann::json& object);

// The reason and message of an MPIJob whose launcher Job failed (upstream's words).
struct LauncherFailure {
  std::string reason;
  std::string message;
};
// `last_failed`: the last failed launcher pod, if any.
LauncherFailure DescribeLauncherFailure(const api::Job& job, const LauncherJobSummary& launcher,
                                        const engine::ReplicaObservation* last_failed);

// `pods`: the observations of the Job's pods (type Launcher, index 0), in the cache's order.
std::optional<engine::ReplicaObservation> ObserveMpiV2Launcher(
    const api::Job& job, const LauncherJobSummary* launcher,
    const std::vector<engine::ReplicaObservation>& pods);

// The job as the decision core judges a v2beta1 MPIJob: its launcher's restart policy Never,
// since the launcher Job has done the retries by the time it reports the launcher Failed.
api::Job MpiV2EngineView(const api::Job& job);

// After the decision core: a launcher Job that failed gives the Failed condition, and the event
// that announces it (a Warning, as upstream's), upstream's reason and message.
void ApplyLauncherFailure(const LauncherFailure& failure, engine::Plan* plan);

}  // namespace trainctl::op
