#include "api/json_edit.h"

#include "api/json_fields.h"

namespace trainctl::api {

using nlohmann::json;

json& ObjectAt(json& object, const char* key) {
  if (!object.is_object()) object = json::object();
  json& child = object[key];
  if (!child.is_object()) child = json::object();
  return child;
}

void UpsertNamed(json* list, json entry, const char* key) {
  if (!list->is_array()) *list = json::array();
  for (json& e : *list)
    if (e.is_object() && StringAt(e, key) == StringAt(entry, key)) {
      e = std::move(entry);
      return;
    }
  list->push_back(std::move(entry));
}

}  // namespace trainctl::api
