#include "ui/views.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/job.h"
#include "api/json_fields.h"
#include "jobs/why.h"

namespace trainctl::ui {

using nlohmann::json;

namespace {

// j[key] when it is an object, else an empty object: never throws on odd input.
const json& Obj(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

// j[key] as it is, or `fallback` when `j` is not an object or has no such key.
json Field(const json& j, const char* key, json fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() ? *it : fallback;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

json Replicas(const json& job) {
  json out = {{"total", 0}, {"active", 0}, {"succeeded", 0}, {"failed", 0}};
  if (StatusOr<api::Job> decoded = api::DecodeJob(job); decoded.ok())
    out["total"] = decoded->TotalReplicas();
  const json& statuses = Obj(Obj(job, "status"), "replicaStatuses");
  for (const auto& [type, s] : statuses.items())
    for (const char* key : {"active", "succeeded", "failed"})
      out[key] = out[key].get<int>() + api::IntAt(s, key, 0);
  return out;
}

std::vector<std::string> ShortNames(const json& replicas, const std::string& job_name) {
  std::vector<std::string> names;
  std::string prefix = job_name + "-";
  if (!replicas.is_array()) return names;
  for (const json& r : replicas) {
    std::string name = api::StringAt(r, "name");
    if (name.empty()) continue;
    names.push_back(name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name);
  }
  return names;
}

// The quantity a series measures: its name without a data-split prefix.
std::string Quantity(const std::string& name) {
  size_t cut = name.find_first_of("_/.-");
  if (cut == std::string::npos || cut + 1 >= name.size()) return name;
  static const std::set<std::string> kSplits = {"train", "training",   "eval", "val",
                                                "valid", "validation", "test"};
  return kSplits.count(Lower(name.substr(0, cut))) ? name.substr(cut + 1) : name;
}

}  // namespace

json ChartsFor(const json& series_doc) {
  json charts = json::array();
  const json& series = Obj(series_doc, "series");
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [name, unused] : series.items()) {
    std::string quantity = Quantity(name);
    if (!groups.count(quantity)) order.push_back(quantity);
    groups[quantity].push_back(name);
  }
  for (const std::string& quantity : order)
    charts.push_back({{"axis", quantity}, {"series", groups[quantity]}});
  return charts;
}

json WithCharts(json series_doc) {
  if (series_doc.is_object()) series_doc["charts"] = ChartsFor(series_doc);
  return series_doc;
}

// The trainer's last reported progress (Trainer v2.3's status.trainerStatus), in percent; null
// when it reported none.
json ProgressOf(const json& status) {
  const json& p = api::ChildAt(api::ChildAt(status, "trainerStatus"), "progressPercentage");
  return p.is_number_integer() ? p : json(nullptr);
}

json LiveRow(const json& job, const std::string& source) {
  const json& md = Obj(job, "metadata");
  const json& status = Obj(job, "status");
  std::string ns = api::StringAt(md, "namespace"), kind = api::StringAt(job, "kind"),
              name = api::StringAt(md, "name");
  std::string state = jobs::JobState(job);
  return {{"key", "live/" + source + "/" + ns + "/" + kind + "/" + name},
          {"source", source},
          {"kind", kind},
          {"namespace", ns},
          {"name", name},
          {"uid", api::StringAt(md, "uid")},
          {"state", state.empty() ? "Pending" : state},
          {"why", jobs::JobWhyLine(job, 200)},
          {"created", api::StringAt(md, "creationTimestamp")},
          {"started", api::StringAt(status, "startTime")},
          {"finished", api::StringAt(status, "completionTime")},
          {"replicas", Replicas(job)},
          {"progress", ProgressOf(status)},
          {"live", true}};
}

json HistoryRow(const history::Row& row) {
  return {{"key", "history/" + row.uid},
          {"source", row.source},
          {"kind", row.kind},
          {"namespace", row.namespace_},
          {"name", row.name},
          {"uid", row.uid},
          {"state", row.state},
          {"why", row.why.substr(0, row.why.find('\n'))},
          {"created", row.created},
          {"started", ""},
          {"finished", row.finished},
          {"replicas", nullptr},
          {"progress", nullptr},
          {"live", false}};
}

json MergeRows(std::vector<json> live, const std::vector<history::Row>& past,
               const std::string& q) {
  std::string needle = Lower(q);
  std::set<std::string> uids;
  json out = json::array();
  std::stable_sort(live.begin(), live.end(), [](const json& a, const json& b) {
    return api::StringAt(a, "created") > api::StringAt(b, "created");
  });
  for (json& row : live) {
    uids.insert(api::StringAt(row, "uid"));
    if (!needle.empty() && Lower(api::StringAt(row, "name")).find(needle) == std::string::npos &&
        Lower(api::StringAt(row, "why")).find(needle) == std::string::npos)
      continue;
    out.push_back(std::move(row));
  }
  for (const history::Row& r : past)
    if (!uids.count(r.uid)) out.push_back(HistoryRow(r));
  return out;
}

json LivePage(const json& doc, const std::string& metrics_replica) {
  json page = {{"live", true},
               {"source", Field(doc, "source", "")},
               {"job", Obj(doc, "job")},
               {"why", Obj(doc, "why")},
               {"failure", Field(doc, "failure", nullptr)},
               {"replicas", Field(doc, "replicas", json::array())},
               {"events", Field(doc, "events", json::array())},
               {"workspaces", Field(doc, "workspaces", json::array())},
               {"logs", nullptr},
               {"metrics", nullptr},
               {"metricsReplica", metrics_replica}};
  page["replicaNames"] =
      ShortNames(page["replicas"], api::StringAt(Obj(page["job"], "metadata"), "name"));
  return page;
}

json HistoryPage(const json& record) {
  json page = {{"live", false},
               {"source", Field(record, "source", "")},
               {"uid", Field(record, "uid", "")},
               {"job", Obj(record, "job")},
               {"why", Obj(record, "why")},
               {"failure", Field(record, "failure", nullptr)},
               {"replicas", Field(record, "replicas", json::array())},
               {"events", Field(record, "events", json::array())},
               {"workspaces", json::array()},
               {"logs", Obj(record, "logs")},
               {"metrics", WithCharts(Field(record, "metrics", nullptr))},
               {"metricsReplica", api::StringAt(Obj(record, "metrics"), "replica")}};
  std::vector<std::string> names;
  for (const auto& [replica, log] : page["logs"].items()) names.push_back(replica);
  page["replicaNames"] = names;
  return page;
}

}  // namespace trainctl::ui
