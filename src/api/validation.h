// Validation of a job as upstream's admission webhooks (and the MPIJob controller) check it,
// upstream v1 behaviour, docs/compatibility.md, plus the enum checks trainctl adds
// (docs/compatibility.md). Runs on the *undefaulted* job, as the webhooks do.
// Pure; returns every problem found, in field-path form.
#pragma once

#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/job.h"

namespace trainctl::api {

// The most replicas of one type: the operator and the runner hold a record per replica, so an
// absurd count (a typo, a hostile manifest) is refused rather than exhausting memory. Upstream
// sets no bound; Kubernetes' own limit on pods per cluster is far below this.
inline constexpr int32_t kMaxReplicasPerType = 100000;

struct ValidationResult {
  FieldErrorList errors;
  std::vector<std::string> warnings;  // e.g. deprecated fields; not errors
};

// The generic checks (name, managedBy, replica specs present, restart policies, replica counts,
// runPolicy), then the kind's own (KindPlugin::Validate).
ValidationResult ValidateJob(const Job& job);
// Update-time rules (immutable fields), in addition to ValidateJob(new_job).
FieldErrorList ValidateJobUpdate(const Job& old_job, const Job& new_job);

// Field paths of the replica specs map ("spec.pytorchReplicaSpecs") and of one replica spec
// ("spec.pytorchReplicaSpecs[Worker]"); a resolved TrainJob's name its runtime's replicated
// jobs ("ClusterTrainingRuntime torch-distributed spec.template.spec.replicatedJobs[node]").
std::string ReplicaSpecsPath(const Job& job);
std::string ReplicaSpecPath(const Job& job, const std::string& type);

// The container of `type`'s pod template that runs the kind's default container (by name, else
// the first), with its field path "spec.<map>[<type>].template.spec.containers[<i>]";
// `container` is null when the template has no containers.
struct ContainerAt {
  const nlohmann::json* container = nullptr;
  std::string path;
};
ContainerAt DefaultContainerAt(const Job& job, const std::string& type);

}  // namespace trainctl::api
