#include "progress/report_coalescer.h"

namespace trainctl::progress {

void ReportCoalescer::Put(const std::string& key, api::TrainerStatus status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_.reports;
  pending_[key] = std::move(status);
}

std::vector<std::pair<std::string, api::TrainerStatus>> ReportCoalescer::TakeDue(Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, api::TrainerStatus>> due;
  for (auto it = last_taken_.begin(); it != last_taken_.end();)
    it = now - it->second >= min_interval_ ? last_taken_.erase(it) : std::next(it);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (last_taken_.count(it->first)) {
      ++it;
      continue;
    }
    last_taken_[it->first] = now;
    due.emplace_back(it->first, std::move(it->second));
    it = pending_.erase(it);
  }
  counts_.taken += due.size();
  return due;
}

std::vector<std::pair<std::string, api::TrainerStatus>> ReportCoalescer::TakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, api::TrainerStatus>> all(
      std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.end()));
  pending_.clear();
  counts_.taken += all.size();
  return all;
}

void ReportCoalescer::Return(const std::string& key, api::TrainerStatus status) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.emplace(key, std::move(status));  // a newer report wins
}

CoalescerCounts ReportCoalescer::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace trainctl::progress
