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
using nlohmann::json;

json ReviewTrainJob(const std::string& body, const RuntimeLookup& lookup) {
  json answer;
  std::optional<json> request = AdmissionRequest(body, &answer);
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
  std::optional<json> request = AdmissionRequest(body, &answer);
  if (!request) return answer;
  const std::string uid = api::StringAt(*request, "uid");
  StatusOr<api::TrainingRuntime> runtime =
      api::DecodeTrainingRuntime((*request)["object"], api::StringAt(*request, "name"));
  if (!runtime.ok()) return ReviewResponse(uid, false, runtime.status().message(), {});
  return ReviewResponse(uid, true, "", {});
}

}  // namespace trainctl::admission
