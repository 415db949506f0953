// Validating admission for Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) at upstream's
// paths. A TrainJob is checked on its own (kinds/trainjob.cc: name, runtimeRef, storageUri,
// numNodes, managedBy, runtimePatches' managers) and, as upstream's webhook does, against the
// runtime it names, fetched live through `lookup`: a runtime that does not exist denies it
// ("<kind> <name> not found: specified trainingRuntime must be created before the TrainJob is
// created", path spec.runtimeRef), and so does what only the pair can tell
// (api/trainjob_resolve.h: reserved env names, an initializer without its step, runtimePatches
// naming what the runtime lacks, numProcPerNode the policy cannot take), and on a runtime with a
// Volcano podGroupPolicy what upstream's Volcano plugin checks (api/trainjob_volcano.h: a queue
// name set empty; a pod template's PriorityClass that does not exist, read through
// `priority_class`). A TrainingRuntime or
// ClusterTrainingRuntime is checked as upstream's runtime webhook and CRD check it
// (api/training_runtime.h). DELETE is always allowed.
//
// Mutating admission, as upstream's TrainJob defaulter: each runtimePatches entry gets its `time`
// — on CREATE the request's time where it has none; on UPDATE an entry whose manager had an
// entry before keeps that entry's time when nothing else in it changed and gets the request's
// time when something did, and a new entry gets the request's time where it has none. The
// answer carries a JSONPatch ("add" of each time set); none when nothing is to set.
//
// Pure given `lookup` (which reads the API) and `now`. Thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "api/trainer_v2_types.h"
#include "common/clock.h"
#include "common/status.h"

namespace trainctl::admission {

inline constexpr const char* kTrainJobWebhookPath =
    "/validate-trainer-kubeflow-org-v1alpha1-trainjob";
inline constexpr const char* kTrainJobMutatingWebhookPath =
    "/mutate-trainer-kubeflow-org-v1alpha1-trainjob";
inline constexpr const char* kTrainingRuntimeWebhookPath =
    "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime";
inline constexpr const char* kClusterTrainingRuntimeWebhookPath =
    "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime";

// The runtime `ref` names for a TrainJob in `ns`, as the API server has it; kNotFound when
// there is none.
using RuntimeLookup =
    std::function<StatusOr<nlohmann::json>(const api::RuntimeRef& ref, const std::string& ns)>;

// Whether the PriorityClass `name` exists: Ok, kNotFound, or the read's error.
using PriorityClassLookup = std::function<Status(const std::string& name)>;

// What the TrainJob review reads of the API.
struct TrainJobLookups {
  RuntimeLookup runtime;
  PriorityClassLookup priority_class;
};

nlohmann::json ReviewTrainJob(const std::string& body, const TrainJobLookups& lookups);
nlohmann::json ReviewTrainingRuntime(const std::string& body);
nlohmann::json DefaultTrainJob(const std::string& body, Time now);

}  // namespace trainctl::admission
