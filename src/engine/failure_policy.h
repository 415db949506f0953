// The failure-policy step of the engine: given the replicas that failed in a pass, what the
// job does about them — restart these, restart all, or fail — and what that costs against
// backoffLimit. Decided once here for both substrates; engine/reconcile.cc counts the slots
// and carries the decision out.
//
// The rules (docs/status-machine.md, kubeflow-v1.md §4.4): a failed replica whose restart policy
// retries failures (OnFailure, Always; ExitCode with a retryable code: none, or 128 and above)
// and whose index is still in the spec is restarted, each restart one retry; a retry past
// backoffLimit fails the job; any other failed ExitCode replica (a permanent code, or scaled
// away) fails the job. Replicas are taken in the order given (replica type, then index); the first
// failing verdict decides the job's message.
//
// With the job's restart scope Gang (api/restart_scope.h) the retried failures of a pass
// collapse into one "restart all": every retried replica gets kRestart (or, past backoffLimit,
// kBackoffExceeded) but the pass costs one retry, and `restart_all` is set; a fatal verdict
// (kPermanent) still fails the job.
//
// Pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"

namespace trainctl::engine {

// A replica observed Failed in this pass.
struct FailedReplica {
  std::string type;
  int index = 0;
  std::optional<int> exit_code;
  bool in_spec = true;  // index < the type's replicas
};

enum class FailureVerdict {
  kNone,             // neither retried nor fatal here (Never; a replica scaled away)
  kRestart,          // restart it: one retry
  kBackoffExceeded,  // it would be retried, but backoffLimit is reached: the job fails
  kPermanent,        // ExitCode with a permanent exit code: the job fails
};

struct FailureDecision {
  std::vector<FailureVerdict> verdicts;  // one per failed replica, in order
  int retries = 0;                       // retries so far, after the restarts decided here
  // The first fatal verdict's index in `verdicts`, when the job fails.
  std::optional<size_t> fatal;
  // Gang scope: the kRestart verdicts are one restart of every replica (one retry).
  bool restart_all = false;
};

// `retries`: the retries counted before this pass (past and live restarts).
FailureDecision DecideFailures(const api::Job& job, const std::vector<FailedReplica>& failed,
                               int retries);

// Whether `exit_code` may be retried under the ExitCode policy: unknown, or 128 and above
// (killed by a signal: OOM, preemption, eviction).
bool IsRetryableExitCode(std::optional<int> exit_code);

}  // namespace trainctl::engine
