// EventRecorder: records core/v1 Events for objects without blocking the caller. Record()
// queues (bounded; when full the oldest queued event is dropped and counted); a worker thread
// runs them through the EventCorrelator (dedupe, aggregation, spam filter) and creates or
// patches Events through the Client. An Event that expired before it could be patched is
// created again. Thread-safe; Flush() waits until the queue is empty (for tests and shutdown);
// events held by the spam filter do not count.
//
// Spam filter: before an event spends the budget, the worker asks the correlator whether its
// object has a token; if not, the event is put aside (EventQueue::DeferFront), folded by object,
// type and reason like events over the budget, and goes back to the queue once the object has a
// token again. A big job's events beyond its burst are written minutes late, their count and
// names carried ("Created pod: a-25, a-26, … and 1,950 more"; past the correlator's 10 distinct
// messages, as a count patch of the Event that combines them), where client-go drops them.
//
// Budget: with `qps` > 0 the worker writes at most `qps` Events a second (`burst` saved up).
// Over it (no token left when an event is recorded, or the writer waiting for one) an event is
// folded into a queued one for the same object, type and reason, and an Event that had to wait
// absorbs every such event queued behind it (kube/event_queue.h: "Created pod: a-0, a-1, a-2",
// count 3), so a burst costs fewer writes and loses nothing while fewer than `max_queue`
// distinct ones wait. Under the budget nothing is folded: each event is its own Event, as
// without a budget, unless the writer is behind: an event that waited `fold_after` or more in
// the queue (the API server answers slowly, so one writer cannot keep up) absorbs those of
// its object, type and reason queued behind it, as if it had waited for the budget. At
// shutdown (Stop(), or the destructor) the queue is folded and written without the budget, for
// at most `drain_limit`, with what the spam filter holds and without the filter; the budget's
// and the filter's waits end early when the recorder stops.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/event_correlator.h"
#include "kube/event_queue.h"
#include "kube/rate_limiter.h"

namespace trainctl::kube {

// Writes, and occurrences lost (a folded Event lost counts all it carried).
struct RecorderStats {
  long created = 0, patched = 0;            // Events written
  long dropped_queue_full = 0, failed = 0;  // occurrences lost
  long held_by_filter = 0;   // occurrences put aside for the spam filter (each time; not lost)
  long folded = 0;           // events carried by another's write (over budget)
  long dropped_at_stop = 0;  // still queued when the shutdown's drain time ran out
};

// The occurrences lost, all causes together.
long EventsLost(const RecorderStats& stats);
// One line for the operator's log at its stop: "events: 7865 created, 0 patched, 5685 folded
// into another's write, none lost" (or what was lost, and why).
std::string EventSummary(const RecorderStats& stats);

struct RecorderBudget {
  double qps = 0;  // Events written a second at most; <= 0: no budget (nothing folded)
  int burst = 1;
  // Distinct Events waiting (job, type, reason) at most. Sized for the operator's 1,000 jobs in
  // flight, each with a few reasons waiting at once: ~1 MB at 100 bytes a message, 10 MB at
  // worst (a folded message stops at 1 KiB).
  size_t max_queue = 10000;
  Duration drain_limit{10000};  // at shutdown, what is queued is written for this long at most
  Duration fold_after{2000};    // an event that waited this long absorbs its kind behind it
};

class EventRecorder {
 public:
  EventRecorder(Client* client, const Clock* clock, CorrelatorOptions options,
                RecorderBudget budget = {});
  ~EventRecorder();

  void Record(EventInput event);
  // Called with each event Record() is given, on the caller's thread, before it is queued: the
  // operator's job history keeps a finished job's events without listing them
  // (recording/job_event_log.h). Set before the first Record().
  void SetTap(std::function<void(const EventInput&)> tap) { tap_ = std::move(tap); }
  bool Flush(Duration timeout);
  RecorderStats stats() const;
  // Stops the writer once what is queued is written (see the drain above) and returns the
  // final stats. An event recorded once the writer has ended is counted as lost at the stop
  // (dropped_at_stop), not queued. Idempotent; the destructor calls it.
  RecorderStats Stop();

 private:
  void Loop();
  // Writes `input`; returns false when the spam filter refused it after all (not written).
  // `stopping`: the filter is not asked.
  bool Write(const EventInput& input, bool stopping);

  Client* client_;
  const Clock* clock_;
  EventCorrelator correlator_;  // worker thread only
  RateLimiter budget_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const Duration drain_limit_;
  const Duration fold_after_;
  std::optional<MonoTime> drain_until_;  // guarded by mu_: set once stopping
  EventQueue queue_;                     // guarded by mu_
  bool busy_ = false;                    // guarded by mu_
  bool over_budget_ = false;             // guarded by mu_: the worker waits for its budget
  bool stopping_ = false;                // guarded by mu_
  bool writer_done_ = false;             // guarded by mu_: the writer has ended
  std::once_flag stop_once_;
  RecorderStats stats_;  // guarded by mu_
  std::function<void(const EventInput&)> tap_;
  std::thread thread_;
};

}  // namespace trainctl::kube
