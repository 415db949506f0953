#include "history/record.h"

#include <algorithm>

namespace trainctl::history {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

}  // namespace

nlohmann::json RowJson(const Row& r) {
  return {{"uid", r.uid},
          {"source", r.source},
          {"namespace", r.namespace_},
          {"kind", r.kind},
          {"name", r.name},
          {"state", r.state},
          {"why", r.why},
          {"firstFailure", r.first_failure},
          {"created", r.created},
          {"finished", r.finished},
          {"bytes", r.bytes}};
}

Row RowFromJson(const nlohmann::json& j) {
  auto str = [&](const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                  : std::string();
  };
  Row r;
  r.uid = str("uid");
  r.source = str("source");
  r.namespace_ = str("namespace");
  r.kind = str("kind");
  r.name = str("name");
  r.state = str("state");
  r.why = str("why");
  r.first_failure = str("firstFailure");
  r.created = str("created");
  r.finished = str("finished");
  if (j.is_object() && j.contains("bytes") && j["bytes"].is_number_unsigned())
    r.bytes = j["bytes"].get<size_t>();
  return r;
}

Row RowOf(const json& record, const std::string& why_line) {
  Row row;
  row.uid = Str(record, "uid");
  row.source = Str(record, "source");
  row.namespace_ = Str(record, "namespace");
  row.kind = Str(record, "kind");
  row.name = Str(record, "name");
  const json& job = record.contains("job") ? record["job"] : json::object();
  const json& status = job.is_object() ? job.value("status", json::object()) : json::object();
  if (status.contains("conditions") && status["conditions"].is_array() &&
      !status["conditions"].empty())
    row.state = Str(status["conditions"].back(), "type");
  row.why = why_line;
  if (record.contains("failure") && record["failure"].is_object())
    row.first_failure = Str(record["failure"], "name");
  row.created = Str(job.value("metadata", json::object()), "creationTimestamp");
  row.finished = Str(status, "completionTime");
  if (row.finished.empty()) row.finished = Str(record, "recordedAt");
  // Searched: the name, why, the failure's text and last lines, event messages, log tails.
  std::string text = row.name + "\n" + why_line + "\n";
  if (record.contains("failure") && record["failure"].is_object()) {
    text += Str(record["failure"], "message") + "\n";
    if (record["failure"].contains("lastLogLines") && record["failure"]["lastLogLines"].is_array())
      for (const json& l : record["failure"]["lastLogLines"])
        if (l.is_string()) text += l.get<std::string>() + "\n";
  }
  if (record.contains("events") && record["events"].is_array())
    for (const json& e : record["events"])
      text += Str(e, "reason") + " " + Str(e, "message") + "\n";
  if (record.contains("logs") && record["logs"].is_object())
    for (const auto& [replica, log] : record["logs"].items())
      text += LogTail(Str(log, "tail"), kSearchedTailBytes) + "\n";
  row.search_text = std::move(text);
  return row;  // bytes: set by the store from the text it stores (one dump per record)
}

std::string LogTail(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t start = text.size() - max;
  size_t nl = text.find('\n', start);
  if (nl != std::string::npos && nl + 1 < text.size()) start = nl + 1;
  return text.substr(start);
}

std::vector<std::string> Evict(std::vector<Stored> stored, const Limits& limits, Time now) {
  std::sort(stored.begin(), stored.end(), [](const Stored& a, const Stored& b) {
    return a.finished != b.finished ? a.finished < b.finished : a.uid < b.uid;
  });
  size_t total = 0;
  for (const Stored& s : stored) total += s.bytes;
  std::vector<std::string> out;
  size_t left = stored.size();
  for (const Stored& s : stored) {
    bool too_old = now - s.finished > limits.max_age;
    if (!too_old && left <= limits.max_jobs && total <= limits.max_bytes) break;
    out.push_back(s.uid);
    total -= s.bytes;
    --left;
  }
  return out;
}

}  // namespace trainctl::history
