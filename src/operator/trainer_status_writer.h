// TrainerStatusWriter: where the operator's status endpoint puts what trainers report. Accept()
// hands a status to a ReportCoalescer (progress/report_coalescer.h); a thread takes what is due
// every 250 ms and writes each TrainJob's status.trainerStatus with one merge patch of the
// status subresource, the fields a report left out set to null so they go (as upstream's apply
// under its own field manager removes them). So a TrainJob gets at most one write per
// `min_interval` however often its trainer reports, and the newest report always lands.
// A TrainJob that is gone (404) is dropped; another failure is retried at the next interval
// unless a newer report came. Stop() writes what is still pending, then returns.
//
// I/O: TrainJob status patches. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/trainer_status.h"
#include "common/clock.h"
#include "kube/client.h"
#include "progress/report_coalescer.h"

namespace trainctl::op {

inline constexpr Duration kTrainerStatusWriteInterval = Duration(1000);

// {"status": {"trainerStatus": {...}}} with absent fields null: the merge patch for `status`.
nlohmann::json TrainerStatusPatch(const api::TrainerStatus& status);

struct TrainerStatusWriterCounts {
  progress::CoalescerCounts coalescer;
  uint64_t writes = 0;    // patches that succeeded
  uint64_t failures = 0;  // patches that failed (404s included)
};

class TrainerStatusWriter {
 public:
  TrainerStatusWriter(kube::Client* client, const Clock* clock,
                      Duration min_interval = kTrainerStatusWriteInterval)
      : client_(client), clock_(clock), coalescer_(min_interval) {}
  ~TrainerStatusWriter() { Stop(); }
  TrainerStatusWriter(const TrainerStatusWriter&) = delete;
  TrainerStatusWriter& operator=(const TrainerStatusWriter&) = delete;

  void Accept(const std::string& ns, const std::string& name, api::TrainerStatus status);
  // Whether TrainJob ns/name exists: a GET, a yes remembered for 30 s (a report for a TrainJob
  // deleted meanwhile is dropped at its write's 404).
  bool Exists(const std::string& ns, const std::string& name);
  void Start();
  void Stop();
  // Writes what is due now (the thread's step; tests call it directly).
  void Flush(bool everything = false);
  TrainerStatusWriterCounts counts() const;

 private:
  void Write(const std::string& key, api::TrainerStatus status);

  kube::Client* client_;
  const Clock* clock_;
  progress::ReportCoalescer coalescer_;
  std::atomic<uint64_t> writes_{0}, failures_{0};
  std::mutex mu_;
  std::map<std::string, Time> seen_;  // TrainJobs found, until when that answer holds
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace trainctl::op
