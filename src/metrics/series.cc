#include "metrics/series.h"

#include <algorithm>
#include <cmath>

namespace trainctl::metrics {

using nlohmann::json;

namespace {

json ValueJson(const MetricValue& v) {
  if (v.finite) return v.value;
  if (std::isnan(v.value)) return "nan";
  return v.value > 0 ? "inf" : "-inf";
}

// A stored value as a plotted one: null for what is not finite.
json PlotValue(const json& v) { return v.is_number() ? v : json(nullptr); }

json Thin(const json& column, size_t keep_every) {
  json out = json::array();
  for (size_t i = 0; i < column.size(); ++i)
    if (i % keep_every == 0 || i + 1 == column.size()) out.push_back(column[i]);
  return out;
}

bool IsRecord(const json& r) {
  return r.is_object() && r.contains("values") && r["values"].is_object();
}

bool StepIsEpoch(const json& r) {
  auto it = r.find("step_from");
  return it != r.end() && *it == "epoch";
}

// Whether every value of `epoch_record` is `other`'s, and `other` has a step of its own.
bool RepeatsValues(const json& epoch_record, const json& other) {
  if (!other.contains("step") || StepIsEpoch(other)) return false;
  const json& mine = epoch_record["values"];
  const json& theirs = other["values"];
  if (mine.empty()) return false;
  for (const auto& [name, value] : mine.items()) {
    auto it = theirs.find(name);
    if (it == theirs.end() ? !value.is_string() : *it != value) return false;
  }
  return true;
}

// The records that count: each log printed twice (an epoch record next to the same values
// with another step) once, as the one with the other step.
std::vector<const json*> Counted(const std::vector<json>& records) {
  std::vector<const json*> kept;
  for (const json& r : records) {
    if (!IsRecord(r)) continue;
    if (!kept.empty()) {
      const json& last = *kept.back();
      if (StepIsEpoch(r) && RepeatsValues(r, last)) continue;
      if (StepIsEpoch(last) && RepeatsValues(last, r)) {
        kept.back() = &r;
        continue;
      }
    }
    kept.push_back(&r);
  }
  return kept;
}

}  // namespace

json MetricRecord(const MetricLine& line, Time read_at) {
  json values = json::object();
  for (const MetricValue& v : line.values) values[v.name] = ValueJson(v);
  json record = {{"time", FormatRfc3339(line.time.value_or(read_at))}, {"values", values}};
  if (line.step) record["step"] = *line.step;
  if (line.step && line.step_name == "epoch") record["step_from"] = "epoch";
  return record;
}

json SeriesFromRecords(const std::vector<json>& records, const std::string& replica,
                       bool truncated) {
  json series = json::object();
  size_t ordinal = 0;
  for (const json* counted : Counted(records)) {
    const json& r = *counted;
    ++ordinal;
    double step = r.contains("step") && r["step"].is_number() ? r["step"].get<double>()
                                                              : static_cast<double>(ordinal);
    double seconds = 0;
    if (r.contains("time") && r["time"].is_string())
      if (std::optional<Time> t = ParseRfc3339(r["time"].get<std::string>()))
        seconds = static_cast<double>(
                      std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch())
                          .count()) /
                  1000.0;
    for (const auto& [name, value] : r["values"].items()) {
      json& s = series[name];
      if (s.is_null())
        s = {{"step", json::array()}, {"time", json::array()}, {"value", json::array()}};
      s["step"].push_back(step);
      s["time"].push_back(seconds);
      s["value"].push_back(PlotValue(value));
    }
  }
  for (auto& [name, s] : series.items()) {
    size_t n = s["step"].size();
    if (n <= kMaxPointsPerSeries) continue;
    size_t keep_every = (n + kMaxPointsPerSeries - 1) / kMaxPointsPerSeries;
    for (const char* column : {"step", "time", "value"}) s[column] = Thin(s[column], keep_every);
  }
  return {{"replica", replica}, {"records", ordinal}, {"truncated", truncated}, {"series", series}};
}

std::vector<json> RecordsFromOutput(std::string_view text, Time read_at) {
  std::vector<json> records;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    Time line_time = LeadingTime(line).value_or(read_at);
    for (std::string_view piece : SplitOutputLines(line))
      if (std::optional<MetricLine> parsed = ParseMetricLine(piece))
        records.push_back(MetricRecord(*parsed, line_time));
    start = end + 1;
  }
  return records;
}

json LastValues(const json& series) {
  json out = json::object();
  if (!series.is_object() || !series.contains("series")) return out;
  for (const auto& [name, s] : series["series"].items()) {
    if (s["value"].empty()) continue;
    out[name] = s["value"].back();
    if (!out.contains("step") || out["step"].get<double>() < s["step"].back().get<double>())
      out["step"] = s["step"].back();
  }
  return out;
}

}  // namespace trainctl::metrics
