#include "operator/gang.h"

#include <algorithm>
#include <map>

#include "api/json_fields.h"
#include "api/kinds.h"
#include "api/quantity.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

const json& Policy(const api::Job& job) {
  static const json kEmpty = json::object();
  return job.run_policy.scheduling_policy.is_object() ? job.run_policy.scheduling_policy : kEmpty;
}

// One pod's requests of a replica type (limits for a container without requests), in milli.
StatusOr<std::map<std::string, int64_t>> PodRequests(const std::string& type,
                                                     const api::ReplicaSpec& spec) {
  std::map<std::string, int64_t> sum;
  const json* containers = api::Containers(spec.pod_template);
  if (!containers) return sum;
  for (const json& c : *containers) {
    const json& res = c.is_object() ? c.value("resources", json::object()) : json::object();
    json amounts = res.is_object() ? res.value("requests", json()) : json();
    if (!amounts.is_object() && res.is_object()) amounts = res.value("limits", json());
    if (!amounts.is_object()) continue;
    for (auto it = amounts.begin(); it != amounts.end(); ++it) {
      std::string text = it->is_string() ? it->get<std::string>() : it->dump();
      StatusOr<int64_t> milli = api::ParseQuantityMilli(text);
      if (!milli.ok())
        return InvalidError(type + " container " + api::StringAt(c, "name") + " resource " +
                            it.key() + ": " + milli.status().message());
      sum[it.key()] += *milli;
    }
  }
  return sum;
}

}  // namespace

GangConfig GangFromFlag(const std::string& flag) {
  if (flag.empty()) return {};
  std::string lower = api::ToLower(flag);
  if (lower == "volcano") return {GangKind::kVolcano, "volcano"};
  if (lower == "yunikorn") return {GangKind::kYuniKorn, "yunikorn"};
  return {GangKind::kSchedulerPlugins, flag};
}

kube::Resource PodGroupResource(GangKind kind) {
  if (kind == GangKind::kVolcano) return {"scheduling.volcano.sh", "v1beta1", "podgroups"};
  return {"scheduling.x-k8s.io", "v1alpha1", "podgroups"};
}

std::string PodGroupCrdName(GangKind kind) {
  return kind == GangKind::kVolcano ? "podgroups.scheduling.volcano.sh"
                                    : "podgroups.scheduling.x-k8s.io";
}

int32_t MinMember(const api::Job& job) {
  const json& p = Policy(job);
  if (p.contains("minAvailable") && p["minAvailable"].is_number_integer())
    return p["minAvailable"].get<int32_t>();
  return job.TotalReplicas();
}

StatusOr<json> MinResources(const api::Job& job) {
  const json& p = Policy(job);
  if (p.contains("minResources") && p["minResources"].is_object()) return p["minResources"];
  std::map<std::string, int64_t> sum;
  int32_t left = MinMember(job);
  for (const auto& [type, spec] : job.replica_specs) {  // name order (upstream: all priority 0)
    StatusOr<std::map<std::string, int64_t>> one = PodRequests(type, spec);
    if (!one.ok()) return one.status();
    for (int32_t r = 0; r < job.ReplicasOf(type) && left > 0; ++r, --left)
      for (const auto& [name, milli] : *one) sum[name] += milli;
  }
  json out = json::object();
  for (const auto& [name, milli] : sum) out[name] = api::FormatQuantityMilli(milli);
  return out;
}

StatusOr<json> DesiredPodGroup(const api::Job& job, const GangConfig& gang, const json& existing) {
  StatusOr<json> resources = MinResources(job);
  if (!resources.ok()) return resources.status();
  const json& p = Policy(job);
  json metadata = {{"name", job.name},
                   {"namespace", job.namespace_},
                   {"ownerReferences", json::array({OwnerReference(job)})}};
  if (job.metadata.is_object() && job.metadata.contains("annotations") &&
      job.metadata["annotations"].is_object() && !job.metadata["annotations"].empty())
    metadata["annotations"] = job.metadata["annotations"];
  json spec = {{"minMember", MinMember(job)}};
  if (!resources->empty()) spec["minResources"] = *resources;
  if (gang.kind == GangKind::kVolcano) {
    std::string queue;
    if (existing.is_object())
      queue = api::StringAt(existing.value("spec", json::object()), "queue");
    if (queue.empty() && p.contains("queue") && p["queue"].is_string()) queue = p["queue"];
    spec["queue"] = queue.empty() ? "default" : queue;
    if (p.contains("priorityClass") && p["priorityClass"].is_string() &&
        !p["priorityClass"].get<std::string>().empty())
      spec["priorityClassName"] = p["priorityClass"];
  } else if (p.contains("scheduleTimeoutSeconds") &&
             p["scheduleTimeoutSeconds"].is_number_integer()) {
    spec["scheduleTimeoutSeconds"] = p["scheduleTimeoutSeconds"];
  }
  kube::Resource r = PodGroupResource(gang.kind);
  return json{{"apiVersion", r.group + "/" + r.version},
              {"kind", "PodGroup"},
              {"metadata", metadata},
              {"spec", spec}};
}

bool UsesPodGroups(const GangConfig& gang) {
  return gang.kind == GangKind::kVolcano || gang.kind == GangKind::kSchedulerPlugins;
}

StatusOr<json> YuniKornTaskGroups(const api::Job& job) {
  json groups = json::array();
  for (const auto& [type, spec] : job.replica_specs) {
    StatusOr<std::map<std::string, int64_t>> requests = PodRequests(type, spec);
    if (!requests.ok()) return requests.status();
    json resources = json::object();
    for (const auto& [name, milli] : *requests) resources[name] = api::FormatQuantityMilli(milli);
    groups.push_back({{"name", api::ToLower(type)},
                      {"minMember", job.ReplicasOf(type)},
                      {"minResource", resources}});
  }
  return groups;
}

bool VolcanoHoldsPods(const GangConfig& gang, const json& pod_group) {
  if (gang.kind != GangKind::kVolcano) return false;
  std::string phase;
  if (pod_group.is_object() && pod_group.contains("status") && pod_group["status"].is_object())
    phase = api::StringAt(pod_group["status"], "phase");
  return phase.empty() || phase == "Pending";
}

GangHold GangHoldOf(const GangConfig& gang, const json& pod_group) {
  GangHold out;
  out.held = VolcanoHoldsPods(gang, pod_group);
  if (!out.held) return out;
  std::string name, phase, queue, detail;
  if (pod_group.is_object()) {
    if (pod_group.contains("metadata") && pod_group["metadata"].is_object())
      name = api::StringAt(pod_group["metadata"], "name");
    if (pod_group.contains("spec") && pod_group["spec"].is_object())
      queue = api::StringAt(pod_group["spec"], "queue");
    if (pod_group.contains("status") && pod_group["status"].is_object()) {
      const json& status = pod_group["status"];
      phase = api::StringAt(status, "phase");
      if (status.contains("conditions") && status["conditions"].is_array())
        for (const json& c : status["conditions"])
          if (c.is_object() && c.contains("message") && c["message"].is_string())
            detail = c["message"].get<std::string>();  // the latest says most
    }
  }
  out.message = "PodGroup " + name + " is " + (phase.empty() ? "not yet seen" : phase) +
                " in Volcano" + (queue.empty() ? "" : " (queue \"" + queue + "\")") +
                ": the pods are created once Volcano admits the whole gang";
  if (!detail.empty()) out.message += ": " + detail;
  if (phase.empty()) out.message += " (is Volcano installed and running?)";
  return out;
}

void DecoratePodForGang(const api::Job& job, const std::string& type, const GangConfig& gang,
                        const std::string& scheduler_name_reason, json* pod,
                        std::vector<engine::Event>* events) {
  if (gang.kind == GangKind::kNone) return;
  json& spec = (*pod)["spec"];
  std::string current = spec.contains("schedulerName") && spec["schedulerName"].is_string()
                            ? spec["schedulerName"].get<std::string>()
                            : "";
  if (current.empty()) {
    spec["schedulerName"] = gang.scheduler_name;
  } else if (current != gang.scheduler_name) {
    events->push_back({"Warning", scheduler_name_reason,
                       "Another scheduler is specified when gang-scheduling is enabled and it "
                       "will not be overwritten"});
  }
  json& metadata = (*pod)["metadata"];
  if (gang.kind == GangKind::kVolcano) {
    if (!metadata.contains("annotations") || !metadata["annotations"].is_object())
      metadata["annotations"] = json::object();
    metadata["annotations"]["scheduling.k8s.io/group-name"] = job.name;
    metadata["annotations"]["volcano.sh/task-spec"] = api::ToLower(type);
  } else if (gang.kind == GangKind::kSchedulerPlugins) {
    metadata["labels"]["scheduling.x-k8s.io/pod-group"] = job.name;
  } else if (gang.kind == GangKind::kYuniKorn) {
    if (!metadata.contains("annotations") || !metadata["annotations"].is_object())
      metadata["annotations"] = json::object();
    json& annotations = metadata["annotations"];
    std::string app = job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : "";
    if (app.empty()) app = job.namespace_ + "-" + job.name;
    metadata["labels"]["applicationId"] = app;
    annotations["yunikorn.apache.org/app-id"] = app;
    const json& p = Policy(job);
    if (p.contains("queue") && p["queue"].is_string() && !p["queue"].get<std::string>().empty()) {
      metadata["labels"]["queue"] = p["queue"];
      annotations["yunikorn.apache.org/queue"] = p["queue"];
    }
    annotations["yunikorn.apache.org/task-group-name"] = api::ToLower(type);
    StatusOr<json> groups = YuniKornTaskGroups(job);
    if (groups.ok()) {
      annotations["yunikorn.apache.org/task-groups"] = groups->dump();
    } else {
      events->push_back({"Warning", "FailedGangAnnotations",
                         "YuniKorn task groups not set: " + groups.status().message()});
    }
    if (p.contains("scheduleTimeoutSeconds") && p["scheduleTimeoutSeconds"].is_number_integer())
      annotations["yunikorn.apache.org/schedulingPolicyParameters"] =
          "placeholderTimeoutInSeconds=" + std::to_string(p["scheduleTimeoutSeconds"].get<int>());
  }
}

}  // namespace trainctl::op
