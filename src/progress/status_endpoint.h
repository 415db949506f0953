// StatusEndpoint: Kubeflow Trainer v2.3's runtime status endpoint, the part the operator (HTTPS on
// its webhook certificate, tokens checked by the API server) and the local runner (loopback, a
// token per job) share. A training process POSTs an UpdateTrainJobStatusRequest to
//   /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status   (upstream's)
//   /apis/kubeflow.org/v1/namespaces/<ns>/<plural>/<name>/status                  (v1 jobs)
// with `Authorization: Bearer <token>`; Handle() answers it:
//   read    the path (api::ParseStatusPath), the body's size (over api::kMaxReportBytes: 413
//           before anything else), the bearer token
//   decide  the token, by the injected authorizer: 401 when it is not valid or names no job,
//           403 when it is valid for another job or namespace, 503 when it could not be
//           checked; the body (api::DecodeTrainerStatusReport): 400 when it is not a bounded
//           JSON object, 422 with the field path when a value breaks upstream's CRD rules; the
//           job, by the injected lookup: 404 when there is no such job
//   write   the accepted status to the injected sink (which coalesces: a report is never an
//           API write by itself); 200 with the request echoed, as upstream. A body without
//           trainerStatus is answered 200 and nothing is written.
// Errors are a Kubernetes Status object (status Failure, message, reason, code), as upstream's.
// Other paths are 404, other methods 405 (the server's router). Nothing a client sends is
// logged or echoed beyond the decoded request.
//
// Thread-safe when the injected functions are.
#pragma once

#include <functional>
#include <string>

#include "api/trainer_status.h"
#include "server/http.h"

namespace trainctl::progress {

// What a token may do for the job a request names.
enum class Grant {
  kAllowed,
  kUnauthenticated,  // no token, or one that is not valid (401)
  kForbidden,        // valid, but for another job or namespace (403)
  kUnavailable,      // the check itself failed (the API server did not answer): 503
};

struct StatusEndpointHooks {
  // Whether `token` (the bearer credential, possibly empty) may report for `target`.
  std::function<Grant(const std::string& token, const api::StatusTarget& target)> authorize;
  // Whether the job exists (false: 404).
  std::function<bool(const api::StatusTarget& target)> exists;
  // Takes an accepted status for `target`.
  std::function<void(const api::StatusTarget& target, api::TrainerStatus status)> accept;
};

// The credentials of an RFC 7235 "Bearer" Authorization header ("" when it has none).
std::string BearerToken(const std::string& authorization);

class StatusEndpoint {
 public:
  explicit StatusEndpoint(StatusEndpointHooks hooks) : hooks_(std::move(hooks)) {}

  // Registers POST under /apis/trainer.kubeflow.org/v1alpha1/namespaces/ and
  // /apis/kubeflow.org/v1/namespaces/ on `router`.
  void Register(server::Router* router) const;
  server::Response Handle(const server::Request& request) const;

 private:
  StatusEndpointHooks hooks_;
};

}  // namespace trainctl::progress
