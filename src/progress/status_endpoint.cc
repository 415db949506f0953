#include "progress/status_endpoint.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "api/kinds.h"

namespace trainctl::progress {
namespace {

using nlohmann::json;

constexpr const char* kPrefixes[] = {"/apis/trainer.kubeflow.org/v1alpha1/namespaces/",
                                     "/apis/kubeflow.org/v1/namespaces/"};

// A Kubernetes Status object, as upstream's server answers its errors.
server::Response Failure(int code, const char* reason, const std::string& message) {
  return server::Response::Json(code, json{{"kind", "Status"},
                                           {"apiVersion", "v1"},
                                           {"status", "Failure"},
                                           {"message", message},
                                           {"reason", reason},
                                           {"code", code}});
}

// "TrainJob ns/name", "PyTorchJob ns/name": the job a target names, for messages.
std::string JobName(const api::StatusTarget& t) {
  std::string kind = t.IsTrainJob() ? "TrainJob" : t.plural;
  for (const api::KindInfo& k : api::AllKinds())
    if (t.plural == k.plural) kind = k.name;
  return kind + " " + t.namespace_ + "/" + t.name;
}

}  // namespace

std::string BearerToken(const std::string& authorization) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < authorization.size() && std::isspace(static_cast<unsigned char>(authorization[i])))
      ++i;
  };
  auto word = [&] {
    const size_t from = i;
    while (i < authorization.size() && !std::isspace(static_cast<unsigned char>(authorization[i])))
      ++i;
    return authorization.substr(from, i - from);
  };
  skip_space();
  std::string scheme = word();
  skip_space();
  std::string token = word();
  skip_space();
  if (i != authorization.size() || token.empty()) return "";
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "bearer" ? token : "";
}

void StatusEndpoint::Register(server::Router* router) const {
  for (const char* prefix : kPrefixes)
    router->HandlePrefix("POST", prefix,
                         [this](const server::Request& request) { return Handle(request); });
}

server::Response StatusEndpoint::Handle(const server::Request& request) const {
  // read
  std::optional<api::StatusTarget> target = api::ParseStatusPath(request.path);
  if (!target) return Failure(404, "NotFound", "Not found");
  const std::string job = JobName(*target);
  if (request.body.size() > api::kMaxReportBytes)
    return Failure(413, "RequestEntityTooLarge",
                   "the report is " + std::to_string(request.body.size()) + " bytes; at most " +
                       std::to_string(api::kMaxReportBytes) + " are accepted");
  const std::string token = BearerToken(request.Header("authorization"));

  // decide
  switch (hooks_.authorize(token, *target)) {
    case Grant::kAllowed:
      break;
    case Grant::kUnauthenticated:
      return Failure(401, "Unauthorized",
                     token.empty() ? "a bearer token is required (the file "
                                     "KUBEFLOW_TRAINER_SERVER_TOKEN names)"
                                   : "the bearer token is not valid for this endpoint");
    case Grant::kForbidden:
      return Failure(403, "Forbidden", "the bearer token is not for " + job);
    case Grant::kUnavailable:
      return Failure(503, "ServiceUnavailable", "the token could not be checked; try again");
  }
  StatusOr<api::TrainerStatusReport> report = api::DecodeTrainerStatusReport(request.body);
  if (!report.ok()) {
    // Not JSON, too deep, not an object: 400; a value the CRD refuses: 422 with its path.
    const bool malformed = report.status().message().rfind("the report is not", 0) == 0;
    return Failure(malformed ? 400 : 422, malformed ? "BadRequest" : "Invalid",
                   report.status().message());
  }
  if (!hooks_.exists(*target)) return Failure(404, "NotFound", job + " not found");

  // write
  json echo = json::object();
  if (report->status) {
    echo["trainerStatus"] = api::TrainerStatusJson(*report->status);
    hooks_.accept(*target, std::move(*report->status));
  }
  return server::Response::Json(200, echo);
}

}  // namespace trainctl::progress
