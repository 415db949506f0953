// StatusTokenReview: whether a bearer token may report progress for a job (a TrainJob or a v1
// job), the operator's check for the runtime status endpoint (progress/status_endpoint.h). The
// trainer's pods carry a projected service-account token whose audience names their job
// (api::StatusAudience; operator/status_env.h); the API server says whether a token is valid
// for an audience (authentication.k8s.io/v1 TokenReview), so:
//   allowed        valid for this job's audience, of a service account in its namespace
//   forbidden      valid for this audience but of another namespace, or valid only for another
//                  job's audience (the audience the token claims, checked in turn)
//   unauthenticated  empty, malformed, expired or for no job
//   unavailable    the API server did not answer the review
// Answers are cached by (token, audience): valid ones until the token's expiry or 5 minutes,
// refusals 10 s, at most kMaxCachedReviews (expired ones go first, then all), so a trainer
// reporting often costs one review per token and audience, not one per report.
//
// I/O: TokenReview creates. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "api/trainer_status.h"
#include "common/clock.h"
#include "kube/client.h"
#include "progress/status_endpoint.h"

namespace trainctl::op {

inline constexpr size_t kMaxCachedReviews = 4096;
inline const kube::Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};

// The namespace of "system:serviceaccount:<ns>:<name>" ("" for other users).
std::string ServiceAccountNamespace(const std::string& username);
// The audiences a JWT claims (its payload's "aud", a string or a list), read without checking
// the signature; empty when `token` is not a JWT.
std::vector<std::string> ClaimedAudiences(const std::string& token);

class StatusTokenReview {
 public:
  StatusTokenReview(kube::Client* client, const Clock* clock) : client_(client), clock_(clock) {}

  progress::Grant Authorize(const std::string& token, const api::StatusTarget& target);

 private:
  struct Review {
    bool answered = false;  // false: the API server did not answer
    bool authenticated = false;
    std::string ns;  // the service account's namespace
  };
  Review Ask(const std::string& token, const std::string& audience);

  kube::Client* client_;
  const Clock* clock_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::pair<Review, Time>> cache_;  // → until
};

}  // namespace trainctl::op
