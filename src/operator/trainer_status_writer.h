// TrainerStatusWriter: where the operator's status endpoint puts what trainers report. Accept()
// hands a status to a ReportCoalescer (progress/report_coalescer.h); a thread takes what is due
// every 250 ms and writes each job's report with one merge patch: a TrainJob's
// status.trainerStatus (the status subresource; the fields a report left out set to null so they
// go, as upstream's apply under its own field manager removes them), a v1 job's annotation
// trainctl.dev/trainer-status (its CRD has no such field; the job views read it as
// status.trainerStatus). So a job gets at most one write per `min_interval` however often its
// trainer reports, and the newest report always lands. A job that is gone (404) is dropped;
// another failure is retried at the next interval unless a newer report came. Stop() writes what
// is still pending, then returns.
//
// I/O: job patches. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "api/trainer_status.h"
#include "common/clock.h"
#include "kube/client.h"
#include "progress/coalesced_writer.h"

namespace trainctl::op {

inline constexpr Duration kTrainerStatusWriteInterval = Duration(1000);

// {"status": {"trainerStatus": {...}}} with absent fields null: the merge patch for `status`.
nlohmann::json TrainerStatusPatch(const api::TrainerStatus& status);
// {"metadata": {"annotations": {"trainctl.dev/trainer-status": "<the report's JSON>"}}}: the
// merge patch that keeps a v1 job's report.
nlohmann::json TrainerStatusAnnotationPatch(const api::TrainerStatus& status);
// The job resource a target names.
kube::Resource StatusTargetResource(const api::StatusTarget& target);

using TrainerStatusWriterCounts = progress::WriterCounts;

class TrainerStatusWriter {
 public:
  TrainerStatusWriter(kube::Client* client, const Clock* clock,
                      Duration min_interval = kTrainerStatusWriteInterval)
      : client_(client),
        clock_(clock),
        writer_(min_interval, clock,
                [this](const std::string& key, const api::TrainerStatus& status) {
                  return Write(key, status);
                }) {}
  ~TrainerStatusWriter() { Stop(); }
  TrainerStatusWriter(const TrainerStatusWriter&) = delete;
  TrainerStatusWriter& operator=(const TrainerStatusWriter&) = delete;

  void Accept(const api::StatusTarget& target, api::TrainerStatus status);
  // Whether the job exists: a GET, a yes remembered for 30 s (a report for a job deleted
  // meanwhile is dropped at its write's 404).
  bool Exists(const api::StatusTarget& target);
  void Start() { writer_.Start(); }
  void Stop() { writer_.Stop(); }
  // Writes what is due now (the thread's step; tests call it directly).
  void Flush(bool everything = false) { writer_.Flush(everything); }
  TrainerStatusWriterCounts counts() const { return writer_.counts(); }

 private:
  Status Write(const std::string& key, const api::TrainerStatus& status);

  kube::Client* client_;
  const Clock* clock_;
  std::mutex mu_;
  std::map<std::string, api::StatusTarget> targets_;  // key → target, under mu_
  std::map<std::string, Time> seen_;                  // jobs found, until when that holds
  progress::CoalescedWriter writer_;                  // last: its thread stops first
};

}  // namespace trainctl::op
