#include "api/mpi_v1alpha2.h"

#include "api/json_fields.h"
#include "api/kinds.h"

namespace trainctl::api {

bool IsMpiV1alpha2(const nlohmann::json& doc) {
  return doc.is_object() && StringAt(doc, "apiVersion") == kApiVersionMpiV1alpha2 &&
         StringAt(doc, "kind") == "MPIJob";
}

StatusOr<nlohmann::json> ConvertMpiV1alpha2(const nlohmann::json& doc, std::string* note) {
  nlohmann::json out = doc;
  out["apiVersion"] = kApiVersion;
  std::string moved;
  if (out.contains("spec") && out["spec"].is_object()) {
    nlohmann::json& spec = out["spec"];
    for (const char* field : {"backoffLimit", "activeDeadlineSeconds"}) {
      if (!spec.contains(field)) continue;
      if (!spec[field].is_number_integer())
        return InvalidError(std::string("spec.") + field +
                            ": Invalid value: " + spec[field].dump() + ": expected an integer");
      if (spec.contains("runPolicy") && !spec["runPolicy"].is_object())
        return InvalidError("spec.runPolicy: Invalid value: " + spec["runPolicy"].dump() +
                            ": expected an object");
      nlohmann::json& run_policy = spec["runPolicy"];
      // runPolicy's own value wins, as v1alpha2's controller read it first.
      if (!run_policy.contains(field)) run_policy[field] = spec[field];
      spec.erase(field);
      moved += std::string(moved.empty() ? "" : " and ") + "spec." + field;
    }
  }
  std::string name;
  if (doc.contains("metadata") && doc["metadata"].is_object())
    name = StringAt(doc["metadata"], "name");
  *note = "MPIJob " + name + " is " + kApiVersionMpiV1alpha2 +
          " (mpi-operator v0.3 and before): run as " + kApiVersion +
          ", its successor with the same launcher" +
          (moved.empty() ? std::string() : "; " + moved + " moved under spec.runPolicy") +
          ". A cluster does not serve " + kApiVersionMpiV1alpha2 + ": write " + kApiVersion +
          " or " + kApiVersionMpiV2 + " there";
  return out;
}

}  // namespace trainctl::api
