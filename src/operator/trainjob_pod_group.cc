#include "operator/trainjob_pod_group.h"

#include <algorithm>
#include <map>

#include "api/json_fields.h"
#include "api/quantity.h"
#include "api/trainjob_volcano.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op {
namespace {

using nlohmann::json;
using Amounts = std::map<std::string, int64_t>;  // resource → milli-units

const json& PodGroupPolicyOf(const api::Job& job) {
  static const json kNull;
  return job.runtime ? job.runtime->pod_group_policy : kNull;
}

// `requests` (or any resource list) in milli-units; `where` names it in an error.
StatusOr<Amounts> ParseAmounts(const json& list, const std::string& where) {
  Amounts out;
  if (!list.is_object()) return out;
  for (auto it = list.begin(); it != list.end(); ++it) {
    std::string text = it->is_string() ? it->get<std::string>() : it->dump();
    StatusOr<int64_t> milli = api::ParseQuantityMilli(text);
    if (!milli.ok())
      return InvalidError(where + " resource " + it.key() + ": " + milli.status().message());
    out[it.key()] = *milli;
  }
  return out;
}

void AddAmounts(Amounts* to, const Amounts& more) {
  for (const auto& [name, milli] : more) (*to)[name] += milli;
}

void MaxAmounts(Amounts* to, const Amounts& other) {
  for (const auto& [name, milli] : other) (*to)[name] = std::max((*to)[name], milli);
}

bool IsPodLevelResource(const std::string& resource) {
  return resource == "cpu" || resource == "memory" || resource.rfind("hugepages-", 0) == 0;
}

// A container's resources.requests; `what` names it in an error.
StatusOr<Amounts> ContainerRequests(const json& c, const std::string& what) {
  return ParseAmounts(api::ChildAt(api::ChildAt(c, "resources"), "requests"),
                      what + " " + api::StringAt(c, "name"));
}

// One pod's requests, as the scheduler counts them.
StatusOr<Amounts> SchedulerPodRequests(const json& pod_spec, const std::string& where) {
  Amounts total, sidecars, init_peak;
  const json& containers = api::ChildAt(pod_spec, "containers");
  if (containers.is_array())
    for (const json& c : containers) {
      StatusOr<Amounts> r = ContainerRequests(c, where + " container");
      if (!r.ok()) return r.status();
      AddAmounts(&total, *r);
    }
  const json& inits = api::ChildAt(pod_spec, "initContainers");
  if (inits.is_array())
    for (const json& c : inits) {
      StatusOr<Amounts> r = ContainerRequests(c, where + " init container");
      if (!r.ok()) return r.status();
      Amounts while_it_runs = *r;
      if (api::StringAt(c, "restartPolicy") == "Always") {  // a sidecar: runs on beside them
        AddAmounts(&total, *r);
        AddAmounts(&sidecars, *r);
        while_it_runs = sidecars;
      } else {
        AddAmounts(&while_it_runs, sidecars);
      }
      MaxAmounts(&init_peak, while_it_runs);
    }
  MaxAmounts(&total, init_peak);
  StatusOr<Amounts> pod_level =
      ParseAmounts(api::ChildAt(api::ChildAt(pod_spec, "resources"), "requests"), where + " pod");
  if (!pod_level.ok()) return pod_level.status();
  for (const auto& [name, milli] : *pod_level)
    if (IsPodLevelResource(name)) total[name] = milli;
  StatusOr<Amounts> overhead =
      ParseAmounts(api::ChildAt(pod_spec, "overhead"), where + " overhead");
  if (!overhead.ok()) return overhead.status();
  AddAmounts(&total, *overhead);
  return total;
}

}  // namespace

GangKind TrainJobGangKind(const api::Job& job) {
  const json& policy = PodGroupPolicyOf(job);
  if (api::ChildAt(policy, "coscheduling").is_object()) return GangKind::kSchedulerPlugins;
  if (api::ChildAt(policy, "volcano").is_object()) return GangKind::kVolcano;
  return GangKind::kNone;
}

void MarkPodForPodGroup(GangKind kind, const std::string& job_name, json* pod_template) {
  if (kind == GangKind::kNone || !pod_template->is_object()) return;
  json& metadata = (*pod_template)["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  const bool volcano = kind == GangKind::kVolcano;
  json& map = metadata[volcano ? "annotations" : "labels"];
  if (!map.is_object()) map = json::object();
  map[volcano ? kVolcanoGroupNameAnnotation : kCoschedulingPodGroupLabel] = job_name;
}

StatusOr<std::optional<json>> TrainJobPodGroup(const api::Job& job, const json& jobset,
                                               const std::string& trainjob_uid) {
  const GangKind kind = TrainJobGangKind(job);
  if (kind == GangKind::kNone) return std::optional<json>();
  int64_t members = 0;
  Amounts resources;
  std::string priority_class;
  const json& jobs = api::ChildAt(api::ChildAt(jobset, "spec"), "replicatedJobs");
  if (jobs.is_array())
    for (const json& rj : jobs) {
      const json& job_spec = api::ChildAt(api::ChildAt(rj, "template"), "spec");
      const int64_t count = std::max<int64_t>(1, api::IntAt(job_spec, "parallelism", 1));
      const json& pod_spec = api::ChildAt(api::ChildAt(job_spec, "template"), "spec");
      StatusOr<Amounts> one =
          SchedulerPodRequests(pod_spec, "replicatedJobs[" + api::StringAt(rj, "name") + "]");
      if (!one.ok()) return one.status();
      for (const auto& [name, milli] : *one) resources[name] += milli * count;
      members += count;
      if (std::string pc = api::StringAt(pod_spec, "priorityClassName"); !pc.empty())
        priority_class = pc;
    }
  json spec = {{"minMember", members}};
  if (!resources.empty()) {
    json list = json::object();
    for (const auto& [name, milli] : resources) list[name] = api::FormatQuantityMilli(milli);
    spec["minResources"] = std::move(list);
  }
  const json& policy = PodGroupPolicyOf(job);
  if (kind == GangKind::kSchedulerPlugins) {
    const int64_t timeout =
        api::IntAt(api::ChildAt(policy, "coscheduling"), "scheduleTimeoutSeconds", 0);
    spec["scheduleTimeoutSeconds"] = timeout > 0 ? timeout : 60;
  } else {
    const json& annotations = api::ChildAt(api::ChildAt(jobset, "metadata"), "annotations");
    if (api::ChildAt(annotations, api::kVolcanoQueueAnnotation).is_string())
      spec["queue"] = annotations[api::kVolcanoQueueAnnotation];
    if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
    const json& topology = api::ChildAt(api::ChildAt(policy, "volcano"), "networkTopology");
    if (topology.is_object()) spec["networkTopology"] = topology;
  }
  kube::Resource api_of = PodGroupResource(kind);
  return std::optional<json>(
      json{{"apiVersion", api_of.group + "/" + api_of.version},
           {"kind", "PodGroup"},
           {"metadata",
            {{"name", job.name},
             {"namespace", job.namespace_},
             {"ownerReferences", json::array({TrainJobOwnerReference(job.name, trainjob_uid)})}}},
           {"spec", std::move(spec)}});
}

}  // namespace trainctl::op
