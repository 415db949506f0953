// Editing JSON documents the operator builds (JobSets, pod templates) in place, without
// exceptions on a field of the wrong type: the field becomes what the edit needs. Pure;
// thread-safe on distinct documents.
#pragma once

#include <nlohmann/json.hpp>

namespace trainctl::api {

// `object[key]` as an object, made one (replacing a non-object) when it is not; `object` too.
nlohmann::json& ObjectAt(nlohmann::json& object, const char* key);
// Sets the entry of a list of objects whose `key` field equals entry's, in place, or appends
// it; a non-list becomes a list.
void UpsertNamed(nlohmann::json* list, nlohmann::json entry, const char* key = "name");

}  // namespace trainctl::api
