#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace trainctl::kube {

RateLimiter::RateLimiter(double qps, int burst, const Clock* clock)
    : qps_(qps),
      burst_(std::max(1, burst)),
      clock_(clock),
      tokens_(std::max(1, burst)),
      last_(clock->Now()) {}

Duration RateLimiter::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  Time now = clock_->Now();
  Duration pause = paused_until_ > now ? std::chrono::duration_cast<Duration>(paused_until_ - now)
                                       : Duration::zero();
  if (!enabled()) return pause;
  double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  Duration wait = Duration::zero();
  if (tokens_ < 0) wait = Duration(static_cast<long long>(std::ceil(-tokens_ / qps_ * 1000)));
  return std::max(wait, pause);
}

bool RateLimiter::WouldGoNow(size_t ahead) {
  std::lock_guard<std::mutex> lock(mu_);
  Time now = clock_->Now();
  if (paused_until_ > now) return false;
  if (!enabled()) return true;
  double elapsed = std::max(0.0, std::chrono::duration<double>(now - last_).count());
  return std::min(burst_, tokens_ + elapsed * qps_) >= static_cast<double>(ahead) + 1;
}

void RateLimiter::PauseFor(Duration after) {
  std::lock_guard<std::mutex> lock(mu_);
  paused_until_ = std::max(paused_until_, clock_->Now() + after);
}

}  // namespace trainctl::kube
