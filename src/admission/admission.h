// Validating admission for the kubeflow.org/v1 kinds (docs/compatibility.md): an
// AdmissionReview (admission.k8s.io/v1) request in, the review with its response out. The job
// is decoded and checked undefaulted, as upstream's webhooks check it, with the same field
// errors (api/validation.h); updates also check the immutable fields. Denials carry the
// aggregated field errors as the message (the API server prefixes `admission webhook "<name>"
// denied the request: `), warnings go into `response.warnings`. MPIJob is validated too
// (upstream has no webhook for it); DELETE is always allowed. Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/kinds.h"

namespace trainctl::admission {

// "/validate-kubeflow-org-v1-pytorchjob" → PyTorchJob; nullopt for any other path.
std::optional<api::Kind> KindForWebhookPath(const std::string& path);
std::string WebhookPath(api::Kind kind);

// `body`: the request body as received. A body that is not an AdmissionReview gets a review
// whose response denies with the reason (the uid echoed when it can be read).
nlohmann::json ReviewAdmission(api::Kind kind, const std::string& body);

// The request of an AdmissionReview body, or nullopt with `*answer` the review to send at once:
// a denial for a body that is not a review or has no object, an allowance for DELETE/CONNECT.
std::optional<nlohmann::json> AdmissionRequest(const std::string& body, nlohmann::json* answer);

// The AdmissionReview (admission.k8s.io/v1) answering request `uid`: a denial carries `message`
// with code 403, warnings go into response.warnings.
nlohmann::json ReviewResponse(const std::string& uid, bool allowed, const std::string& message,
                              const std::vector<std::string>& warnings);

}  // namespace trainctl::admission
