// HistoryRecorder: the operator's job history (--history sqlite:PATH, docs/history.md). The
// controller asks Recorded(uid) for each finished job; while the answer is no it holds the
// job's pods and TTL (operator/sync_plan.h, kHistoryHold) and, once its final status is stored,
// Enqueue()s a snapshot made from its caches (operator/history_snapshot.h). One worker thread
// adds the events this operator recorded (events(), fed by the EventRecorder's tap; listed from
// the API only for a job created before this leader began), reads the log tails of rank 0 and
// of the failed replicas through pods/log (jobs::SnapshotRecord) and writes the record; a
// failed capture is retried with back-off. Only the leader runs the controller, so only the
// leader writes.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "history/store.h"
#include "jobs/cluster_source.h"
#include "jobs/history_capture.h"
#include "operator/job_event_log.h"

namespace trainctl::op {

class HistoryRecorder {
 public:
  HistoryRecorder(std::unique_ptr<history::HistoryStore> store,
                  std::unique_ptr<jobs::ClusterJobSource> source, history::Limits limits,
                  const Clock* clock);
  ~HistoryRecorder();
  HistoryRecorder(const HistoryRecorder&) = delete;
  HistoryRecorder& operator=(const HistoryRecorder&) = delete;

  void Start();
  void Stop();
  bool Recorded(const std::string& uid);
  // Records the finished job soon; a job already queued or recorded is not queued again.
  void Enqueue(jobs::ClusterSnapshot snapshot);
  // The events recorded for each job (the EventRecorder's tap adds to it; the controller calls
  // Begin() when it starts).
  JobEventLog& events() { return events_; }
  // Called (on the recorder's thread) once a job is recorded or given up on: the controller
  // syncs it again at once instead of polling. Set before Start().
  void OnDone(
      std::function<void(api::Kind kind, const std::string& ns, const std::string& name)> done) {
    on_done_ = std::move(done);
  }
  // Records written, and captures that failed (for logs and tests).
  size_t written() const { return written_; }
  size_t failed() const { return failed_; }

 private:
  struct Item {
    jobs::ClusterSnapshot snapshot;
    std::string ns, name, uid;
    api::Kind kind;
    int attempts = 0;
  };
  void Work();

  std::unique_ptr<history::HistoryStore> store_;    // guarded by store_mu_
  std::unique_ptr<jobs::ClusterJobSource> source_;  // used by the worker only
  history::Limits limits_;
  const Clock* clock_;
  JobEventLog events_;
  std::mutex store_mu_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;          // guarded by mu_
  std::set<std::string> queued_;    // uids in queue_ or being captured; guarded by mu_
  std::set<std::string> recorded_;  // guarded by store_mu_
  bool stop_ = false;               // guarded by mu_
  std::function<void(api::Kind, const std::string&, const std::string&)> on_done_;
  std::thread worker_;
  std::atomic<size_t> written_{0}, failed_{0};
};

}  // namespace trainctl::op
