// Kueue's view of a job, for the why of a job Kueue holds (docs/operator.md, "Kueue").
//
// Kueue (sigs.k8s.io/kueue) admits a kubeflow.org job through a Workload it makes for the job
// (controller owner: the job; spec.queueName: the job's LocalQueue) and resumes the job once
// the Workload is admitted; it suspends the job again when it evicts the Workload (preemption,
// a stopped queue). The operator keeps a compact summary of each Workload and of each
// LocalQueue (which ClusterQueue it feeds), and a suspended job's ReplicasReady condition says
// what Kueue says, in Kueue's words:
//
//   no Workload yet                  WaitingForAdmission   "... no Workload for it yet" (a
//                                                          reason of its own: a message with
//                                                          the same reason waits 10 s)
//   a Workload not yet looked at     WaitingForAdmission   (no QuotaReserved condition yet)
//   QuotaReserved False, Pending     KueuePending          the queues and Kueue's message
//                                                          ("couldn't assign flavors to pod set
//                                                          Master: insufficient unused quota
//                                                          for cpu in flavor f, 1 more needed")
//   QuotaReserved False, Inadmissible Inadmissible (a Warning) "LocalQueue q doesn't exist", …
//   Evicted True                     Preempted when Kueue's reason is Preempted, else Evicted;
//                                    Kueue's message, then what the Workload waits for now
//   quota reserved, not Admitted     WaitingForAdmissionChecks
//   Admitted, the job still suspended Admitted (Kueue resumes it)
//
// Pure and thread-safe; projectors never throw on odd input (nullopt = do not cache).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/job.h"
#include "engine/diagnosis.h"
#include "kube/client.h"
#include "kube/pod_summary.h"

namespace trainctl::op {

inline const kube::Resource kKueueWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads"};
inline const kube::Resource kKueueLocalQueues{"kueue.x-k8s.io", "v1beta2", "localqueues"};
// The label that names a job's LocalQueue (Kueue's webhook reads it; trainctl copies it to pods).
inline constexpr const char* kKueueQueueLabel = "kueue.x-k8s.io/queue-name";

struct WorkloadCondition {
  bool present = false;
  bool is_true = false;
  std::string reason;
  std::string message;
};

struct KueueWorkloadSummary {
  std::string namespace_;
  std::string name;
  kube::Uid owner_uid{};      // its controller: the job
  std::string queue_name;     // spec.queueName
  std::string cluster_queue;  // status.admission.clusterQueue (while quota is reserved)
  WorkloadCondition quota_reserved, admitted, evicted, finished;
};

struct LocalQueueSummary {
  std::string namespace_;
  std::string name;
  std::string cluster_queue;  // spec.clusterQueue
};

// Whether `reason` is one of the ReplicasReady reasons above (a job Kueue holds suspended).
bool IsKueueReason(const std::string& reason);

std::optional<KueueWorkloadSummary> ProjectKueueWorkload(const nlohmann::json& object);
std::optional<LocalQueueSummary> ProjectLocalQueue(const nlohmann::json& object);

// Whether the why of the Workload's job may differ between the two versions (its owner, queue,
// admission or conditions changed).
bool WorkloadWhyChanged(const KueueWorkloadSummary& before, const KueueWorkloadSummary& after);

// The job's LocalQueue: its kueue.x-k8s.io/queue-name label, else the Workload's queue ("" when
// neither names one).
std::string KueueQueueOf(const api::Job& job, const KueueWorkloadSummary* workload);

// The ReplicasReady of a suspended job that Kueue holds (a queue label or a Workload), from its
// Workload (null: none yet) and the ClusterQueue its LocalQueue feeds ("" when unknown).
// nullopt when Kueue does not hold the job: not suspended, or neither a queue nor a Workload.
// `suspended`: the job's own field (a v1 job's runPolicy.suspend, a TrainJob's spec.suspend).
std::optional<engine::Readiness> KueueReadiness(const api::Job& job, bool suspended,
                                                const KueueWorkloadSummary* workload,
                                                const std::string& cluster_queue);

}  // namespace trainctl::op
