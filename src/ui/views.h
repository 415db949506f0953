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

// Which series share a chart. Series of different scales (a loss and a learning rate) never
// share a y axis: each quantity gets its own chart, and only one quantity measured on several
// data splits shares one: a name whose first word (before `_`, `/`, `.` or `-`) is train,
// training, eval, val, valid, validation or test is that quantity ("eval_loss" and "val/loss"
// chart with "loss"). Returns [{"axis": quantity, "series": [names…]}] in the order of the
// names' first appearance, every name of `series_doc["series"]` in one chart.
nlohmann::json ChartsFor(const nlohmann::json& series_doc);
// `series_doc` (metrics/series.h's shape) with "charts": ChartsFor(series_doc). null stays null.
nlohmann::json WithCharts(nlohmann::json series_doc);

}  // namespace trainctl::ui
