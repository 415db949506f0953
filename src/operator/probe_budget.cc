#include "operator/probe_budget.h"

#include <algorithm>

namespace trainctl::op {

Duration ProbeBudget::PerRequest() const {
  return std::chrono::duration_cast<Duration>(std::chrono::minutes(1)) / per_minute_;
}

Time ProbeBudget::Reserve(size_t requests, Time now) {
  if (per_minute_ <= 0) return now;
  std::lock_guard<std::mutex> lock(mu_);
  Time slot = std::max(next_free_, now - kProbeBurst);
  next_free_ = slot + PerRequest() * static_cast<long>(requests);
  return slot;
}

void ProbeBudget::GiveBack(size_t requests) {
  if (per_minute_ <= 0 || requests == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  next_free_ -= PerRequest() * static_cast<long>(requests);
}

}  // namespace trainctl::op
