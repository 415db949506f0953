// Elastic PyTorchJob autoscaling (upstream v1 behaviour, docs/compatibility.md): the autoscaling/v2
// HorizontalPodAutoscaler a job with `elasticPolicy.metrics` should have, and what to do given
// the one that exists. The HPA scales spec.pytorchReplicaSpecs.Worker.replicas through the
// job's scale subresource; the controller then creates or deletes worker pods by index.
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "api/job.h"

namespace trainctl::op {

// name/namespace = the job's, scaleTargetRef {kubeflow.org/v1, PyTorchJob, name},
// minReplicas/maxReplicas from elasticPolicy, metrics = elasticPolicy.metrics, a controller
// owner reference. nullopt when the job should have none (not PyTorch, no elasticPolicy, no
// metrics).
std::optional<nlohmann::json> DesiredHpa(const api::Job& job);

enum class HpaAction { kNone, kCreate, kUpdate, kDelete };

// `existing`: the HPA named after the job (null when absent). Suspended jobs have none; a
// differing spec is updated; an HPA controlled by something else is never touched (kNone).
HpaAction DecideHpa(const api::Job& job, const std::optional<nlohmann::json>& desired,
                    const nlohmann::json& existing);

}  // namespace trainctl::op
