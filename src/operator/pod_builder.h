// The pods and headless services the operator creates for a job's replicas, built exactly as
// the upstream operator builds them (reference kubeflow-v1.md §3.1–§3.4): names
// `<job>-<type>-<index>`, the template's labels plus the operator's, the template's
// annotations and finalizers, the framework env appended after the user's (on every container,
// or on the default container only where upstream does so), the PyTorch wait-for-master init
// container on Worker pods, the pod restartPolicy from the replica's (ExitCode → Never), and a
// controller owner reference to the job.
//
// Pure and thread-safe. MPIJob's launcher/worker layout is not built here yet.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "engine/plan.h"
#include "frameworks/framework.h"

namespace trainctl::op {

struct PodSettings {
  std::string pytorch_init_image = "alpine:3.10";
  int pytorch_init_max_tries = 100;
};

struct BuiltPod {
  nlohmann::json pod;
  std::vector<engine::Event> events;  // e.g. Warning SetPodTemplateRestartPolicy
};

// The owner reference every child of `job` carries (controller, blockOwnerDeletion).
nlohmann::json OwnerReference(const api::Job& job);

// The four labels that select one replica's pod (and its service's selector).
nlohmann::json ReplicaSelector(const api::Job& job, const std::string& type, int index);

StatusOr<BuiltPod> BuildPod(const api::Job& job, const std::string& type, int index,
                            const frameworks::Endpoints& endpoints, const PodSettings& settings);

StatusOr<nlohmann::json> BuildService(const api::Job& job, const std::string& type, int index);

}  // namespace trainctl::op
