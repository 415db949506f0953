// What a kubelet would do when a local replica's process exits, and how long it waits before
// an in-place restart. Pure.
#pragma once

#include <string>

#include "common/clock.h"

namespace trainctl::local {

// The pod-level restart policy for a replica restart policy (ExitCode → Never, as upstream).
std::string PodRestartPolicy(const std::string& replica_restart_policy);

// True when the container is restarted in place (Always; OnFailure with a non-zero code).
bool RestartInPlace(const std::string& pod_restart_policy, int exit_code);

// Crash-loop back-off before in-place restart number `restarts` (1-based): 1 s doubling to a
// 30 s cap (the kubelet uses 10 s to 5 min; shorter here because a local run is interactive).
Duration RestartBackoff(int restarts);

}  // namespace trainctl::local
