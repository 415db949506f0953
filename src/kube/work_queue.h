// WorkQueue: a de-duplicating queue of object keys that a controller's workers drain (the
// operator's job keys); controller machinery beside the client, it knows nothing of training.
//
// Semantics (as a controller's work queue must have them):
// - A key is queued at most once; adding a queued key is a no-op.
// - A key being processed by a worker is never handed to a second worker; if it is added while
//   being processed it is queued again when the worker calls Done(), so no change is lost.
// - AddAfter(key, d) queues the key once d has elapsed (the earliest pending time wins).
// - AddRateLimited(key) re-queues after a per-key exponential back-off (base doubling up to
//   max); Forget(key) resets that key's back-off after a successful sync.
// - AddUrgent(key) queues the key in a lane that Get() serves first (first in, first out within
//   each lane), for a change that needs action, such as a failed pod to replace, so it does not
//   wait behind a burst of routine syncs. A key already queued moves to that lane (still once);
//   one being processed is queued there by Done(). Otherwise it behaves as Add(). After
//   kUrgentStreak urgent keys in a row, a waiting ordinary key goes next, so urgent keys
//   cannot starve the rest.
//
// Delayed keys are timed against the injected Clock; Get() waits on a condition variable for at
// most the time to the next delayed key (re-reading the clock), so a FakeClock needs Poke() after
// Advance(). Thread-safe; Shutdown() wakes every Get() with nullopt.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"

namespace trainctl::kube {

struct WorkQueueOptions {
  Duration base_backoff{500};
  Duration max_backoff{300000};
};

inline constexpr int kUrgentStreak = 8;

struct WorkQueueStats {
  size_t depth = 0;    // ready to be processed
  size_t delayed = 0;  // waiting for their time
  long adds = 0;
  long retries = 0;
};

class WorkQueue {
 public:
  WorkQueue(const Clock* clock, WorkQueueOptions options = {});

  void Add(const std::string& key);
  void AddUrgent(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready (returns it, now marked processing) or the queue shuts down.
  std::optional<std::string> Get();
  void Done(const std::string& key);

  void Shutdown();
  // Re-checks delayed keys against the clock (after a FakeClock moved).
  void Poke();
  WorkQueueStats stats() const;

 private:
  void MarkDirtyLocked(const std::string& key);
  void AddLocked(const std::string& key);
  void PromoteDueLocked(Time now);

  const Clock* clock_;
  WorkQueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;                     // guarded by mu_
  std::deque<std::string> urgent_;                    // served before queue_
  std::unordered_set<std::string> urgent_keys_;       // dirty keys that go to urgent_
  int urgent_streak_ = 0;                             // urgent keys handed out in a row
  std::unordered_set<std::string> dirty_;             // queued (or to queue after Done)
  std::unordered_set<std::string> processing_;        // handed to a worker
  std::unordered_map<std::string, Time> delayed_at_;  // key → when it becomes ready
  std::set<std::pair<Time, std::string>> delayed_;    // ordered by time
  std::unordered_map<std::string, int> failures_;
  bool shutdown_ = false;
  long adds_ = 0, retries_ = 0;
};

}  // namespace trainctl::kube
