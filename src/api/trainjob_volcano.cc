#include "api/trainjob_volcano.h"

#include <map>

#include "api/json_fields.h"
#include "api/trainjob_resolve.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

bool IsSystemPriorityClass(const std::string& name) {
  return name == "system-cluster-critical" || name == "system-node-critical";
}

}  // namespace

VolcanoAdmission VolcanoAdmissionChecks(const Job& job) {
  VolcanoAdmission out;
  if (!job.train_job || !job.runtime || !job.runtime->pod_group_policy.is_object() ||
      !job.runtime->pod_group_policy.contains("volcano"))
    return out;
  json labels = json::object(), annotations = json::object();
  TrainJobTemplateMetadata(job, &labels, &annotations);
  auto queue = annotations.find(kVolcanoQueueAnnotation);
  if (queue != annotations.end() && queue->is_string() && queue->get<std::string>().empty())
    out.errors.push_back(Invalid(std::string("spec.annotations[") + kVolcanoQueueAnnotation + "]",
                                 "", "Volcano queue name must not be empty"));
  std::map<std::string, std::string> first_use;
  for (const std::string& group : job.group_order) {
    auto spec = job.replica_specs.find(group);
    if (spec == job.replica_specs.end() || !spec->second.pod_template.is_object()) continue;
    const json& pod_spec = spec->second.pod_template.value("spec", json::object());
    const std::string name = StringAt(pod_spec, "priorityClassName");
    if (name.empty() || IsSystemPriorityClass(name)) continue;
    first_use.emplace(name, group);
  }
  for (const auto& [name, group] : first_use) out.priority_classes.push_back({name, group});
  return out;
}

FieldError MissingPriorityClass(const VolcanoAdmission::PriorityClassUse& use,
                                const std::string& why) {
  return Invalid("spec.templateSpec.priorityClassName", use.name,
                 "PriorityClass \"" + use.name + "\" doesn't exist: " + why +
                     " (the pod template of replicated job " + use.replicated_job +
                     "; a Volcano PodGroup takes its priority from it)");
}

}  // namespace trainctl::api
