// The pods and headless services the operator creates for a job's replicas, built exactly as
// the upstream operator builds them (upstream v1 behaviour, docs/compatibility.md): names
// `<job>-<type>-<index>`, the template's labels plus the operator's, the template's
// annotations and finalizers, the framework env appended after the user's (on every container,
// or on the default container only where upstream does so), the PyTorch wait-for-master init
// container on Worker pods, the pod restartPolicy from the replica's (ExitCode → Never), and a
// controller owner reference to the job. One addition (docs/compatibility.md): containers get
// `terminationMessagePolicy: FallbackToLogsOnError` unless the template sets a policy, so that
// a replica that fails leaves its last log lines in its status for the job's Failed message.
//
// MPIJob's launcher and workers are built by mpi_children.h (BuildPod hands them over).
// Pure and thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"
#include "common/status.h"
#include "engine/plan.h"
#include "operator/gang.h"

namespace trainctl::op {

// Sets terminationMessagePolicy: FallbackToLogsOnError on every container of `pod_spec` that
// has no policy.
void SetTerminationMessagePolicy(nlohmann::json* pod_spec);

struct PodSettings {
  std::string pytorch_init_image = "alpine:3.10";
  int pytorch_init_max_tries = 100;
  // The text of --pytorch-init-container-template-file (empty: the built-in container) and
  // where it came from, for messages.
  std::string pytorch_init_template;
  std::string pytorch_init_template_source;
  std::string mpi_kubectl_delivery_image = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest";
  GangConfig gang;  // --gang-scheduler-name: pods are decorated for it
  // The runtime status endpoint (--status-server-port): "https://<service>.<ns>.svc:<port>", and
  // the PEM of its CA; empty: pods are not given it. Each container of a v1 job's pods gets the
  // job's endpoint, token and CA (operator/status_env.h; the CA from the namespace's ConfigMap
  // trainctl-trainer-status-ca, which the child writer makes first).
  std::string status_server_url;
  std::function<std::string()> status_ca;
};

// One EnvVar as a core/v1 EnvVar object (value or valueFrom).
nlohmann::json EnvVarJson(const api::EnvVar& e);

// Renders upstream's init-container template: a YAML list of containers in which
// {{.MasterAddr}}, {{.InitContainerImage}} and {{.MaxTries}} (spaces inside the braces allowed)
// are replaced. Any other template action, a YAML error or anything but a non-empty list of
// containers with names is kInvalid, naming `source`.
StatusOr<nlohmann::json> RenderInitContainerTemplate(const std::string& text,
                                                     const std::string& source,
                                                     const std::string& master_addr,
                                                     const std::string& image, int max_tries);

struct BuiltPod {
  nlohmann::json pod;
  std::vector<engine::Event> events;  // e.g. Warning SetPodTemplateRestartPolicy
};

// The owner reference every child of `job` carries (controller, blockOwnerDeletion).
nlohmann::json OwnerReference(const api::Job& job);

// Labels of the job that its pods carry as well: Kueue's `kueue.x-k8s.io/queue-name` (so queue
// membership is visible on the pods), unless the pod template sets it.
void CopyJobLabelsToPod(const api::Job& job, nlohmann::json* pod_labels);

// The four labels that select one replica's pod (and its service's selector).
nlohmann::json ReplicaSelector(const api::Job& job, const std::string& type, int index);

StatusOr<BuiltPod> BuildPod(const api::Job& job, const std::string& type, int index,
                            const api::Endpoints& endpoints, const PodSettings& settings);

// For a job with a checkpoint notice (api/checkpoint_notice.h): a downward-API volume that
// shows the pod's trainctl.dev/checkpoint-notice annotation as the file notice.json, mounted
// read-only at /etc/trainctl/notice in every container, with TRAINCTL_NOTICE_FILE naming it.
// Nothing for other jobs, or when the template already has a volume of that name.
void AddCheckpointNotice(const api::Job& job, nlohmann::json* pod_spec);

StatusOr<nlohmann::json> BuildService(const api::Job& job, const std::string& type, int index);

}  // namespace trainctl::op
