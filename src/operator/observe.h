// From the pods the informer cache holds for a job to the observations the decision core
// reads: replica type (the exact-case type whose lowercase matches the pod's replica-type
// label; for an MPIJob of v2beta1, its job-role label), index (pods without a parsable index are
// ignored, as upstream; a v2beta1 worker's counts from 1 when the launcher works too), phase, the
// default container's exit code, its in-place restart count, and whether the pod is being deleted.
//
// Pure and thread-safe. `keep_labels` order must be kObservedLabels (the PodSummary projection
// the operator's informer uses).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"
#include "kube/pod_summary.h"

namespace trainctl::op {

// The labels the operator's pod informer keeps, in this order.
const std::vector<std::string>& ObservedLabels();

// The same slots for a TrainJob's pods, which JobSet labels: its name (the TrainJob's), the
// replicated job (the replica type), the completion index within it, and JobSet's restart count
// (the attempt of a Gang TrainJob).
const std::vector<std::string>& TrainJobObservedLabels();

// Observes the pods of one job, one at a time (the job's replica types looked up once): for a
// caller that visits the cache's pods in place (kube::Store::VisitIndex) instead of copying them.
class ReplicaObserver {
 public:
  explicit ReplicaObserver(const api::Job& job);
  // nullopt: the pod is not one of the job's replicas (unknown type, no parsable index).
  std::optional<engine::ReplicaObservation> Observe(const kube::PodSummary& pod) const;
  // Each replica type → the container whose state (and log) is the replica's.
  std::map<std::string, std::string> Containers() const;

 private:
  const api::Job& job_;
  // lowercase label value → exact type, and the container whose state is the replica's: the
  // kind's default container, or for a group whose template has none of that name (a
  // TrainJob's initializers) its first container.
  struct Type {
    std::string lower, exact, container;
  };
  std::vector<Type> types_;
};

std::vector<engine::ReplicaObservation> ObserveReplicas(const api::Job& job,
                                                        const std::vector<kube::PodSummary>& pods);

}  // namespace trainctl::op
