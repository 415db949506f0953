// The one budget of pod log requests every log probe of the operator shares (the progress
// probes, operator/progress_probe.h, and the failed-rank probes, operator/rank_probe.h):
// `--progress-probes-per-minute` requests a minute in all, paced. A probe reserves its
// requests: it gets the time from which they fit (up to kProbeBurst of requests may go at
// once), and a job whose turn is later waits for that turn instead of asking again, so jobs over
// the budget take turns rather than all retrying at the same moment. Thread-safe.
#pragma once

#include <mutex>

#include "common/clock.h"

namespace trainctl::op {

inline constexpr Duration kProbeBurst{10000};

class ProbeBudget {
 public:
  // `per_minute` <= 0: no limit.
  explicit ProbeBudget(int per_minute) : per_minute_(per_minute) {}

  // The time from which `requests` fit; reserves them from then on (`now` when unlimited).
  Time Reserve(size_t requests, Time now);
  // Gives back `requests` reserved and not made.
  void GiveBack(size_t requests);
  bool limited() const { return per_minute_ > 0; }

 private:
  Duration PerRequest() const;

  const int per_minute_;
  std::mutex mu_;
  Time next_free_{};  // guarded by mu_
};

}  // namespace trainctl::op
