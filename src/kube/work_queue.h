// WorkQueue: a de-duplicating queue of object keys that a controller's workers drain (the
// operator's job keys); controller machinery beside the client, it knows nothing of training.
//
// Semantics (as a controller's work queue must have them):
// - A key is queued at most once; adding a queued key is a no-op.
// - A key being processed by a worker is never handed to a second worker; if it is added while
//   being processed it is queued again when the worker calls Done(), so no change is lost.
// - AddAfter(key, d[, lane]) queues the key in the lane once d has elapsed; one pending add a
//   key (the earliest time and the first lane win). Queuing the key sooner in a lane at least as
//   early makes it moot, and so does handing the key to a worker (that sync sees the change;
//   a controller's sync asks again for the times it needs, as with an immediate add).
// - AddRateLimited(key) re-queues after a per-key exponential back-off (base doubling up to
//   max); Forget(key) resets that key's back-off after a successful sync.
// - Three lanes, served in this order, first in, first out within each: urgent (AddUrgent: a
//   change that needs action, such as a failed pod to replace), prompt (AddPrompt: a change of
//   what the object reports, such as a pod that started or finished), routine (Add). So neither
//   waits behind a burst of routine syncs, and a failure does not wait behind a burst of
//   starts. A key already queued moves up to the lane asked for, never down (still once); one
//   being processed is queued there by Done(). After kUrgentStreak urgent or prompt keys in a
//   row, a waiting routine key goes next, so they cannot starve the rest.
//
// Delayed keys are timed against the injected Clock; Get() waits on a condition variable for at
// most the time to the next delayed key (re-reading the clock), so a FakeClock needs Poke() after
// Advance(). Thread-safe; Shutdown() wakes every Get() with nullopt.
#pragma once

#include <array>
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

enum class Lane { kUrgent = 0, kPrompt = 1, kRoutine = 2 };  // served in this order

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
  void AddPrompt(const std::string& key);
  void AddIn(const std::string& key, Lane lane);
  void AddAfter(const std::string& key, Duration delay, Lane lane = Lane::kRoutine);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready (returns it, now marked processing) or the queue shuts down.
  std::optional<std::string> Get();
  void Done(const std::string& key);

  void Shutdown();
  // Queues the delayed keys that are due by the clock (after a FakeClock moved).
  void Poke();
  WorkQueueStats stats() const;

 private:
  void AddLocked(const std::string& key, Lane lane);
  void CancelDelayedLocked(const std::string& key, Lane lane);
  void PromoteDueLocked(Time now);

  const Clock* clock_;
  WorkQueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::array<std::deque<std::string>, 3> lanes_;  // by Lane; guarded by mu_
  std::unordered_map<std::string, Lane> dirty_;   // queued (or to queue after Done), its lane
  int urgent_streak_ = 0;  // urgent or prompt keys handed out in a row while routine ones wait
  std::unordered_set<std::string> processing_;  // handed to a worker
  struct Delayed {
    Time at;
    Lane lane;
  };
  std::unordered_map<std::string, Delayed> delayed_at_;  // key → when and where it is queued
  std::set<std::pair<Time, std::string>> delayed_;       // ordered by time
  std::unordered_map<std::string, int> failures_;
  bool shutdown_ = false;
  long adds_ = 0, retries_ = 0;
};

}  // namespace trainctl::kube
