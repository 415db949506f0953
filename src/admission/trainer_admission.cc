#include "admission/trainer_admission.h"

#include "admission/admission.h"
#include "api/field_error.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/training_runtime.h"
#include "api/trainjob_resolve.h"
#include "api/validation.h"

namespace trainctl::admission {
namespace {

using nlohmann::json;

// The request of an AdmissionReview body, or a review denying it (`*denied`).
std::optional<json> RequestOf(const std::string& body, json* denied) {
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

}  // namespace

json ReviewTrainJob(const std::string& body, const RuntimeLookup& lookup) {
  json answer;
  std::optional<json> request = RequestOf(body, &answer);
  if (!request) return answer;
  const std::string uid = api::StringAt(*request, "uid");
  json object = (*request)["object"];
  object.erase("status");
  StatusOr<api::Job> job = api::DecodeJob(object);
  if (!job.ok()) return ReviewResponse(uid, false, job.status().message(), {});
  if (!job->train_job) return ReviewResponse(uid, false, "this webhook validates TrainJobs", {});
  api::ValidationResult result = api::ValidateJob(*job);
  if (!result.errors.empty())
    return ReviewResponse(uid, false, api::JoinFieldErrors(result.errors), result.warnings);
  api::RuntimeRef ref = job->train_job->runtime_ref;
  if (ref.kind.empty()) ref.kind = api::kClusterTrainingRuntimeKind;
  if (ref.api_group.empty()) ref.api_group = api::kTrainerGroup;
  if (ref.api_group != api::kTrainerGroup ||
      (ref.kind != api::kTrainingRuntimeKind && ref.kind != api::kClusterTrainingRuntimeKind))
    return ReviewResponse(uid, false, "unsupported runtime: " + ref.kind + "." + ref.api_group, {});
  StatusOr<json> live = lookup(ref, job->namespace_);
  if (!live.ok()) {
    std::string what = ref.kind + " " +
                       (ref.kind == api::kTrainingRuntimeKind ? job->namespace_ + "/" : "") +
                       ref.name;
    std::string why = live.status().code() == StatusCode::kNotFound
                          ? what + " not found"
                          : "reading " + what + ": " + live.status().message();
    return ReviewResponse(uid, false,
                          "spec.runtimeRef: Invalid value: \"" + ref.name + "\": " + why +
                              ": specified trainingRuntime must be created before the TrainJob "
                              "is created",
                          {});
  }
  json runtime_doc = *live;
  runtime_doc["apiVersion"] = api::kTrainerApiVersion;
  runtime_doc["kind"] = ref.kind;
  StatusOr<api::TrainingRuntime> runtime = api::DecodeTrainingRuntime(runtime_doc, ref.name);
  if (!runtime.ok())
    return ReviewResponse(
        uid, false,
        "spec.runtimeRef: the runtime " + ref.name + " is not valid: " + runtime.status().message(),
        {});
  api::RuntimeCatalog catalog;
  catalog.Add(*runtime);
  StatusOr<api::LoadedJob> resolved = api::PrepareJob(object, &catalog);
  if (!resolved.ok()) return ReviewResponse(uid, false, resolved.status().message(), {});
  return ReviewResponse(uid, true, "", result.warnings);
}

json ReviewTrainingRuntime(const std::string& body) {
  json answer;
  std::optional<json> request = RequestOf(body, &answer);
  if (!request) return answer;
  const std::string uid = api::StringAt(*request, "uid");
  StatusOr<api::TrainingRuntime> runtime =
      api::DecodeTrainingRuntime((*request)["object"], api::StringAt(*request, "name"));
  if (!runtime.ok()) return ReviewResponse(uid, false, runtime.status().message(), {});
  return ReviewResponse(uid, true, "", {});
}

}  // namespace trainctl::admission
