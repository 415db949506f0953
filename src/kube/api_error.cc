#include "kube/api_error.h"

#include <nlohmann/json.hpp>

#include "api/json_bounds.h"
#include "api/json_fields.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

std::string Shorten(const std::string& s, size_t max = 300) {
  std::string out = s.size() > max ? s.substr(0, max) + "…" : s;
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

StatusCode CodeFor(long http, const std::string& reason) {
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Conflict") return StatusCode::kConflict;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "Gone" || reason == "Expired") return StatusCode::kGone;
  if (reason == "Invalid" || reason == "BadRequest") return StatusCode::kInvalid;
  if (reason == "TooManyRequests") return StatusCode::kTooManyRequests;
  if (reason == "Unauthorized") return StatusCode::kUnauthorized;
  if (reason == "Forbidden") return StatusCode::kForbidden;
  if (reason == "Timeout" || reason == "ServerTimeout") return StatusCode::kDeadlineExceeded;
  switch (http) {
    case 400:
    case 422:
    case 415:
      return StatusCode::kInvalid;
    case 401:
      return StatusCode::kUnauthorized;
    case 403:
      return StatusCode::kForbidden;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kConflict;
    case 410:
      return StatusCode::kGone;
    case 429:
      return StatusCode::kTooManyRequests;
    case 504:
      return StatusCode::kDeadlineExceeded;
    default:
      break;
  }
  if (http >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

}  // namespace

Status ErrorFromResponse(const HttpResponse& response, const std::string& what) {
  std::string reason, message;
  json body = api::ParseJsonWithin(response.body, api::kApiJsonLimits);
  if (body.is_object() && api::StringAt(body, "kind") == "Status") {
    if (body.contains("reason") && body["reason"].is_string()) reason = body["reason"];
    if (body.contains("message") && body["message"].is_string()) message = body["message"];
    const json* causes = nullptr;
    if (body.contains("details") && body["details"].is_object() &&
        body["details"].contains("causes") && body["details"]["causes"].is_array())
      causes = &body["details"]["causes"];
    // The server's message already lists the causes for 422; add them only when it does not.
    if (causes && message.find(':') == std::string::npos) {
      for (const json& c : *causes) {
        if (!c.is_object()) continue;
        std::string field =
            c.contains("field") && c["field"].is_string() ? c["field"].get<std::string>() : "";
        std::string m = c.contains("message") && c["message"].is_string()
                            ? c["message"].get<std::string>()
                            : "";
        message += (message.empty() ? "" : "; ") + (field.empty() ? m : field + ": " + m);
      }
    }
  } else if (body.is_object() && body.contains("error") && body["error"].is_string()) {
    message = body["error"];  // {"error": "…"}: the dashboard's (and many HTTP APIs') errors
  } else if (!response.body.empty()) {
    message = "unexpected response body: \"" + Shorten(response.body) + "\"";
  }
  if (message.empty()) message = "the server answered HTTP " + std::to_string(response.status);
  std::string text = what + ": " + message;
  if (!reason.empty() && message.find(reason) == std::string::npos)
    text += " (" + reason + ", HTTP " + std::to_string(response.status) + ")";
  else
    text += " (HTTP " + std::to_string(response.status) + ")";
  if (response.retry_after_seconds)
    text += "; retry after " + std::to_string(*response.retry_after_seconds) + "s";
  return Status(CodeFor(response.status, reason), text);
}

}  // namespace trainctl::kube
