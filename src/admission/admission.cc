#include "admission/admission.h"

#include "api/job.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/validation.h"

namespace trainctl::admission {

using nlohmann::json;

std::string WebhookPath(api::Kind kind) {
  return "/validate-kubeflow-org-v1-" + api::ToLower(api::Info(kind).name);
}

std::optional<api::Kind> KindForWebhookPath(const std::string& path) {
  for (const api::KindInfo& k : api::AllKinds())
    if (path == WebhookPath(k.kind)) return k.kind;
  return std::nullopt;
}

json ReviewResponse(const std::string& uid, bool allowed, const std::string& message,
                    const std::vector<std::string>& warnings) {
  json response = {{"uid", uid}, {"allowed", allowed}};
  if (!allowed) response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", message}};
  if (!warnings.empty()) response["warnings"] = warnings;
  return {
      {"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
}

// The request of an AdmissionReview body, or a review denying it (`*denied`).
std::optional<json> AdmissionRequest(const std::string& body, json* denied) {
  std::string problem;
  json review = api::ParseJsonWithin(body, api::kApiJsonLimits, &problem);
  if (review.is_discarded()) {
    *denied = ReviewResponse("", false,
                             "the request body is not an AdmissionReview: it is " + problem, {});
    return std::nullopt;
  }
  if (!review.is_object() || !review.contains("request") || !review["request"].is_object()) {
    *denied = ReviewResponse("", false, "the request body is not an AdmissionReview", {});
    return std::nullopt;
  }
  json request = review["request"];
  const std::string uid = api::StringAt(request, "uid");
  const std::string operation = api::StringAt(request, "operation");
  if (operation == "DELETE" || operation == "CONNECT") {
    *denied = ReviewResponse(uid, true, "", {});
    return std::nullopt;
  }
  if (!request.contains("object") || !request["object"].is_object()) {
    *denied = ReviewResponse(uid, false, "the AdmissionReview has no object", {});
    return std::nullopt;
  }
  return request;
}

json ReviewAdmission(api::Kind kind, const std::string& body) {
  json answer;
  std::optional<json> parsed = AdmissionRequest(body, &answer);
  if (!parsed) return answer;
  const json& request = *parsed;
  std::string uid = api::StringAt(request, "uid");
  std::string operation = api::StringAt(request, "operation");
  StatusOr<api::Job> job = api::DecodeJob(request["object"]);
  if (!job.ok()) return ReviewResponse(uid, false, job.status().message(), {});
  if (job->kind != kind)
    return ReviewResponse(
        uid, false,
        "this webhook validates " + std::string(api::Info(kind).name) + ", not " + job->info().name,
        {});
  api::ValidationResult result = api::ValidateJob(*job);
  api::FieldErrorList errors = result.errors;
  if (operation == "UPDATE" && request.contains("oldObject") && request["oldObject"].is_object()) {
    StatusOr<api::Job> old = api::DecodeJob(request["oldObject"]);
    if (old.ok())
      for (api::FieldError& e : api::ValidateJobUpdate(*old, *job)) errors.push_back(std::move(e));
  }
  if (!errors.empty())
    return ReviewResponse(uid, false, api::JoinFieldErrors(errors), result.warnings);
  return ReviewResponse(uid, true, "", result.warnings);
}

}  // namespace trainctl::admission
