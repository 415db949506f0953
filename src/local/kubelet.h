// What a kubelet would do with a local replica, and what the runner does once the job has
// finished: the runner's decisions that are not the engine's, pure (the runner reads process
// state, asks these, then signals and records).
#pragma once

#include <optional>

#include "api/restart_policy.h"
#include "common/clock.h"
#include "engine/plan.h"

namespace trainctl::local {

// Crash-loop back-off before in-place restart number `restarts` (1-based): 1 s doubling to a
// 30 s cap (the kubelet uses 10 s to 5 min; shorter here because a local run is interactive).
Duration RestartBackoff(int restarts);

// When a replica's main process exits with `exit_code`: restarted in place after `backoff`
// (the kubelet's rule for its pod policy, only while the job runs and no signal stopped the
// run), or done in `phase` (Succeeded for 0, else Failed). `restarts`: in-place restarts so far.
struct ExitDecision {
  bool restart = false;
  Duration backoff{0};
  engine::Phase phase = engine::Phase::kFailed;  // when not restarted
};
ExitDecision DecideExit(api::RestartPolicy pod_policy, int exit_code, int restarts,
                        bool job_finished, bool interrupted);

// Once the job has finished: idle stand-ins (MPIJob Workers) stop at once; the other replicas
// stop at once too unless the job Succeeded without a signal, in which case they get `drain`
// from the first finished pass (`drain_started`, monotonic) to end by themselves.
struct FinishDecision {
  bool stop_idle = false;
  bool stop_all = false;
  std::optional<MonoTime> drain_started;  // to keep for the next pass
};
FinishDecision DecideFinish(bool job_finished, bool succeeded, bool interrupted,
                            std::optional<MonoTime> drain_started, MonoTime now, Duration drain);

}  // namespace trainctl::local
