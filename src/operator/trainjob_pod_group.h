// The PodGroup of a TrainJob whose runtime has a podGroupPolicy, as Kubeflow Trainer v2.3.0's
// coscheduling and volcano plugins make it, without I/O.
//
//   coscheduling  scheduling.x-k8s.io/v1alpha1 PodGroup; every pod of the JobSet gets the label
//                 scheduling.x-k8s.io/pod-group: <job>; spec.scheduleTimeoutSeconds is the
//                 policy's (60 when 0 or absent)
//   volcano       scheduling.volcano.sh/v1beta1 PodGroup; every pod gets the annotation
//                 scheduling.k8s.io/group-name: <job>; spec.queue from the JobSet's annotation
//                 scheduling.volcano.sh/queue-name (the runtime template's and patches'),
//                 priorityClassName from the pod templates (the last one that names one wins),
//                 networkTopology copied from the policy
//   both          named and namespaced as the TrainJob, owned by it (controller); minMember is
//                 the pods of every replicated job (parallelism; initializers included);
//                 minResources each pod's requests × its count, summed (requests only; an init
//                 container counts as the scheduler counts it: the largest of each one's
//                 request, with the sidecars started before it, and the containers' total with
//                 every sidecar; pod-level requests replace the containers' for what they name;
//                 spec.overhead added). Neither sets schedulerName: the runtime's template does.
//
// The pod label/annotation is put on the JobSet by BuildJobSet (operator/trainjob_jobset.h).
// Errors: kInvalid naming a quantity that does not parse, with its replicated job and
// container. Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/job.h"
#include "common/status.h"
#include "operator/gang.h"

namespace trainctl::op {

inline constexpr const char* kCoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr const char* kVolcanoGroupNameAnnotation = "scheduling.k8s.io/group-name";

// The PodGroup API the resolved TrainJob's runtime asks for: kSchedulerPlugins
// (coscheduling), kVolcano, or kNone without a podGroupPolicy.
GangKind TrainJobGangKind(const api::Job& job);

// Puts the pod-group label (coscheduling) or annotation (volcano) on a pod template.
void MarkPodForPodGroup(GangKind kind, const std::string& job_name, nlohmann::json* pod_template);

// The PodGroup for `jobset` (BuildJobSet's, for this job); nullopt for kNone.
StatusOr<std::optional<nlohmann::json>> TrainJobPodGroup(const api::Job& job,
                                                         const nlohmann::json& jobset,
                                                         const std::string& trainjob_uid);

}  // namespace trainctl::op
