#include "api/annotations.h"

namespace trainctl::api {

const nlohmann::json* AnnotationOf(const Job& job, const char* key) {
  if (!job.metadata.is_object()) return nullptr;
  auto annotations = job.metadata.find("annotations");
  if (annotations == job.metadata.end() || !annotations->is_object()) return nullptr;
  auto it = annotations->find(key);
  return it == annotations->end() ? nullptr : &*it;
}

std::string AnnotationText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::string AnnotationPath(const char* key) {
  return std::string("metadata.annotations[") + key + "]";
}

}  // namespace trainctl::api
