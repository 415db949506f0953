// How long a kubelet waits before restarting a local replica's process in place (whether it
// restarts at all: api::RestartsInPlace). Pure.
#pragma once

#include "common/clock.h"

namespace trainctl::local {

// Crash-loop back-off before in-place restart number `restarts` (1-based): 1 s doubling to a
// 30 s cap (the kubelet uses 10 s to 5 min; shorter here because a local run is interactive).
Duration RestartBackoff(int restarts);

}  // namespace trainctl::local
