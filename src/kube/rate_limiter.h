// Client-side request rate limiting: a token bucket (qps tokens per second, at most `burst`
// saved up), like client-go's default limiter, plus the server's Retry-After.
//
// Reserve() is pure bookkeeping against the injected clock and returns how long the caller
// must wait before sending; the caller sleeps (so tests need no real time). A limiter built
// with qps <= 0 is off: Reserve() always returns zero. Thread-safe.
#pragma once

#include <mutex>

#include "common/clock.h"

namespace trainctl::kube {

class RateLimiter {
 public:
  RateLimiter(double qps, int burst, const Clock* clock);

  bool enabled() const { return qps_ > 0; }

  // Takes one token; returns the wait before the request may go (zero if a token was there).
  Duration Reserve();
  // Whether a request could go now (a token is there, no pause), without taking one, after
  // `ahead` requests already waiting have taken theirs.
  bool WouldGoNow(size_t ahead = 0);

  // The server said 429 with Retry-After: no request goes before now + `after`.
  void PauseFor(Duration after);

 private:
  const double qps_;
  const double burst_;
  const Clock* clock_;
  std::mutex mu_;
  double tokens_;      // guarded by mu_; may go negative (reservations in the future)
  Time last_;          // guarded by mu_
  Time paused_until_;  // guarded by mu_
};

}  // namespace trainctl::kube
