// Who may see what on the in-cluster dashboard (`trainctl operator --dashboard-bind-address`):
// the user is whoever the API server says a bearer token belongs to (TokenReview), or the name
// a trusted proxy put in a header; what they may see is what the API server allows them
// (a SubjectAccessReview per namespace, verb and resource). A user sees the jobs, history
// rows, pages and logs of the namespaces where they may list and get that kind of job (and
// `get pods/log` for logs), nothing else: read-only, never more than kubectl would show them.
//
// The request and answer documents are pure functions (tested without a server); the
// ClusterAuthorizer does the API calls with the operator's own client and caches answers
// (identities 60 s, decisions 30 s, both bounded). Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "kube/client.h"
#include "server/http.h"

namespace trainctl::ui {

// The token of a request that comes through the API server's proxy to the dashboard's Service,
// which keeps the Authorization header (jobs/history_reader.h sends it).
inline constexpr const char* kTokenHeader = "x-trainctl-token";

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
};

struct Access {
  std::string verb;         // "list", "get"
  std::string group;        // "kubeflow.org", ""
  std::string resource;     // "pytorchjobs", "pods"
  std::string subresource;  // "log" or ""
  std::string namespace_;
  bool operator<(const Access& o) const {
    return std::tie(verb, group, resource, subresource, namespace_) <
           std::tie(o.verb, o.group, o.resource, o.subresource, o.namespace_);
  }
};

nlohmann::json TokenReviewBody(const std::string& token);
// The user a TokenReview's answer names; kUnauthorized when it is not authenticated.
StatusOr<UserInfo> ParseTokenReview(const nlohmann::json& review);
nlohmann::json AccessReviewBody(const UserInfo& user, const Access& access);
bool ParseAccessReview(const nlohmann::json& review);
// "Bearer abc" → "abc"; "" when the header is not a bearer token.
std::string BearerToken(const std::string& authorization);

class ClusterAuthorizer {
 public:
  // `user_header`: a trusted proxy's header naming the user ("" off; only behind that proxy).
  ClusterAuthorizer(kube::Client* client, const Clock* clock, std::string user_header)
      : client_(client), clock_(clock), user_header_(std::move(user_header)) {}

  // Who the request is: the trusted proxy's header, else its bearer token (Authorization, else
  // X-Trainctl-Token), else `session_token` (the token a browser session stands for,
  // ui/sessions.h). kUnauthorized when it names nobody the API server knows.
  StatusOr<UserInfo> Authenticate(const server::Request& request,
                                  const std::string& session_token = "");
  // Who `token` belongs to (TokenReview, cached for a minute); kUnauthorized when nobody.
  StatusOr<UserInfo> Review(const std::string& token);
  bool Allowed(const UserInfo& user, const Access& access);

 private:
  kube::Client* client_;
  const Clock* clock_;
  std::string user_header_;
  std::mutex mu_;
  std::map<std::string, std::pair<MonoTime, UserInfo>> users_;  // by token; guarded
  std::map<std::pair<std::string, Access>, std::pair<MonoTime, bool>> decisions_;  // guarded
};

}  // namespace trainctl::ui
