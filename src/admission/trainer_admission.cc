#include "admission/trainer_admission.h"

#include <map>

#include "admission/admission.h"
#include "api/field_error.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/training_runtime.h"
#include "api/trainjob_resolve.h"
#include "api/trainjob_volcano.h"
#include "api/validation.h"
#include "kube/base64.h"

namespace trainctl::admission {
using nlohmann::json;

json ReviewTrainJob(const std::string& body, const TrainJobLookups& lookups) {
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
  // An update that leaves the spec as it was (labels, annotations, finalizers: the checkpoint
  // notice's record and finalizer, a deletion's last step) is not checked against the live
  // runtime: the TrainJob runs on its snapshot, and a runtime deleted since must not make its
  // metadata unwritable (nor hold its deletion forever).
  if (api::StringAt(*request, "operation") == "UPDATE" && request->contains("oldObject") &&
      (*request)["oldObject"].is_object() && (*request)["oldObject"].contains("spec") &&
      (*request)["oldObject"]["spec"] == object["spec"])
    return ReviewResponse(uid, true, "", result.warnings);
  api::RuntimeRef ref = job->train_job->runtime_ref;
  if (ref.kind.empty()) ref.kind = api::kClusterTrainingRuntimeKind;
  if (ref.api_group.empty()) ref.api_group = api::kTrainerGroup;
  if (ref.api_group != api::kTrainerGroup ||
      (ref.kind != api::kTrainingRuntimeKind && ref.kind != api::kClusterTrainingRuntimeKind))
    return ReviewResponse(uid, false, "unsupported runtime: " + ref.kind + "." + ref.api_group, {});
  StatusOr<json> live = lookups.runtime(ref, job->namespace_);
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
  api::VolcanoAdmission volcano = api::VolcanoAdmissionChecks(resolved->job);
  for (const api::VolcanoAdmission::PriorityClassUse& use : volcano.priority_classes) {
    Status exists = lookups.priority_class(use.name);
    if (exists.ok()) continue;
    volcano.errors.push_back(api::MissingPriorityClass(
        use, exists.code() == StatusCode::kNotFound
                 ? "priorityclasses.scheduling.k8s.io \"" + use.name + "\" not found"
                 : exists.message()));
  }
  if (!volcano.errors.empty())
    return ReviewResponse(
        uid, false, api::FieldErrorsToStatus("TrainJob", job->name, volcano.errors).message(), {});
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

json DefaultTrainJob(const std::string& body, Time now) {
  json answer;
  std::optional<json> request = AdmissionRequest(body, &answer);
  if (!request) return answer;
  const std::string uid = api::StringAt(*request, "uid");
  const json& object = (*request)["object"];
  const json* patches = nullptr;
  if (object.contains("spec") && object["spec"].is_object() &&
      object["spec"].contains("runtimePatches") && object["spec"]["runtimePatches"].is_array())
    patches = &object["spec"]["runtimePatches"];
  // The old entries by manager (UPDATE only).
  std::map<std::string, const json*> before;
  const bool update = api::StringAt(*request, "operation") == "UPDATE";
  const json& old_object =
      update && request->contains("oldObject") ? (*request)["oldObject"] : json();
  if (old_object.is_object() && old_object.contains("spec") && old_object["spec"].is_object() &&
      old_object["spec"].contains("runtimePatches") &&
      old_object["spec"]["runtimePatches"].is_array())
    for (const json& p : old_object["spec"]["runtimePatches"])
      if (p.is_object()) before[api::StringAt(p, "manager")] = &p;
  auto without_time = [](json p) {
    p.erase("time");
    return p;
  };
  const std::string stamp = FormatRfc3339(now);
  json ops = json::array();
  for (size_t i = 0; patches && i < patches->size(); ++i) {
    const json& p = (*patches)[i];
    if (!p.is_object()) continue;  // the CRD refuses it before we are asked
    const std::string path = "/spec/runtimePatches/" + std::to_string(i) + "/time";
    const bool has_time = p.contains("time") && !p["time"].is_null();
    std::string time = has_time ? api::StringAt(p, "time") : "";  // what it is to have
    auto old = before.find(api::StringAt(p, "manager"));
    if (update && old != before.end())  // unchanged: its old time (none stays none); else now
      time = without_time(*old->second) == without_time(p) ? api::StringAt(*old->second, "time")
                                                           : stamp;
    else if (!has_time)
      time = stamp;
    if (time.empty()) {
      if (has_time) ops.push_back({{"op", "remove"}, {"path", path}});
    } else if (!has_time || p["time"] != time) {
      ops.push_back({{"op", "add"}, {"path", path}, {"value", time}});
    }
  }
  json review = ReviewResponse(uid, true, "", {});
  if (!ops.empty()) {
    review["response"]["patchType"] = "JSONPatch";
    review["response"]["patch"] = kube::Base64Encode(ops.dump());
  }
  return review;
}

}  // namespace trainctl::admission
