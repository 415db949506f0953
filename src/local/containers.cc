#include "local/containers.h"

#include "api/json_fields.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

const json* InitContainers(const api::Job& job, const std::string& type) {
  const json& pod = job.replica_specs.at(type).pod_template;
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) return nullptr;
  const json& spec = pod["spec"];
  return spec.contains("initContainers") ? &spec["initContainers"] : nullptr;
}

bool IsNativeSidecar(const json& c) {
  return c.is_object() && c.contains("restartPolicy") && c["restartPolicy"] == "Always";
}

}  // namespace

StatusOr<std::vector<InitStep>> InitStepsOf(const api::Job& job, const std::string& type) {
  std::vector<InitStep> steps;
  const json* list = InitContainers(job, type);
  std::string base = api::ReplicaSpecPath(job, type) + ".template.spec.initContainers";
  if (!list || list->is_null()) return steps;
  if (!list->is_array()) return InvalidError(base + ": Invalid value: expected a list");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& c = (*list)[i];
    std::string path = base + "[" + std::to_string(i) + "]";
    if (!c.is_object()) return InvalidError(path + ": Invalid value: expected a container");
    std::string name = api::StringAt(c, "name");
    if (name.empty()) return InvalidError(path + ".name: Required value");
    if (IsNativeSidecar(c) || name == kWaitForMasterInit) continue;
    steps.push_back({{&c, path}, name});
  }
  return steps;
}

std::vector<std::string> RunNotes(const api::Job& job) {
  std::vector<std::string> notes;
  for (const auto& [type, spec] : job.replica_specs) {
    if (job.ReplicasOf(type) <= 0) continue;
    api::ContainerAt main = api::DefaultContainerAt(job, type);
    const json* containers = api::Containers(spec.pod_template);
    if (main.container && containers) {
      for (size_t i = 0; i < containers->size(); ++i) {
        if (&(*containers)[i] == main.container) continue;
        notes.push_back(api::ReplicaSpecPath(job, type) + ".template.spec.containers[" +
                        std::to_string(i) + "] (" + api::StringAt((*containers)[i], "name") +
                        ") is not started locally: trainctl run runs the " +
                        job.info().default_container + " container and the init containers");
      }
    }
    const json* inits = InitContainers(job, type);
    if (!inits || !inits->is_array()) continue;
    for (size_t i = 0; i < inits->size(); ++i) {
      const json& c = (*inits)[i];
      std::string path = api::ReplicaSpecPath(job, type) + ".template.spec.initContainers[" +
                         std::to_string(i) + "] (" + api::StringAt(c, "name") + ")";
      if (IsNativeSidecar(c))
        notes.push_back(path + " is a sidecar (restartPolicy: Always) and is not started locally");
      else if (api::StringAt(c, "name") == kWaitForMasterInit)
        notes.push_back(path +
                        " is skipped: it waits for the master's address, and locally the master "
                        "is on this machine");
    }
  }
  return notes;
}

}  // namespace trainctl::local
