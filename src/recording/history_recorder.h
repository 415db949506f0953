// HistoryRecorder: the operator's job history (--history sqlite:PATH, docs/history.md). The
// controller asks Recorded(uid) for each finished job; while the answer is no it holds the
// job's deletions (operator/sync_plan.h, kHistoryHold) and, once its final status is stored,
// Enqueue()s a snapshot made from its caches (recording/history_snapshot.h), kept as compact text
// while it waits. The TrainJob controller does the same without a hold (JobSet deletes its own
// pods), asking Queued(uid) first so that a finished TrainJob is resolved for its snapshot once.
// Capture threads (kWorkers: the work is waiting on the API server) add the events this operator
// recorded (events(), fed by the EventRecorder's tap; listed from the API only for a job this
// leader did not see from its start) and read the log tails of rank 0 and of the failed replicas
// through pods/log (jobs::SnapshotRecord). One writer thread stores the records in batches (up to
// kMaxBatch, gathered for kBatchWindow): one transaction each, since a transaction per record costs
// several times more. A failed capture or write is retried with back-off. Only the leader runs the
// controller, so only the leader writes.
//
// What it records and fails to record is said through `log` (the operator's log: compose.cc).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "history/store.h"
#include "jobs/cluster_source.h"
#include "jobs/history_capture.h"
#include "recording/job_event_log.h"

namespace trainctl::recording {

// Receives each line to log, and whether it is an error.
using RecordingLog = std::function<void(bool error, const std::string& line)>;

class HistoryRecorder {
 public:
  // Two capture threads: each log read waits ~10-30 ms on the API server, so two keep up with
  // 1,000 jobs finishing within a minute, and each thread costs memory (its own malloc arena).
  static constexpr int kWorkers = 2;
  static constexpr size_t kMaxBatch = 64;
  static constexpr Duration kBatchWindow{200};

  // `client` (for the log reads; the operator passes its event client, so they never wait
  // behind the controller's creates) and `clock` must outlive the recorder.
  HistoryRecorder(std::unique_ptr<history::HistoryStore> store, kube::Client* client,
                  history::Limits limits, const Clock* clock, RecordingLog log);
  ~HistoryRecorder();
  HistoryRecorder(const HistoryRecorder&) = delete;
  HistoryRecorder& operator=(const HistoryRecorder&) = delete;

  void Start();
  void Stop();
  bool Recorded(const std::string& uid);
  // The job is queued, being captured or being written (Enqueue would not queue it again).
  bool Queued(const std::string& uid);
  // Records the finished job soon; a job already queued or recorded is not queued again.
  // `wake`: call OnDone's function when it is recorded or given up on (a deletion waits).
  void Enqueue(jobs::ClusterSnapshot snapshot, bool wake);
  // The events recorded for each job (the EventRecorder's tap adds to it; the controller
  // opens each new job in it).
  JobEventLog& events() { return events_; }
  // Called (on a recorder thread) once a job enqueued with `wake` is recorded or given up on:
  // the controller syncs it again at once instead of polling. Set before Start().
  void OnDone(
      std::function<void(api::Kind kind, const std::string& ns, const std::string& name)> done) {
    on_done_ = std::move(done);
  }
  // CPU seconds spent for the history on threads it shares (the controller's syncs: Recorded,
  // the held decision, the snapshot; the event recorder's tap). Its own threads are named
  // "hist-capture" and "hist-writer". Exported in /metrics, read by the scale benchmark.
  std::atomic<int64_t>* shared_cpu_nanos() { return &shared_cpu_nanos_; }
  double shared_cpu_seconds() const { return shared_cpu_nanos_.load() / 1e9; }
  // Records written, and captures that failed (for logs and tests).
  size_t written() const { return written_; }
  size_t failed() const { return failed_; }

 private:
  // A job waiting for its capture: the snapshot as text (a parsed job is ten times larger,
  // and at scale hundreds wait at once).
  struct Item {
    std::string job_text, replicas_text;
    std::vector<jobs::LogTarget> targets;
    std::optional<std::string> metrics_replica;
    std::string ns, name, uid;
    api::Kind kind;
    bool wake = false;
    int attempts = 0;
  };
  // A record waiting for the writer.
  struct Write {
    std::string ns, name, uid;
    api::Kind kind;
    bool wake = false;
    history::HistoryStore::Text text;
  };
  void Work();    // a capture thread
  void Writer();  // the writer thread
  // After a job is recorded or given up on.
  void Done(const std::string& uid, api::Kind kind, const std::string& ns, const std::string& name,
            bool wake);

  std::unique_ptr<history::HistoryStore> store_;  // guarded by store_mu_
  kube::Client* client_;
  history::Limits limits_;
  const Clock* clock_;
  RecordingLog log_;
  JobEventLog events_;
  // The uids with a record: read from the store at the first Recorded() (the controller runs
  // only on the leader, so by then this process is the only writer) and kept up to date by the
  // writer, so that a finished job's sync never waits on the store while a batch commits.
  // Read again after kMaxRemembered uids.
  static constexpr size_t kMaxRemembered = 100000;
  std::mutex seen_mu_;
  bool loaded_ = false;             // guarded by seen_mu_
  bool load_failed_ = false;        // guarded by seen_mu_ (logged once)
  std::set<std::string> recorded_;  // guarded by seen_mu_
  std::mutex store_mu_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;    // guarded by mu_
  std::deque<Write> writes_;  // guarded by mu_
  std::condition_variable write_wake_;
  std::set<std::string> queued_;  // uids queued, being captured or written; guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::function<void(api::Kind, const std::string&, const std::string&)> on_done_;
  std::vector<std::thread> workers_;  // the capture threads and the writer
  std::atomic<size_t> written_{0}, failed_{0};
  std::atomic<int64_t> shared_cpu_nanos_{0};
};

}  // namespace trainctl::recording
