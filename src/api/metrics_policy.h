// Which replica's output becomes the job's metric series (metrics/line_parser.h), read from its
// annotations (docs/metrics.md):
//
//   trainctl.dev/metrics: auto              auto (default) | off
//   trainctl.dev/metrics-replica: worker-1  "<lower-case type>-<index>" of a replica the job has
//
// By default the series come from rank 0: the launcher of a kind that has one (MPIJob), else
// index 0 of the first type the kind's plugin calls the master role (Master, Chief), else
// index 0 of the first type the job has in the kind's order.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "api/field_error.h"
#include "api/job.h"

namespace trainctl::api {

inline constexpr const char* kMetricsAnnotation = "trainctl.dev/metrics";
inline constexpr const char* kMetricsReplicaAnnotation = "trainctl.dev/metrics-replica";

struct MetricsPolicy {
  std::string type;  // the replica type, as in the spec ("Master")
  int index = 0;
};

// nullopt when metrics are off, the job has no replicas, or an annotation is invalid (errors
// go to `errors` when it is not null, with the annotation's field path).
std::optional<MetricsPolicy> MetricsPolicyOf(const Job& job, FieldErrorList* errors = nullptr);

}  // namespace trainctl::api
