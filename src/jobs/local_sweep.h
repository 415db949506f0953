// The local sweep: the writes that keep this machine's state folder true once runners are gone,
// in one place. Reads never do them (jobs/local_source.h, jobs/local_view.h only read); the
// owners call the sweep explicitly: the dashboard's timer (`trainctl ui`), `trainctl get`
// (a job whose TTL has passed is gone from what it lists) and `trainctl history` (a job that
// finished unrecorded is in what it shows).
//
// For each job folder in scope whose runner does not hold its lock, in this order:
//   1. an unfinished job (its runner was killed): recorded as Failed (RunnerLost), its
//      unfinished replicas as Lost, and a RunnerLost event, as ReadLocalJob shows it;
//   2. a finished job with no history record: recorded (jobs/history_capture.h);
//   3. a finished job whose ttlSecondsAfterFinished has passed (the engine decides): its folder
//      removed.
// Steps 1 and 3 hold the runner lock, so a runner that starts meanwhile and the sweep never
// both write; a job whose runner holds the lock is the runner's and is left alone. Two sweeps
// at once do each write once at most (the lock, the history's uid).
//
// DecideSweep is pure. SweepLocalJobs and RecordLostRunner do file I/O; not thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "history/store.h"
#include "jobs/local_view.h"
#include "local/state_store.h"

namespace trainctl::jobs {

// What one job needs from the sweep.
struct SweepDecision {
  bool record_lost = false;  // step 1
  bool capture = false;      // step 2
  bool remove = false;       // step 3
  bool operator==(const SweepDecision&) const = default;
};

// `seen`: the job as ReadLocalJob gives it (a lost runner already shown as Failed).
// `has_record`: the history holds the job's uid (true when there is no history to write to).
SweepDecision DecideSweep(const LocalJobSnapshot& seen, bool has_record, Time now);

// What a sweep did.
struct SweepReport {
  std::vector<local::JobKey> lost;      // recorded as Failed (RunnerLost)
  std::vector<local::JobKey> recorded;  // history records written
  std::vector<local::JobKey> removed;   // folders removed: their TTL had passed
  std::vector<std::string> warnings;    // what could not be done, one line each
};

// The history to record into, asked for at most once and only when a finished job needs
// checking (so a sweep with nothing finished opens no file). nullptr: no history (nothing is
// recorded; TTL removal still happens).
using HistoryOpener = std::function<history::HistoryStore*()>;

// Sweeps the jobs under `root` in namespace `ns` (nullopt: every namespace) at clock.Now().
SweepReport SweepLocalJobs(const std::string& root, const std::optional<std::string>& ns,
                           const HistoryOpener& history, const Clock& clock);

// Step 1 for one job, under the runner lock: re-reads job.json and replicas.json and writes the
// RunnerLost update when it still applies. Returns whether it wrote; false when a runner holds
// the lock or the job has finished meanwhile.
StatusOr<bool> RecordLostRunner(local::JobDir& dir, Time now);

}  // namespace trainctl::jobs
