// What a substrate observes about a job's replicas, and the plan the decision core returns.
//
// Plain value types shared by the engine and both substrates (local processes, Kubernetes pods).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/clock.h"

namespace trainctl::engine {

enum class Phase { kPending, kRunning, kSucceeded, kFailed };
const char* PhaseName(Phase phase);

// One replica (a pod, or a local process group) as the substrate sees it.
struct ReplicaObservation {
  std::string name;  // "<job>-<type>-<index>"
  // This incarnation's identity where the substrate has one (a pod's metadata.uid): a removal
  // applies to the incarnation observed, never to a newer one under the same name.
  std::string uid;
  std::string type;  // exact replica type, e.g. "Worker"
  int index = 0;
  Phase phase = Phase::kPending;
  std::optional<int> exit_code;  // default container's last terminated exit code
  int restarts = 0;              // in-place container restarts (restartCount)
  int attempt = 0;               // the job's attempt it belongs to (gang restart; 0 = first)
  bool terminating = false;      // being deleted (deletionTimestamp set / being stopped)
  // Its run ended in a replica that is still Running: it is restarted in place once the
  // substrate's back-off is over (a real kubelet reports the container `terminated` for most
  // of the back-off and `waiting: CrashLoopBackOff` only around the restart).
  bool awaiting_restart = false;

  // Why it is not running, when the substrate knows (docs/status-machine.md, "Why"): a
  // container's waiting reason (ImagePullBackOff, CrashLoopBackOff: waiting for the restart
  // back-off, on both substrates, …), Unschedulable; `waiting_message` is the detail (the
  // scheduler's message…).
  std::string waiting_reason;
  std::string waiting_message;
  // How it last ended (current or last terminated state, so also for a replica that runs again
  // after an in-place restart, with `exit_code`): OOMKilled, Error, Evicted, …; its
  // termination message or last log lines (the substrate bounds it to a few KiB); when.
  std::string end_reason;
  std::string end_message;
  std::optional<Time> finished_at;
  // The substrate's order of that end among the job's replicas, when it keeps one (the local
  // runner's exit sequence: its times have whole seconds only); 0 = unknown.
  long long exit_seq = 0;
  // When its current run started, for a replica that runs (after an in-place restart: the
  // restart), when the substrate knows.
  std::optional<Time> started_at;
  // The last time it wrote output, when the substrate measures it (hang detection).
  std::optional<Time> last_output;
  // Checkpoint notice (api/checkpoint_notice.h): the notice it was told ("" : none), and
  // whether it reported that it is done checkpointing.
  std::string notice;
  bool notice_done = false;
  // A process the replica started exited failing while the replica itself still runs: a
  // torchrun worker, whose agent then waits at its exit barrier (api/torchrun_report.h). The
  // first such exit of the replica's current run, when the substrate reads it from the output.
  struct ProcessExit {
    std::optional<int> rank;  // global rank, when the replica's env fixes it
    int local_rank = 0;
    int exit_code = 0;
    std::optional<Time> at;  // when the substrate read the report
    std::string output;      // the replica's last lines before the report (bounded)
  };
  std::optional<ProcessExit> process_failure;
};

struct ReplicaRef {
  std::string type;
  int index = 0;
  std::string name;
  bool operator==(const ReplicaRef&) const = default;
};

// The reason of the event that reports a job deleted after its TTL.
inline constexpr char kDeletedJobReason[] = "SuccessfulDeleteJob";

struct Event {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  bool operator==(const Event&) const = default;
};

// Counters that change once per transition (fixes upstream's per-reconcile counting).
enum class Metric { kJobCreated, kJobSucceeded, kJobFailed, kJobRestarted, kJobDeleted };

struct Plan {
  bool skip = false;  // managed by another controller: no action, no status write
  std::vector<ReplicaRef> create;
  std::vector<ReplicaRef> remove;  // stop/delete these replicas (and their services)
  api::JobStatus status;           // the new status
  bool status_changed = false;
  std::vector<Event> events;
  std::optional<Duration> requeue_after;  // reconcile again after this long at the latest
  bool delete_job = false;                // TTL after finish expired (event kDeletedJobReason)
  // Gang restart: the job's next attempt, to be recorded on the job (annotation
  // trainctl.dev/restart-attempt) before any replica is removed; replicas created later carry
  // the job's attempt (label and env).
  std::optional<int> restart_attempt;
  // Checkpoint notice: the job's new trainctl.dev/checkpoint-notice annotation ("" : remove
  // it), recorded on the job with restart_attempt, before anything else of the plan.
  std::optional<std::string> notice_record;
  // Replicas to tell the job's notice as it stands after notice_record ("" : take a notice
  // back): locally its file and signal, on a cluster its pod annotation.
  std::vector<ReplicaRef> notify;
  // On a cluster: add (true) or remove (false) the finalizer api::kNoticeFinalizer, recorded
  // with notice_record. A job with a notice policy carries it, so that its deletion waits for
  // the notice; a local run has no deletion to hold and ignores it.
  std::optional<bool> notice_finalizer;
  std::vector<Metric> metrics;
};

}  // namespace trainctl::engine
