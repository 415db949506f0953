#include "ui/cluster_auth.h"

#include "api/json_fields.h"
#include "api/kinds.h"

namespace trainctl::ui {

using nlohmann::json;

namespace {

const kube::Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};
const kube::Resource kAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews", false};
constexpr std::chrono::seconds kUserTtl{60};
constexpr std::chrono::seconds kDecisionTtl{30};
constexpr size_t kMaxCached = 4096;

}  // namespace

json TokenReviewBody(const std::string& token) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", token}}}};
}

StatusOr<UserInfo> ParseTokenReview(const json& review) {
  const json& status = review.is_object() && review.contains("status") ? review["status"] : json();
  if (!status.is_object() || !status.value("authenticated", false))
    return Status(StatusCode::kUnauthorized, "the API server does not know this token" +
                                                 (status.is_object() && status.contains("error")
                                                      ? ": " + api::StringAt(status, "error")
                                                      : std::string()));
  UserInfo user;
  const json& u = status.contains("user") && status["user"].is_object() ? status["user"] : json();
  user.name = api::StringAt(u, "username");
  if (u.is_object() && u.contains("groups") && u["groups"].is_array())
    for (const json& g : u["groups"])
      if (g.is_string()) user.groups.push_back(g.get<std::string>());
  if (user.name.empty()) return Status(StatusCode::kUnauthorized, "the token names no user");
  return user;
}

json AccessReviewBody(const UserInfo& user, const Access& access) {
  json attributes = {{"verb", access.verb},
                     {"group", access.group},
                     {"resource", access.resource},
                     {"namespace", access.namespace_}};
  if (!access.subresource.empty()) attributes["subresource"] = access.subresource;
  return {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec", {{"user", user.name}, {"groups", user.groups}, {"resourceAttributes", attributes}}}};
}

bool ParseAccessReview(const json& review) {
  return review.is_object() && review.contains("status") && review["status"].is_object() &&
         review["status"].value("allowed", false) == true &&
         !review["status"].value("denied", false);
}

std::string BearerToken(const std::string& authorization) {
  const std::string prefix = "Bearer ";
  if (authorization.size() <= prefix.size() || authorization.compare(0, prefix.size(), prefix) != 0)
    return "";
  return authorization.substr(prefix.size());
}

StatusOr<UserInfo> ClusterAuthorizer::Authenticate(const server::Request& request,
                                                   const std::string& session_token) {
  if (!user_header_.empty()) {
    std::string name = request.Header(api::ToLower(user_header_));
    if (!name.empty()) return UserInfo{name, {}};
  }
  std::string token = BearerToken(request.Header("authorization"));
  // Through the API server's proxy to the Service the Authorization header does not arrive.
  if (token.empty()) token = request.Header(kTokenHeader);
  if (token.empty()) token = session_token;
  if (token.empty())
    return Status(
        StatusCode::kUnauthorized,
        "sign in with a Kubernetes token, or send one (Authorization: Bearer …)" +
            (user_header_.empty() ? std::string()
                                  : ", or come through the proxy that sets " + user_header_));
  return Review(token);
}

StatusOr<UserInfo> ClusterAuthorizer::Review(const std::string& token) {
  MonoTime now = clock_->Monotonic();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = users_.find(token);
    if (it != users_.end() && now - it->second.first < kUserTtl) return it->second.second;
  }
  StatusOr<json> review = client_->Create(kTokenReviews, "", TokenReviewBody(token));
  if (!review.ok()) return review.status();
  TRAINCTL_ASSIGN_OR_RETURN(UserInfo user, ParseTokenReview(*review));
  std::lock_guard<std::mutex> lock(mu_);
  if (users_.size() >= kMaxCached) users_.clear();
  users_[token] = {now, user};
  return user;
}

bool ClusterAuthorizer::Allowed(const UserInfo& user, const Access& access) {
  MonoTime now = clock_->Monotonic();
  std::string who = user.name;
  for (const std::string& g : user.groups) who += "\n" + g;
  auto key = std::make_pair(who, access);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = decisions_.find(key);
    if (it != decisions_.end() && now - it->second.first < kDecisionTtl) return it->second.second;
  }
  StatusOr<json> review = client_->Create(kAccessReviews, "", AccessReviewBody(user, access));
  bool allowed = review.ok() && ParseAccessReview(*review);
  std::lock_guard<std::mutex> lock(mu_);
  if (decisions_.size() >= kMaxCached) decisions_.clear();
  if (review.ok()) decisions_[key] = {now, allowed};  // an API error is not cached
  return allowed;
}

}  // namespace trainctl::ui
