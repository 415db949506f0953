// EventRecorder: records core/v1 Events for objects without blocking the caller. Record()
// queues (bounded; when full the oldest queued event is dropped and counted); a worker thread
// runs them through the EventCorrelator (dedupe, aggregation, spam filter) and creates or
// patches Events through the Client. An Event that expired before it could be patched is
// created again. Thread-safe; Flush() waits until the queue is empty (for tests and shutdown).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "kube/event_correlator.h"

namespace trainctl::kube {

struct RecorderStats {
  long created = 0, patched = 0, dropped_by_filter = 0, dropped_queue_full = 0, failed = 0;
};

class EventRecorder {
 public:
  EventRecorder(Client* client, const Clock* clock, CorrelatorOptions options,
                size_t max_queue = 1000);
  ~EventRecorder();

  void Record(EventInput event);
  // Called with each event Record() is given, on the caller's thread, before it is queued: the
  // operator's job history keeps a finished job's events without listing them
  // (operator/job_event_log.h). Set before the first Record().
  void SetTap(std::function<void(const EventInput&)> tap) { tap_ = std::move(tap); }
  bool Flush(Duration timeout);
  RecorderStats stats() const;

 private:
  void Loop();
  void Write(const EventInput& input);

  Client* client_;
  const Clock* clock_;
  EventCorrelator correlator_;  // worker thread only
  size_t max_queue_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventInput> queue_;  // guarded by mu_
  bool busy_ = false;             // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  RecorderStats stats_;           // guarded by mu_
  std::function<void(const EventInput&)> tap_;
  std::thread thread_;
};

}  // namespace trainctl::kube
