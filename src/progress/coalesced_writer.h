// CoalescedWriter: a ReportCoalescer (progress/report_coalescer.h) and the thread that drains it,
// shared by the operator's status writes and a local run's status file. Every 250 ms the
// statuses due are handed to `write`; Flush() does one such step (tests call it), Stop() ends
// the thread and then hands over everything still pending. A write that fails is retried at the
// job's next interval unless a newer report came meanwhile; one that fails with kNotFound (the
// job is gone) is dropped. Writes never run two at a time. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "api/trainer_status.h"
#include "common/clock.h"
#include "common/status.h"
#include "progress/report_coalescer.h"

namespace trainctl::progress {

struct WriterCounts {
  CoalescerCounts coalescer;
  uint64_t writes = 0;    // writes that succeeded
  uint64_t failures = 0;  // writes that failed (kNotFound included)
};

class CoalescedWriter {
 public:
  using WriteFn = std::function<Status(const std::string& key, const api::TrainerStatus&)>;

  CoalescedWriter(Duration min_interval, const Clock* clock, WriteFn write)
      : clock_(clock), write_(std::move(write)), coalescer_(min_interval) {}
  ~CoalescedWriter() { Stop(); }
  CoalescedWriter(const CoalescedWriter&) = delete;
  CoalescedWriter& operator=(const CoalescedWriter&) = delete;

  void Put(const std::string& key, api::TrainerStatus status) {
    coalescer_.Put(key, std::move(status));
  }
  void Start();
  void Stop();
  void Flush(bool everything = false);
  WriterCounts counts() const;

 private:
  const Clock* clock_;
  WriteFn write_;
  ReportCoalescer coalescer_;
  mutable std::mutex mu_;  // guards the counts and stopping_
  std::mutex flush_mu_;    // one flush at a time
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t writes_ = 0, failures_ = 0;
  std::thread thread_;
};

}  // namespace trainctl::progress
