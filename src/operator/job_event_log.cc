#include "operator/job_event_log.h"

#include <algorithm>

#include "api/kinds.h"
#include "jobs/cluster_view.h"

namespace trainctl::op {

void JobEventLog::Open(const std::string& uid) {
  if (uid.empty()) return;
  Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = by_uid_[uid];
  if (job.rows.empty()) job.complete = true;  // opened again later: already decided
  if (job.last == Time{}) job.last = now;
  EvictLocked();
}

void JobEventLog::Add(const kube::EventInput& event) {
  if (event.object.api_version != api::kApiVersion || event.object.uid.empty()) return;
  Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = by_uid_[event.object.uid];
  job.last = now;
  if (job.object.empty()) job.object = event.object.kind + "/" + event.object.name;
  std::string text = event.type + "\n" + event.reason + "\n" + event.message;
  auto same =
      std::find_if(job.rows.begin(), job.rows.end(), [&](const Row& r) { return r.text == text; });
  if (same != job.rows.end()) {
    Row row = std::move(*same);
    job.rows.erase(same);
    row.last = now;
    ++row.count;
    job.rows.push_back(std::move(row));  // ordered by latest time, as the API lists them
  } else {
    job.rows.push_back({std::move(text), now, 1});
    if (job.rows.size() > kMaxRowsPerJob) job.rows.erase(job.rows.begin());
  }
  EvictLocked();
}

void JobEventLog::EvictLocked() {
  if (by_uid_.size() <= max_jobs_) return;
  // A tenth of the jobs at once, those whose last event is oldest: one pass per many calls.
  std::vector<std::pair<Time, std::string>> ages;
  for (const auto& [uid, j] : by_uid_) ages.emplace_back(j.last, uid);
  size_t drop = std::max<size_t>(1, max_jobs_ / 10);
  std::nth_element(ages.begin(), ages.begin() + static_cast<std::ptrdiff_t>(drop - 1), ages.end());
  for (size_t i = 0; i < drop; ++i) by_uid_.erase(ages[i].second);
}

JobEventLog::Seen JobEventLog::Rows(const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  Seen seen;
  auto it = by_uid_.find(uid);
  if (it == by_uid_.end()) return seen;
  for (const Row& r : it->second.rows) {
    size_t a = r.text.find('\n'), b = r.text.find('\n', a + 1);
    seen.rows.push_back(jobs::EventRow(FormatRfc3339(r.last), r.text.substr(0, a),
                                       r.text.substr(a + 1, b - a - 1), r.count, it->second.object,
                                       r.text.substr(b + 1)));
  }
  seen.complete = it->second.complete;
  return seen;
}

void JobEventLog::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  by_uid_.erase(uid);
}

size_t JobEventLog::jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_uid_.size();
}

}  // namespace trainctl::op
