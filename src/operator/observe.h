// From the pods the informer cache holds for a job to the observations the decision core
// reads: replica type (the exact-case type whose lowercase matches the pod's replica-type
// label), index (pods without a parsable index are ignored, as upstream), phase, the default
// container's exit code, its in-place restart count, and whether the pod is being deleted.
//
// Pure and thread-safe. `keep_labels` order must be kObservedLabels (the PodSummary projection
// the operator's informer uses).
#pragma once

#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"
#include "kube/pod_summary.h"

namespace trainctl::op {

// The labels the operator's pod informer keeps, in this order.
const std::vector<std::string>& ObservedLabels();

std::vector<engine::ReplicaObservation> ObserveReplicas(const api::Job& job,
                                                        const std::vector<kube::PodSummary>& pods);

}  // namespace trainctl::op
