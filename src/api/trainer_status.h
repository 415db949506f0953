// Trainer v2.3's runtime status report (the trainjobstatus feature): the body a training
// process POSTs to KUBEFLOW_TRAINER_SERVER_URL, an UpdateTrainJobStatusRequest
// ({"trainerStatus": {progressPercentage, estimatedRemainingSeconds, metrics, lastUpdatedTime}}),
// decoded and checked as upstream's CRD checks TrainerStatus: progressPercentage 0-100,
// estimatedRemainingSeconds >= 0 (both int32), at most 256 metrics each with a name and a string
// value of 1-64 characters, lastUpdatedTime required (RFC 3339). Bodies over kMaxReportBytes or
// nested deeper than the manifest limit are refused before they are parsed. Also the endpoint's
// path and the token audience upstream gives a TrainJob.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::api {

inline constexpr size_t kMaxReportBytes = 64u << 10;
inline constexpr size_t kMaxReportMetrics = 256;
inline constexpr size_t kMaxMetricText = 64;

struct TrainerMetric {
  std::string name;
  std::string value;

  bool operator==(const TrainerMetric&) const = default;
};

struct TrainerStatus {
  std::optional<int32_t> progress_percentage;
  std::optional<int32_t> estimated_remaining_seconds;
  std::vector<TrainerMetric> metrics;
  Time last_updated_time;

  bool operator==(const TrainerStatus&) const = default;
};

// A decoded report: `status` is empty when the body had no trainerStatus (upstream answers 200
// and writes nothing). Errors are kInvalid, naming the field path and what was expected.
struct TrainerStatusReport {
  std::optional<TrainerStatus> status;
};
StatusOr<TrainerStatusReport> DecodeTrainerStatusReport(std::string_view body);

// {"progressPercentage": …, "estimatedRemainingSeconds": …, "metrics": [...],
//  "lastUpdatedTime": "…Z"} as the TrainJob's status.trainerStatus holds it (absent fields left
// out).
nlohmann::json TrainerStatusJson(const TrainerStatus& status);

// /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status
std::string TrainerStatusPath(const std::string& ns, const std::string& name);
// trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status: the audience of the
// projected service-account token a trainer pod sends.
std::string TrainerStatusAudience(const std::string& ns, const std::string& name);

}  // namespace trainctl::api
