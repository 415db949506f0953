#include "recording/job_event_log.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

#include "api/kinds.h"
#include "api/trainer_v2_types.h"
#include "jobs/cluster_view.h"

namespace trainctl::recording {

void JobEventLog::Open(const std::string& uid) {
  if (uid.empty()) return;
  Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = by_uid_[uid];
  if (job.rows == 0) job.complete = true;  // opened again later: already decided
  if (job.last == Time{}) job.last = now;
  EvictLocked();
}

void JobEventLog::Add(const kube::EventInput& event) {
  const std::string& version = event.object.api_version;
  if ((version != api::kApiVersion && version != api::kTrainerApiVersion) ||
      event.object.uid.empty())
    return;
  Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  Job& job = by_uid_[event.object.uid];
  job.last = now;
  if (job.object.empty()) job.object = event.object.kind + "/" + event.object.name;
  AddRow(job, event.type + "\n" + event.reason + "\n" + event.message, now);
  EvictLocked();
}

JobEventLog::RowHeader JobEventLog::HeaderAt(const std::string& packed, size_t at) {
  RowHeader h;
  std::memcpy(&h, packed.data() + at, sizeof h);
  return h;
}

void JobEventLog::AddRow(Job& job, const std::string& text, Time now) {
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  RowHeader header{now_ns, 1, static_cast<uint32_t>(text.size())};
  for (size_t at = 0; at < job.packed.size();) {
    RowHeader h = HeaderAt(job.packed, at);
    const size_t row_size = sizeof h + h.size;
    if (h.size == text.size() && job.packed.compare(at + sizeof h, h.size, text) == 0) {
      // A repeat: one row with a count, moved last (ordered by latest time, as the API lists).
      header.count = h.count + 1;
      job.packed.erase(at, row_size);
      --job.rows;
      break;
    }
    at += row_size;
  }
  job.packed.append(reinterpret_cast<const char*>(&header), sizeof header);
  job.packed.append(text);
  if (++job.rows > kMaxRowsPerJob) {  // the oldest goes
    job.packed.erase(0, sizeof(RowHeader) + HeaderAt(job.packed, 0).size);
    --job.rows;
  }
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
  const std::string& packed = it->second.packed;
  for (size_t at = 0; at < packed.size();) {
    RowHeader h = HeaderAt(packed, at);
    std::string_view text(packed.data() + at + sizeof h, h.size);
    size_t a = text.find('\n'), b = text.find('\n', a + 1);
    Time last{std::chrono::duration_cast<Time::duration>(std::chrono::nanoseconds(h.last_ns))};
    seen.rows.push_back(jobs::EventRow(FormatRfc3339(last), std::string(text.substr(0, a)),
                                       std::string(text.substr(a + 1, b - a - 1)), h.count,
                                       it->second.object, std::string(text.substr(b + 1))));
    at += sizeof h + h.size;
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

}  // namespace trainctl::recording
