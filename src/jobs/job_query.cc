#include "jobs/job_query.h"

namespace trainctl::jobs {

using nlohmann::json;

StatusOr<JobRef> ParseJobRef(const std::vector<std::string>& args) {
  JobRef ref;
  if (args.size() == 2) {
    ref.kind = api::KindFromCliName(args[0]);
    if (!ref.kind)
      return InvalidError("unknown kind \"" + args[0] + "\" (try pytorchjob, tfjob, ...)");
    ref.name = args[1];
  } else if (args.size() == 1) {
    const std::string& a = args[0];
    if (size_t slash = a.find('/'); slash != std::string::npos) {
      ref.kind = api::KindFromCliName(a.substr(0, slash));
      if (!ref.kind) return InvalidError("unknown kind in \"" + a + "\"");
      ref.name = a.substr(slash + 1);
    } else {
      ref.name = a;
    }
  } else {
    return InvalidError("expected [KIND] NAME");
  }
  if (ref.name.empty()) return InvalidError("expected [KIND] NAME, got an empty name");
  return ref;
}

StatusOr<JobRef> ParseGetArgs(const std::vector<std::string>& args) {
  JobRef ref;
  if (args.size() == 1) {
    ref.kind = api::KindFromCliName(args[0]);
    if (!ref.kind) return ParseJobRef(args);
  } else if (args.size() == 2) {
    return ParseJobRef(args);
  } else if (args.size() > 2) {
    return InvalidError("expected [KIND] [NAME]");
  }
  return ref;
}

StatusOr<std::string> ParseWaitCondition(const std::string& for_flag) {
  std::string condition = for_flag;
  if (condition.rfind("condition=", 0) == 0) condition = condition.substr(10);
  for (const char* known : {"Created", "Running", "Restarting", "Succeeded", "Suspended", "Failed"})
    if (condition == known) return condition;
  return InvalidError(
      "--for: unknown condition \"" + for_flag +
      "\" (condition=Created, Running, Restarting, Succeeded, Suspended or Failed)");
}

namespace {

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

const json* TrueCondition(const json& job, const std::string& type) {
  const json* conditions =
      job.contains("status") && job["status"].is_object() && job["status"].contains("conditions")
          ? &job["status"]["conditions"]
          : nullptr;
  if (!conditions || !conditions->is_array()) return nullptr;
  for (const json& c : *conditions)
    if (Str(c, "type") == type && Str(c, "status") == "True") return &c;
  return nullptr;
}

}  // namespace

WaitOutcome EvaluateWait(const json& job, const std::string& condition) {
  const json* failed = TrueCondition(job, "Failed");
  bool finished = failed != nullptr || TrueCondition(job, "Succeeded") != nullptr;
  if (TrueCondition(job, condition)) return {WaitState::kMet, "", finished};
  if (failed) return {WaitState::kFailed, Str(*failed, "message"), true};
  if (finished) return {WaitState::kFinishedWithout, "", true};
  return {};
}

std::string ResourceName(api::Kind kind) {
  return api::ToLower(api::Info(kind).name) + ".kubeflow.org";
}

}  // namespace trainctl::jobs
