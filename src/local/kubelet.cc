#include "local/kubelet.h"

#include <algorithm>

namespace trainctl::local {

std::string PodRestartPolicy(const std::string& replica_restart_policy) {
  if (replica_restart_policy == "ExitCode" || replica_restart_policy.empty()) return "Never";
  return replica_restart_policy;
}

bool RestartInPlace(const std::string& pod_restart_policy, int exit_code) {
  if (pod_restart_policy == "Always") return true;
  return pod_restart_policy == "OnFailure" && exit_code != 0;
}

Duration RestartBackoff(int restarts) {
  long long ms = 1000;
  for (int i = 1; i < restarts && ms < 30000; ++i) ms *= 2;
  return Duration(std::min(ms, 30000LL));
}

}  // namespace trainctl::local
