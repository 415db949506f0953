#include "jobs/why.h"

namespace trainctl::jobs {

using nlohmann::json;

namespace {

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// job["status"] when it is an object, else an empty object: odd input never throws.
const json& StatusOf(const json& job) {
  static const json empty = json::object();
  if (!job.is_object()) return empty;
  auto it = job.find("status");
  return it != job.end() && it->is_object() ? *it : empty;
}

}  // namespace

std::string JobState(const json& job) {
  const json& status = StatusOf(job);
  if (!status.contains("conditions") || !status["conditions"].is_array() ||
      status["conditions"].empty())
    return "";
  return Str(status["conditions"].back(), "type");
}

json JobWhy(const json& job) {
  json out = {
      {"reason", nullptr}, {"message", nullptr}, {"since", nullptr}, {"firstFailure", nullptr}};
  const json& status = StatusOf(job);
  if (!status.contains("conditions") || !status["conditions"].is_array()) return out;
  for (const json& c : status["conditions"]) {
    std::string type = Str(c, "type");
    if (type == "ReplicasReady" && Str(c, "status") == "False") {
      out["reason"] = Str(c, "reason");
      out["message"] = Str(c, "message");
      out["since"] = Str(c, "lastTransitionTime");
    }
    if ((type == "Failed" || type == "Restarting") && Str(c, "status") == "True") {
      std::string message = Str(c, "message");
      size_t at = message.find("First failure: ");
      if (at != std::string::npos) out["firstFailure"] = message.substr(at);
    }
  }
  return out;
}

std::string JobWhyLine(const json& job, size_t max) {
  json why = JobWhy(job);
  std::string line;
  if (why["reason"].is_string())
    line = why["reason"].get<std::string>() + ": " + why["message"].get<std::string>();
  else if (why["firstFailure"].is_string())
    line = why["firstFailure"].get<std::string>();
  line = line.substr(0, line.find('\n'));
  if (line.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line = line.substr(0, cut) + "…";
  }
  return line;
}

std::string FirstFailureName(const json& job) {
  json why = JobWhy(job);
  if (!why["firstFailure"].is_string()) return "";
  std::string text = why["firstFailure"].get<std::string>().substr(15);  // "First failure: "
  return text.substr(0, text.find_first_of(" \n"));
}

json FailureSummary(const json& job, const json& replica_rows) {
  std::string first = FirstFailureName(job);
  if (first.empty()) return nullptr;
  json failure = {{"name", first}, {"message", JobWhy(job)["firstFailure"]}};
  if (replica_rows.is_array())
    for (const json& row : replica_rows)
      if (row.is_object() && row.value("name", json()) == json(first))
        for (const char* key : {"type", "index", "exitCode", "reason", "finishTime"})
          if (row.contains(key)) failure[key] = row[key];
  return failure;
}

}  // namespace trainctl::jobs
