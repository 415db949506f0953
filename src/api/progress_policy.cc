#include "api/progress_policy.h"

#include <charconv>

#include "api/annotations.h"

namespace trainctl::api {
namespace {

constexpr int64_t kMaxTimeoutSeconds = 7 * 24 * 3600;

}  // namespace

const char* ProgressActionName(ProgressAction action) {
  switch (action) {
    case ProgressAction::kWarn:
      return "Warn";
    case ProgressAction::kFail:
      return "Fail";
    case ProgressAction::kRestart:
      return "Restart";
  }
  return "Warn";
}

std::optional<ProgressPolicy> ProgressPolicyOf(const Job& job, FieldErrorList* errors) {
  const nlohmann::json* timeout = AnnotationOf(job, kProgressTimeoutAnnotation);
  const nlohmann::json* policy = AnnotationOf(job, kProgressPolicyAnnotation);
  if (!timeout) {
    if (policy && errors)
      errors->push_back(
          Required(AnnotationPath(kProgressTimeoutAnnotation),
                   std::string("required when ") + kProgressPolicyAnnotation + " is set"));
    return std::nullopt;
  }
  ProgressPolicy out;
  bool ok = true;
  int64_t seconds = 0;
  std::string text = timeout->is_string() ? timeout->get<std::string>() : std::string();
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || seconds < 1 ||
      seconds > kMaxTimeoutSeconds) {
    ok = false;
    if (errors)
      errors->push_back(Invalid(AnnotationPath(kProgressTimeoutAnnotation), *timeout,
                                "expected a whole number of seconds from 1 to 604800"));
  }
  out.timeout = std::chrono::seconds(seconds);
  if (policy) {
    std::string p = policy->is_string() ? policy->get<std::string>() : std::string();
    if (p == "Warn") {
      out.action = ProgressAction::kWarn;
    } else if (p == "Fail") {
      out.action = ProgressAction::kFail;
    } else if (p == "Restart") {
      out.action = ProgressAction::kRestart;
    } else {
      ok = false;
      if (errors)
        errors->push_back(NotSupported(AnnotationPath(kProgressPolicyAnnotation), *policy,
                                       {"Warn", "Fail", "Restart"}));
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace trainctl::api
