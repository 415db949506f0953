#include "api/restart_policy.h"

namespace trainctl::api {

RestartPolicy ParseRestartPolicy(std::string_view text) {
  if (text.empty()) return RestartPolicy::kUnset;
  if (text == "Always") return RestartPolicy::kAlways;
  if (text == "OnFailure") return RestartPolicy::kOnFailure;
  if (text == "Never") return RestartPolicy::kNever;
  if (text == "ExitCode") return RestartPolicy::kExitCode;
  return RestartPolicy::kUnknown;
}

const char* RestartPolicyName(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::kAlways:
      return "Always";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kNever:
      return "Never";
    case RestartPolicy::kExitCode:
      return "ExitCode";
    case RestartPolicy::kUnset:
    case RestartPolicy::kUnknown:
      return "";
  }
  return "";
}

RestartPolicy PodRestartPolicy(RestartPolicy replica_policy) {
  return replica_policy == RestartPolicy::kExitCode ? RestartPolicy::kNever : replica_policy;
}

bool RetriesFailures(RestartPolicy policy) {
  return policy == RestartPolicy::kAlways || policy == RestartPolicy::kOnFailure ||
         policy == RestartPolicy::kExitCode;
}

bool RestartsInPlace(RestartPolicy pod_policy, int exit_code) {
  return pod_policy == RestartPolicy::kAlways ||
         (pod_policy == RestartPolicy::kOnFailure && exit_code != 0);
}

}  // namespace trainctl::api
