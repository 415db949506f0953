// What the dashboard's list and job pages show, made from the data layer's objects and the
// history's rows. Pure; thread-safe.
//
// A list row: {key, source, kind, namespace, name, uid, state, why, created, started,
// finished, replicas {total, active, succeeded, failed}, live}. `key` addresses the job page:
// "live/<source>/<namespace>/<kind>/<name>" or "history/<uid>".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "history/record.h"

namespace trainctl::ui {

nlohmann::json LiveRow(const nlohmann::json& job, const std::string& source);
nlohmann::json HistoryRow(const history::Row& row);

// Live rows that match `q` (a case-insensitive substring of the name or the why line; "" all),
// newest first, then the history rows of jobs that are not live (the history has already
// searched them for `q`).
nlohmann::json MergeRows(std::vector<nlohmann::json> live, const std::vector<history::Row>& past,
                         const std::string& q);

// The job page's document, one shape for a live job and a history record:
// {live, source, job, why, failure, replicas, events, workspaces, logs (history: replica →
// {bytes, tail}), metrics (history: the series), replicaNames (short names, for the log
// selector), metricsReplica}.
nlohmann::json LivePage(const nlohmann::json& detail_document, const std::string& metrics_replica);
nlohmann::json HistoryPage(const nlohmann::json& record);

}  // namespace trainctl::ui
