// Trainer v2.3's runtime status report (the trainjobstatus feature): the body a training
// process POSTs to KUBEFLOW_TRAINER_SERVER_URL, an UpdateTrainJobStatusRequest
// ({"trainerStatus": {progressPercentage, estimatedRemainingSeconds, metrics, lastUpdatedTime}}),
// decoded and checked as upstream's CRD checks TrainerStatus: progressPercentage 0-100,
// estimatedRemainingSeconds >= 0 (both int32), at most 256 metrics each with a name and a string
// value of 1-64 characters, lastUpdatedTime required (RFC 3339). Bodies over kMaxReportBytes or
// nested deeper than the manifest limit are refused before they are parsed. Also the endpoint's
// path and the token audience of a job: upstream's for a TrainJob, the same shape under
// kubeflow.org/v1 for the seven v1 kinds.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/kinds.h"
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

// The job a report is for: a TrainJob (trainer.kubeflow.org/v1alpha1, as upstream) or, on
// trainctl's side, a job of the seven kubeflow.org/v1 kinds (their CRDs have no trainerStatus,
// so the report is kept elsewhere: the annotation kTrainerStatusAnnotation on a cluster).
struct StatusTarget {
  std::string group_version;  // "trainer.kubeflow.org/v1alpha1" or "kubeflow.org/v1"
  std::string plural;         // "trainjobs", "pytorchjobs", …
  std::string namespace_;
  std::string name;

  bool IsTrainJob() const { return plural == "trainjobs"; }
  bool operator==(const StatusTarget&) const = default;
};
inline constexpr const char* kTrainerStatusAnnotation = "trainctl.dev/trainer-status";

StatusTarget TrainJobStatusTarget(const std::string& ns, const std::string& name);
// The target of a job of `kind` (a TrainJob or one of the seven v1 kinds).
StatusTarget StatusTargetOf(Kind kind, const std::string& ns, const std::string& name);
// <group_version>/namespaces/<ns>/<plural>/<name>/status: the audience of the projected
// service-account token a trainer pod sends (for a TrainJob, upstream's).
std::string StatusAudience(const StatusTarget& target);
// "/apis/" + StatusAudience(target): the endpoint's path for the job.
std::string StatusPath(const StatusTarget& target);
// The target a status path names, or nullopt when it names none (a group, version or plural
// not served, a namespace that is not a DNS label, a name that is not a DNS subdomain).
std::optional<StatusTarget> ParseStatusPath(std::string_view path);

// A v1 job as the views show it: the report kept in its kTrainerStatusAnnotation (when that
// holds a JSON object) becomes status.trainerStatus, where a TrainJob has it. Other jobs, and an
// annotation that is not a JSON object, are left as they are.
void ShowTrainerStatusAnnotation(nlohmann::json* job);

// The same for a TrainJob (upstream's path and audience).
std::string TrainerStatusPath(const std::string& ns, const std::string& name);
std::string TrainerStatusAudience(const std::string& ns, const std::string& name);

}  // namespace trainctl::api
