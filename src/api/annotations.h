// Reading trainctl's own annotations of a job (trainctl.dev/…): the value and the field path
// that errors name. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/job.h"

namespace trainctl::api {

// metadata.annotations[key] of the job as written (a string when valid), or nullptr.
const nlohmann::json* AnnotationOf(const Job& job, const char* key);

// An annotation's value as text: "" when it is not a string.
std::string AnnotationText(const nlohmann::json& value);

// "metadata.annotations[<key>]"
std::string AnnotationPath(const char* key);

}  // namespace trainctl::api
