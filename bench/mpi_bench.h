// What the scale benchmark needs for MPIJobs of kubeflow.org/v2beta1 (operator_scale.sh --kind
// mpijob-v2), besides the PyTorchJob it runs by default: the job it submits, the objects its
// floor creates in the operators' place, and the CRD each side is served with.
//
//   MpiJobV2Doc        a v2beta1 MPIJob: one Launcher (its pod runs `run_seconds` on kwok, then
//                      succeeds) and `workers` Workers (Running until deleted, as sshd is)
//   MpiV2FloorObjects  what an operator makes for it, built by trainctl's builders
//                      (operator/mpi_v2_children.h) with no controller reference: the SSH
//                      Secret, the ConfigMap (hostfile, and discover_hosts.sh naming every
//                      worker: its last content, written once), the headless Service, the
//                      worker pods and the launcher's batch Job, whose pod the Job controller
//                      of kube-controller-manager makes, as it does for the operators
//   PointConversionAt  trainctl's CRD (manifests/crds) with its conversion webhook at a URL
//                      (the operator runs outside the cluster, on this machine)
//
// Pure except InstallCrd and WaitV2Creatable, which talk to the API server (benchmark helpers:
// errors end the process with a message, as operator_harness.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kube/client.h"

namespace trainctl::bench {

inline const kube::Resource kMpiJobsV1{"kubeflow.org", "v1", "mpijobs"};
inline const kube::Resource kMpiJobsV2{"kubeflow.org", "v2beta1", "mpijobs"};
inline constexpr const char* kMpiJobsCrd = "mpijobs.kubeflow.org";

nlohmann::json MpiJobV2Doc(const std::string& name, const std::string& ns, int workers,
                           int run_seconds);

// Each object with the resource to create it as, in the order an operator makes them (the
// Secret, ConfigMap and Service before the pods that mount or name them). kInvalid when the
// document is not a valid v2beta1 MPIJob.
StatusOr<std::vector<std::pair<const kube::Resource*, nlohmann::json>>> MpiV2FloorObjects(
    const nlohmann::json& doc);

// The CRD with spec.conversion.webhook.clientConfig = {url}; kInvalid when it converts without
// a webhook.
StatusOr<nlohmann::json> PointConversionAt(nlohmann::json crd, const std::string& url);

// Replaces mpijobs.kubeflow.org with `crd` (deleted first, when it differs, and waited for
// until gone: no MPIJob is left between runs) and waits until it is Established.
void InstallCrd(kube::Client* admin, const nlohmann::json& crd);

// Waits until a v2beta1 MPIJob can be created in `ns` (trainctl's side: the API server reaches
// the conversion webhook with the CA the operator injected); the probe job is deleted again.
// Returns the seconds waited.
double WaitV2Creatable(kube::Client* admin, const std::string& ns, double limit_seconds = 120);

}  // namespace trainctl::bench
