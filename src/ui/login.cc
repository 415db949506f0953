#include "ui/login.h"

#include <nlohmann/json.hpp>

namespace trainctl::ui {

bool SameOrigin(const server::Request& request) {
  std::string origin = request.Header("origin");
  std::string host = request.Header("host");
  return origin.empty() || origin == "http://" + host || origin == "https://" + host;
}

StatusOr<std::string> LoginToken(const server::Request& request) {
  if (!SameOrigin(request))
    return Status(StatusCode::kForbidden,
                  "sign-in from " + request.Header("origin") + " is refused");
  std::string type = request.Header("content-type");
  if (type.substr(0, type.find(';')) != "application/json")
    return InvalidError("sign in with Content-Type: application/json and {\"token\": \"…\"}");
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("token") ||
      !body["token"].is_string())
    return InvalidError(
        "the body must be {\"token\": \"…\"}: a Kubernetes token, e.g. from "
        "`kubectl create token NAME -n NAMESPACE`");
  std::string token = body["token"].get<std::string>();
  size_t first = token.find_first_not_of(" \t\r\n");
  size_t last = token.find_last_not_of(" \t\r\n");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (token.empty()) return InvalidError("the token is empty");
  return token;
}

int HttpStatusOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kForbidden:
      return 403;
    case StatusCode::kInvalid:
      return 400;
    case StatusCode::kUnauthorized:
      return 401;
    default:
      return 502;
  }
}

}  // namespace trainctl::ui
