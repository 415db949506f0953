// Telling the user why (docs/status-machine.md, "Why"): the decisions behind the ReplicasReady
// condition (why replicas are not running, aggregated into one reason), the attribution of a
// failure to the replica that failed first, and hang detection. Used by Reconcile for both
// substrates; the operator also applies job-level reasons it learns after its writes (a gang
// not admitted, a pod create refused by a quota).
//
// Pure: no I/O, no clock reads; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/progress_policy.h"
#include "engine/plan.h"

namespace trainctl::engine {

// A message of ReplicasReady is refreshed at most this often while its reason stays the same
// (no status write storm while counts change); a new reason is written at once.
inline constexpr Duration kReadinessRefresh{10000};
// The most a failure attribution adds to a condition message.
inline constexpr size_t kMaxAttributionBytes = 1536;

struct Readiness {
  bool ready = false;
  std::string reason;    // AllReplicasRunning when ready, else e.g. Unschedulable, Starting
  std::string message;   // one paragraph, bounded
  bool warning = false;  // needs the user's attention: the event is a Warning
};

// A replica that failed and was restarted in place stays in its crash loop while it waits for
// its back-off (CrashLoopBackOff, or ended again: awaiting_restart) and, once running again,
// until its new run is this old: a loop is reported once, with its changes, not as "all
// running" between two crashes.
inline constexpr Duration kCrashLoopSettle{60000};

// Whether `r` is in a crash loop at `now` (see kCrashLoopSettle).
bool InCrashLoop(const ReplicaObservation& r, Time now);

// The aggregated readiness of the replicas the job's spec asks for. Problem reasons first, in a
// fixed order (image, container config, crash loop, failed, unschedulable), then
// every benign state folded into Starting. A crash loop counts every replica in it and names
// the one that exited last: its exit, its restarts and its last output (at most
// kMaxAttributionBytes in all).
Readiness AssessReplicas(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                         Time now);

// A suspended job: WaitingForAdmission when Kueue holds it (a kueue.x-k8s.io/queue-name label),
// else Suspended.
Readiness SuspendedReadiness(const api::Job& job);

// Writes ReplicasReady (first in the list): a new status or reason at once, with an event; a new
// message with the same reason only when the last update is kReadinessRefresh old, else
// `*refresh_after` says when to look again. `events` and `refresh_after` may be null. Returns
// true when the status changed.
bool ApplyReadiness(const Readiness& readiness, Time now, api::JobStatus* status,
                    std::vector<Event>* events, std::optional<Duration>* refresh_after);
void ClearReadiness(api::JobStatus* status);

// "<replica> (<Type> <i>): rank R (local_rank L) exited with code C at <time>" for a replica
// whose process failed while it runs (ReplicaObservation::process_failure); "" when none.
std::string ProcessFailureText(const ReplicaObservation& r);

// What a job's success message adds when a process of one of its replicas failed while the
// job ran (the lead replica decides success, as upstream): " While it ran, a process failed:
// <the earliest's ProcessFailureText> (and N more)."; "" when none did.
std::string FailedRanksNote(const std::vector<ReplicaObservation>& observed);

// The one rule for which replica failed first, used by the Failed/Restarting condition text, the
// local job view (`describe -o json`'s `failure`) and, through that text, the SDK: among the
// replicas that ended failing (phase Failed, or restarted in place after a non-zero exit), the
// earliest known end; the same instant by `exit_seq` (when known), then by name; unknown ends
// last. nullopt when none has failed.
std::optional<size_t> FirstFailedIndex(const std::vector<ReplicaObservation>& observed);

// "First failure: <replica> exited with code 3 (Error) at <time>." plus its last output, for
// FirstFailedIndex's replica; nullopt when none. At most kMaxAttributionBytes.
std::optional<std::string> FirstFailure(const std::vector<ReplicaObservation>& observed);

// Hang detection for a job whose replicas all run. `ready_since`: when they all started running.
struct ProgressVerdict {
  bool hung = false;
  std::string message;                  // why, when hung
  std::optional<Duration> check_after;  // when not hung: when the timeout would be reached
};
ProgressVerdict CheckProgress(const api::ProgressPolicy& policy,
                              const std::vector<ReplicaObservation>& observed, Time ready_since,
                              Time now);

}  // namespace trainctl::engine
