// ReportCoalescer: turns a stream of trainer status reports into few writes. Put() keeps only
// the newest status per job (a key such as "<ns>/<name>"); TakeDue() hands out, once each, the
// statuses of jobs not handed out within `min_interval` — so however often a trainer reports,
// its job gets at most one write per interval, and the last report is never dropped (it is due
// at most `min_interval` after it came). TakeAll() hands out everything pending (at shutdown).
// Counts what came in and what went out.
//
// Thread-safe; no I/O (the caller writes what it takes).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api/trainer_status.h"
#include "common/clock.h"

namespace trainctl::progress {

struct CoalescerCounts {
  uint64_t reports = 0;  // Put() calls
  uint64_t taken = 0;    // statuses handed out
};

class ReportCoalescer {
 public:
  explicit ReportCoalescer(Duration min_interval) : min_interval_(min_interval) {}

  void Put(const std::string& key, api::TrainerStatus status);
  std::vector<std::pair<std::string, api::TrainerStatus>> TakeDue(Time now);
  std::vector<std::pair<std::string, api::TrainerStatus>> TakeAll();
  // A status taken whose write failed: pending again unless a newer one came meanwhile.
  void Return(const std::string& key, api::TrainerStatus status);
  CoalescerCounts counts() const;

 private:
  const Duration min_interval_;
  mutable std::mutex mu_;
  std::map<std::string, api::TrainerStatus> pending_;
  std::map<std::string, Time> last_taken_;  // pruned once older than the interval
  CoalescerCounts counts_;
};

}  // namespace trainctl::progress
