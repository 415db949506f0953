#include "admission/conversion_review.h"

#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/mpi_conversion.h"

namespace trainctl::admission {

using nlohmann::json;

namespace {

json Review(const std::string& uid, json response) {
  response["uid"] = uid;
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "ConversionReview"},
          {"response", std::move(response)}};
}

json Failed(const std::string& uid, const std::string& message) {
  return Review(uid, {{"convertedObjects", json::array()},
                      {"result", {{"status", "Failure"}, {"message", message}}}});
}

}  // namespace

json ReviewConversion(const std::string& body) {
  std::string problem;
  json review = api::ParseJsonWithin(body, api::kApiJsonLimits, &problem);
  if (review.is_discarded()) return Failed("", "the request is not a ConversionReview: " + problem);
  if (!review.is_object() || !review.contains("request") || !review["request"].is_object())
    return Failed("", "the request is not a ConversionReview (no request object)");
  const json& request = review["request"];
  std::string uid = api::StringAt(request, "uid");
  std::string desired = api::StringAt(request, "desiredAPIVersion");
  if (!request.contains("objects") || !request["objects"].is_array())
    return Failed(uid, "request.objects: Required value: the objects to convert");
  json converted = json::array();
  const json& objects = request["objects"];
  for (size_t i = 0; i < objects.size(); ++i) {
    StatusOr<json> out = api::ConvertMpiJob(objects[i], desired);
    if (!out.ok()) {
      std::string name = objects[i].is_object() && objects[i].contains("metadata") &&
                                 objects[i]["metadata"].is_object()
                             ? api::StringAt(objects[i]["metadata"], "name")
                             : "";
      return Failed(uid, "request.objects[" + std::to_string(i) + "] (" +
                             (name.empty() ? "no name" : name) + "): " + out.status().message());
    }
    converted.push_back(std::move(out).value());
  }
  return Review(uid,
                {{"convertedObjects", std::move(converted)}, {"result", {{"status", "Success"}}}});
}

}  // namespace trainctl::admission
