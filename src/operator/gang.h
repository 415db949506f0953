// Gang scheduling (upstream v1 behaviour, docs/compatibility.md): with --gang-scheduler-name the
// operator gives each job a PodGroup — Volcano's (scheduling.volcano.sh/v1beta1) for "volcano",
// else scheduler-plugins' (scheduling.x-k8s.io/v1alpha1) with the flag's value as scheduler
// name — and decorates the job's pods so that scheduler places them together. "yunikorn" needs
// no PodGroup: YuniKorn reads its gang from pod annotations (one task group per replica type,
// the application id and queue), which no upstream training operator writes. Pure functions;
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "engine/plan.h"
#include "kube/client.h"

namespace trainctl::op {

enum class GangKind { kNone, kVolcano, kSchedulerPlugins, kYuniKorn };

struct GangConfig {
  GangKind kind = GangKind::kNone;
  std::string scheduler_name;  // the pods' schedulerName
};

// From --gang-scheduler-name: "" → none; "volcano" / "yunikorn" (any case) → those; else
// scheduler-plugins with that scheduler name.
GangConfig GangFromFlag(const std::string& flag);

// The PodGroup API of `gang` (resource for the client, CRD name for the start-up check).
kube::Resource PodGroupResource(GangKind kind);
std::string PodGroupCrdName(GangKind kind);

// minMember: schedulingPolicy.minAvailable, else all replicas.
int32_t MinMember(const api::Job& job);

// minResources: schedulingPolicy.minResources, else the requests (limits where a container has
// no requests) of the first minMember pods, replica types in name order. kInvalid names a
// quantity that does not parse.
StatusOr<nlohmann::json> MinResources(const api::Job& job);

// The PodGroup the job should have. `existing` (null when absent) keeps Volcano's queue.
// Annotations are the job's; the job is its controller.
StatusOr<nlohmann::json> DesiredPodGroup(const api::Job& job, const GangConfig& gang,
                                         const nlohmann::json& existing);

// Volcano admits a gang by moving its PodGroup out of Pending: until then no pods are created.
bool VolcanoHoldsPods(const GangConfig& gang, const nlohmann::json& pod_group);

// What the PodGroup write answers: whether the gang holds the job's pods back, and why, for
// the job's ReplicasReady condition (reason GangNotAdmitted).
struct GangHold {
  bool held = false;
  std::string message;
};
GangHold GangHoldOf(const GangConfig& gang, const nlohmann::json& pod_group);

// True when the gang needs a PodGroup object (Volcano, scheduler-plugins).
bool UsesPodGroups(const GangConfig& gang);

// YuniKorn's `yunikorn.apache.org/task-groups` value: one group per replica type (lowercase
// name, minMember = its replicas, minResource = one pod's requests, limits where none).
StatusOr<nlohmann::json> YuniKornTaskGroups(const api::Job& job);

// Sets schedulerName (unless the template names another scheduler: then a Warning event with
// `scheduler_name_reason`, upstream's reason of the controller building the pod), and
// Volcano's group-name/task-spec annotations, scheduler-plugins' pod-group label, or YuniKorn's
// applicationId/queue labels and app-id, queue, task-group-name, task-groups and
// schedulingPolicyParameters (placeholderTimeoutInSeconds) annotations.
void DecoratePodForGang(const api::Job& job, const std::string& type, const GangConfig& gang,
                        const std::string& scheduler_name_reason, nlohmann::json* pod,
                        std::vector<engine::Event>* events);

}  // namespace trainctl::op
