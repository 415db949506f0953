#include "local/kubelet.h"

#include <algorithm>

namespace trainctl::local {

Duration RestartBackoff(int restarts) {
  long long ms = 1000;
  for (int i = 1; i < restarts && ms < 30000; ++i) ms *= 2;
  return Duration(std::min(ms, 30000LL));
}

ExitDecision DecideExit(api::RestartPolicy pod_policy, int exit_code, int restarts,
                        bool job_finished, bool interrupted) {
  ExitDecision out;
  if (api::RestartsInPlace(pod_policy, exit_code) && !job_finished && !interrupted) {
    out.restart = true;
    out.backoff = RestartBackoff(restarts + 1);
    return out;
  }
  out.phase = exit_code == 0 ? engine::Phase::kSucceeded : engine::Phase::kFailed;
  return out;
}

FinishDecision DecideFinish(bool job_finished, bool succeeded, bool interrupted,
                            std::optional<MonoTime> drain_started, MonoTime now, Duration drain) {
  FinishDecision out;
  out.drain_started = drain_started;
  if (!job_finished) return out;
  out.stop_idle = true;
  if (!succeeded || interrupted) {
    out.stop_all = true;
    return out;
  }
  if (!out.drain_started) out.drain_started = now;
  out.stop_all = now - *out.drain_started >= drain;
  return out;
}

}  // namespace trainctl::local
