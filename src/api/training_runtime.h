// Trainer v2's runtimes: decoding a TrainingRuntime or ClusterTrainingRuntime
// (trainer.kubeflow.org/v1alpha1) with its schema defaults, checking it as upstream's CRD rules
// and runtime webhook do (plus what trainctl needs to run it: a trainer step, dependsOn and
// successPolicy naming jobs that exist), and finding the runtime a TrainJob names.
//
// Pure and thread-safe. Errors are kInvalid with every field path ("spec.template.spec.
// replicatedJobs[0].replicas: Invalid value: 2: always must be 1").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/trainer_v2_types.h"
#include "common/status.h"

namespace trainctl::api {

// True when `doc` says apiVersion trainer.kubeflow.org/… and kind TrainingRuntime or
// ClusterTrainingRuntime.
bool IsRuntimeDocument(const nlohmann::json& doc);

// Decodes, defaults (mlPolicy.numNodes 1, the MPI policy's defaults, replicas 1) and checks one
// runtime document; `source` names it in errors and in TrainingRuntime::source.
StatusOr<TrainingRuntime> DecodeTrainingRuntime(const nlohmann::json& doc,
                                                const std::string& source);

// The replicated jobs of a runtime's JobSet template (spec.template.spec.replicatedJobs), in
// order; empty when missing.
const nlohmann::json& ReplicatedJobs(const TrainingRuntime& runtime);
// The ancestor-step label of one replicated job ("" when it has none).
std::string AncestorOf(const nlohmann::json& replicated_job);

// The runtimes a TrainJob may name, in the order they were added; a later one of the same kind,
// namespace and name replaces an earlier one (a file's own runtime over an installed one).
class RuntimeCatalog {
 public:
  void Add(TrainingRuntime runtime);
  const std::vector<TrainingRuntime>& runtimes() const { return runtimes_; }
  // The runtime `ref` names for a TrainJob in `job_namespace`; a TrainingRuntime is looked up
  // in that namespace only. kInvalid at "spec.runtimeRef" naming the runtime, which kind and
  // namespace were searched and what exists.
  StatusOr<const TrainingRuntime*> Find(const RuntimeRef& ref,
                                        const std::string& job_namespace) const;

 private:
  std::vector<TrainingRuntime> runtimes_;
};

}  // namespace trainctl::api
