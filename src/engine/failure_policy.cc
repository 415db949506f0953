#include "engine/failure_policy.h"

#include "api/restart_policy.h"
#include "api/restart_scope.h"

namespace trainctl::engine {

bool IsRetryableExitCode(std::optional<int> exit_code) { return !exit_code || *exit_code >= 128; }

FailureDecision DecideFailures(const api::Job& job, const std::vector<FailedReplica>& failed,
                               int retries) {
  FailureDecision out;
  out.retries = retries;
  const std::optional<int32_t>& limit = job.run_policy.backoff_limit;
  const bool gang = api::RestartScopeOf(job) == api::RestartScope::kGang;
  for (size_t i = 0; i < failed.size(); ++i) {
    const FailedReplica& f = failed[i];
    FailureVerdict verdict = FailureVerdict::kNone;
    auto spec = job.replica_specs.find(f.type);
    api::RestartPolicy policy = spec == job.replica_specs.end()
                                    ? api::RestartPolicy::kNever
                                    : api::ParseRestartPolicy(spec->second.restart_policy);
    bool retry = policy == api::RestartPolicy::kExitCode ? IsRetryableExitCode(f.exit_code)
                                                         : api::RetriesFailures(policy);
    if (retry && f.in_spec && gang && out.restart_all) {
      verdict = FailureVerdict::kRestart;  // part of the one restart of every replica
    } else if (retry && f.in_spec) {
      if (limit && out.retries + 1 > *limit) {
        verdict = FailureVerdict::kBackoffExceeded;
      } else {
        out.retries += 1;
        verdict = FailureVerdict::kRestart;
        out.restart_all = gang;
      }
    } else if (policy == api::RestartPolicy::kExitCode) {
      verdict = FailureVerdict::kPermanent;
    }
    bool fatal =
        verdict == FailureVerdict::kBackoffExceeded || verdict == FailureVerdict::kPermanent;
    if (fatal && !out.fatal) out.fatal = i;
    out.verdicts.push_back(verdict);
  }
  return out;
}

}  // namespace trainctl::engine
