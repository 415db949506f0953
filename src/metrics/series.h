// A job's metric series, from the lines its metrics replica printed (line_parser.h).
//
// The runner stores one record per metric line, a JSON object in metrics.jsonl:
//   {"time": "<RFC 3339, ms>", "step": 12, "values": {"loss": 0.43, "acc": "nan"}}
// ("step" is left out when the line has none; "step_from": "epoch" is added when the step is
// the line's epoch; a value that is not finite is the string "nan", "inf" or "-inf", since JSON
// has no such numbers).
//
// Readers (describe -o json's "metrics", `trainctl metrics`, the SDK, the dashboard) turn the
// records into series, one per name, in the column shape charts want:
//   {"replica": "master-0", "records": N, "truncated": false,
//    "series": {"loss": {"step": [...], "time": [...], "value": [...]}}}
// "time" holds seconds since the epoch. A value that is not finite is null. A record without
// a step uses its ordinal (1, 2, …). A series is at most kMaxPointsPerSeries points: longer
// ones keep every k-th point plus the last.
//
// One log printed twice counts once: two records in a row, one whose step is its epoch and one
// with another step, where every value of the first is the second's (a value that is not
// finite may be missing from the other: a JSON line writes it as null). Hugging Face's Trainer
// prints its dict ({'loss': 0.43, 'epoch': 0.05}) right after a callback's JSON line with the
// same values ({"step": 2, "loss": 0.43, "epoch": 0.05}), as train()'s trainer does. The
// record with the other step is kept.
//
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "metrics/line_parser.h"

namespace trainctl::metrics {

inline constexpr size_t kMaxPointsPerSeries = 20000;
// The runner stops recording after this many records for one job, and says so.
inline constexpr size_t kMaxRecordsPerJob = 200000;

nlohmann::json MetricRecord(const MetricLine& line, Time read_at);

// Series from records in the order printed. Records that are not objects are skipped.
// `truncated`: the recorder stopped early.
nlohmann::json SeriesFromRecords(const std::vector<nlohmann::json>& records,
                                 const std::string& replica, bool truncated);

// The records of output text as a reader of a log finds them (the cluster's pod log), each
// line read at `read_at` unless it carries its own time; the pieces after a line's "\r" carry
// the time that begins the line (the kubelet's timestamp).
std::vector<nlohmann::json> RecordsFromOutput(std::string_view text, Time read_at);

// The last value of each series: {"loss": 0.41, "step": 300} ("step" the last step seen).
nlohmann::json LastValues(const nlohmann::json& series);

}  // namespace trainctl::metrics
