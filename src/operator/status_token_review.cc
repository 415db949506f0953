#include "operator/status_token_review.h"

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/trainer_status.h"
#include "kube/base64.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

constexpr const char* kServiceAccountPrefix = "system:serviceaccount:";
// A claimed audience is asked about only when it names a job's status endpoint.
bool IsStatusAudience(const std::string& audience) {
  return api::ParseStatusPath("/apis/" + audience).has_value();
}
constexpr Duration kValidFor = Duration(5 * 60 * 1000);
constexpr Duration kRefusedFor = Duration(10 * 1000);

// The JWT's payload, decoded (unverified), or null.
json JwtPayload(const std::string& token) {
  const size_t a = token.find('.');
  const size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos || token.find('.', b + 1) != std::string::npos) return nullptr;
  std::string part = token.substr(a + 1, b - a - 1);
  for (char& c : part) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (part.size() % 4) part += '=';
  std::optional<std::string> bytes = kube::Base64Decode(part);
  if (!bytes) return nullptr;
  json payload = json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  return payload.is_object() ? payload : json(nullptr);
}

}  // namespace

std::string ServiceAccountNamespace(const std::string& username) {
  const std::string prefix = kServiceAccountPrefix;
  if (username.rfind(prefix, 0) != 0) return "";
  const size_t colon = username.find(':', prefix.size());
  return colon == std::string::npos ? "" : username.substr(prefix.size(), colon - prefix.size());
}

std::vector<std::string> ClaimedAudiences(const std::string& token) {
  const json payload = JwtPayload(token);
  std::vector<std::string> out;
  if (payload.is_null()) return out;
  const json& aud = api::ChildAt(payload, "aud");
  if (aud.is_string()) out.push_back(aud.get<std::string>());
  if (aud.is_array())
    for (const json& a : aud)
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

StatusTokenReview::Review StatusTokenReview::Ask(const std::string& token,
                                                 const std::string& audience) {
  const Time now = clock_->Now();
  const auto key = std::make_pair(token, audience);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.second > now) return it->second.first;
  }
  json review = {{"apiVersion", "authentication.k8s.io/v1"},
                 {"kind", "TokenReview"},
                 {"spec", {{"token", token}, {"audiences", json::array({audience})}}}};
  StatusOr<json> answer = client_->Create(kTokenReviews, "", review);
  Review r;
  if (!answer.ok()) return r;  // not cached: asked again next time
  r.answered = true;
  const json& status = api::ChildAt(*answer, "status");
  r.authenticated = api::BoolAt(status, "authenticated", false);
  r.ns = ServiceAccountNamespace(api::StringAt(api::ChildAt(status, "user"), "username"));
  Time until = now + (r.authenticated ? kValidFor : kRefusedFor);
  if (r.authenticated) {
    const json payload = JwtPayload(token);
    const json& exp = api::ChildAt(payload, "exp");
    if (exp.is_number_integer()) {
      const Time expires = Time(std::chrono::seconds(exp.get<int64_t>()));
      if (expires < until) until = expires;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= kMaxCachedReviews) {
    for (auto it = cache_.begin(); it != cache_.end();)
      it = it->second.second <= now ? cache_.erase(it) : std::next(it);
    if (cache_.size() >= kMaxCachedReviews) cache_.clear();
  }
  cache_[key] = {r, until};
  return r;
}

progress::Grant StatusTokenReview::Authorize(const std::string& token,
                                             const api::StatusTarget& target) {
  if (token.empty()) return progress::Grant::kUnauthenticated;
  const std::string& ns = target.namespace_;
  const std::string audience = api::StatusAudience(target);
  const Review mine = Ask(token, audience);
  if (!mine.answered) return progress::Grant::kUnavailable;
  if (mine.authenticated)
    return mine.ns == ns ? progress::Grant::kAllowed : progress::Grant::kForbidden;
  // Not valid for this job: a valid token of another job is forbidden, anything else unknown.
  for (const std::string& claimed : ClaimedAudiences(token)) {
    if (claimed == audience || !IsStatusAudience(claimed)) continue;
    const Review other = Ask(token, claimed);
    if (!other.answered) return progress::Grant::kUnavailable;
    if (other.authenticated) return progress::Grant::kForbidden;
    break;
  }
  return progress::Grant::kUnauthenticated;
}

}  // namespace trainctl::op
