#include "api/mpi_conversion.h"

#include "api/json_fields.h"
#include "api/kinds.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

// Moves `fields` of spec into the annotation `name`: always when `always` (it then also marks
// the version the object was written in), else only when one of them is set.
void Stash(json* object, const char* name, std::initializer_list<const char*> fields, bool always) {
  json& spec = (*object)["spec"];
  json kept = json::object();
  for (const char* f : fields) {
    if (!spec.contains(f)) continue;
    kept[f] = spec[f];
    spec.erase(f);
  }
  if (kept.empty() && !always) return;
  (*object)["metadata"]["annotations"][name] = kept.dump();
}

bool HasAnnotation(const json& object, const char* name) {
  return object.contains("metadata") && object["metadata"].is_object() &&
         object["metadata"].contains("annotations") &&
         object["metadata"]["annotations"].is_object() &&
         object["metadata"]["annotations"].contains(name);
}

// Puts back the fields the annotation `name` holds and removes it.
Status Restore(json* object, const char* name) {
  if (!HasAnnotation(*object, name)) return Status::Ok();
  json& metadata = (*object)["metadata"];
  json& annotations = metadata["annotations"];
  const json& text = annotations[name];
  json kept = text.is_string() ? json::parse(text.get<std::string>(), nullptr, false) : json();
  if (!kept.is_object())
    return InvalidError(std::string("metadata.annotations[") + name +
                        "]: Invalid value: expected a JSON object of spec fields");
  json& spec = (*object)["spec"];
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (!spec.contains(it.key())) spec[it.key()] = it.value();
  annotations.erase(name);
  if (annotations.empty()) metadata.erase("annotations");
  return Status::Ok();
}

// spec.runPolicy.managedBy names the controller the version knows as its own.
void RenameController(json* object, const char* from, const char* to) {
  json& spec = (*object)["spec"];
  if (!spec.contains("runPolicy") || !spec["runPolicy"].is_object()) return;
  json& run_policy = spec["runPolicy"];
  if (run_policy.contains("managedBy") && run_policy["managedBy"] == from)
    run_policy["managedBy"] = to;
}

}  // namespace

bool WrittenAsMpiV2(const json& v1_object) {
  return HasAnnotation(v1_object, kMpiV2FieldsAnnotation);
}

StatusOr<json> ConvertMpiJob(const json& object, const std::string& to_version) {
  if (!object.is_object() || StringAt(object, "kind") != "MPIJob")
    return InvalidError("kind: Invalid value: only MPIJob objects are converted");
  std::string from = StringAt(object, "apiVersion");
  for (const std::string& v : {from, to_version})
    if (v != kApiVersion && v != kApiVersionMpiV2)
      return InvalidError("apiVersion: Unsupported value: \"" + v + "\": supported values: \"" +
                          kApiVersion + "\", \"" + kApiVersionMpiV2 + "\"");
  if (from == to_version) return object;
  json out = object;
  if (!out.contains("metadata") || !out["metadata"].is_object()) out["metadata"] = json::object();
  if (!out.contains("spec") || !out["spec"].is_object()) out["spec"] = json::object();
  out["apiVersion"] = to_version;
  // The annotation of the version an object was written in is there whenever it is read in the
  // other one: with it, the way back restores; without it, the way there marks the origin.
  const char* to_mark =
      to_version == kApiVersionMpiV2 ? kMpiV1FieldsAnnotation : kMpiV2FieldsAnnotation;
  const char* back_mark =
      to_version == kApiVersionMpiV2 ? kMpiV2FieldsAnnotation : kMpiV1FieldsAnnotation;
  bool coming_back = HasAnnotation(out, back_mark);
  if (to_version == kApiVersionMpiV2)
    Stash(&out, to_mark, {"mainContainer", "cleanPodPolicy"}, !coming_back);
  else
    Stash(
        &out, to_mark,
        {"runLauncherAsWorker", "sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation"},
        !coming_back);
  TRAINCTL_RETURN_IF_ERROR(Restore(&out, back_mark));
  if (to_version == kApiVersionMpiV2)
    RenameController(&out, kManagedByKubeflow, kManagedByMpiOperator);
  else
    RenameController(&out, kManagedByMpiOperator, kManagedByKubeflow);
  return out;
}

}  // namespace trainctl::api
