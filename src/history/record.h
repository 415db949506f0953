// A finished job's history record: what someone debugging it later needs, in one JSON object,
// the same for a local job and a cluster job (jobs/history_capture.h builds it from the data
// layer):
//   {"uid", "source" ("local" | "kubernetes"), "namespace", "kind", "name",
//    "job" (the object with its final status), "why", "failure", "replicas", "events",
//    "logs": {"master-0": {"bytes": <log size>, "tail": "<its last kLogTailBytes>"}},
//    "metrics" (metrics/series.h's document, or null), "recordedAt"}
//
// RowOf() projects a record onto the columns the history list shows and searches. Evict()
// decides which records retention removes.
//
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"

namespace trainctl::history {

// How much of each replica's log a record keeps: its end, cut at a line start.
inline constexpr size_t kLogTailBytes = 64u << 10;
// How much of each kept log tail search looks in: its end (the failure is at the end).
inline constexpr size_t kSearchedTailBytes = 4u << 10;

struct Limits {
  size_t max_jobs = 1000;
  Duration max_age = std::chrono::hours(24 * 90);
  size_t max_bytes = 1u << 30;  // of all records together
};

struct Row {
  std::string uid, source, namespace_, kind, name;
  std::string state;              // the last condition's type
  std::string why;                // jobs::JobWhyLine of the final job
  std::string first_failure;      // the failure's replica, or ""
  std::string created, finished;  // RFC 3339; finished: completionTime, else when recorded
  // What full-text search looks in: the name, why, the failure's text and last lines, event
  // reasons and messages, and the last kSearchedTailBytes of each log tail.
  std::string search_text;
  size_t bytes = 0;  // the stored record's size (HistoryStore sets it on a write)
};

// A row as JSON, as `trainctl history -o json` prints it and the dashboard's /api/v1/history
// answers: {uid, source, namespace, kind, name, state, why, firstFailure, created, finished,
// bytes} (search_text is not included). RowFromJson reads it back; missing fields are empty.
nlohmann::json RowJson(const Row& row);
Row RowFromJson(const nlohmann::json& row);

// The columns of `record`. `why_line`: the job's why in one line (the caller's jobs::JobWhyLine).
Row RowOf(const nlohmann::json& record, const std::string& why_line);

// The end of a log: at most `max` bytes, starting at a line when one starts in it.
std::string LogTail(const std::string& text, size_t max = kLogTailBytes);

struct Stored {
  std::string uid;
  Time finished;
  size_t bytes = 0;
};

// The records to remove, oldest first, so that what remains is within `limits` at `now`.
// `stored` is in any order.
std::vector<std::string> Evict(std::vector<Stored> stored, const Limits& limits, Time now);

}  // namespace trainctl::history
