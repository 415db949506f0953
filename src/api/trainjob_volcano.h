// What a TrainJob whose runtime asks for a Volcano PodGroup (podGroupPolicy.volcano) must hold
// at admission, as upstream's Volcano plugin checks it: the queue annotation
// scheduling.volcano.sh/queue-name of the JobSet's metadata (the runtime template's, then the
// runtimePatches', TrainJobTemplateMetadata) is not empty when set; every priorityClassName of
// the resolved pod templates names a PriorityClass that exists (system-cluster-critical and
// system-node-critical always do). This file decides what to check; the caller reads the API.
// Pure over a resolved job (api/trainjob_resolve.h); thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/job.h"

namespace trainctl::api {

inline constexpr const char* kVolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name";

struct VolcanoAdmission {
  FieldErrorList errors;  // what the job alone shows wrong (an empty queue name)
  // PriorityClass names that must exist, sorted and unique, each with the replicated job whose
  // pod template names it first.
  struct PriorityClassUse {
    std::string name;
    std::string replicated_job;
  };
  std::vector<PriorityClassUse> priority_classes;
};

// Nothing to check (empty) unless `job` is a resolved TrainJob on a runtime with a volcano
// podGroupPolicy.
VolcanoAdmission VolcanoAdmissionChecks(const Job& job);

// The error for a PriorityClass that `why` says cannot be read (not found, or the read failed),
// at upstream's path spec.templateSpec.priorityClassName.
FieldError MissingPriorityClass(const VolcanoAdmission::PriorityClassUse& use,
                                const std::string& why);

}  // namespace trainctl::api
