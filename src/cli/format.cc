#include "cli/format.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "api/checkpoint_notice.h"
#include "api/json_fields.h"
#include "api/restart_scope.h"
#include "common/text.h"
#include "jobs/history_capture.h"
#include "local/container_runtime.h"

namespace trainctl::cli {

using nlohmann::json;

namespace {

// describe's COMMAND column: enough to recognise the command (-o json has all of it).
constexpr size_t kTableCommandBytes = 160;

std::string Str(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return fallback;
  return j[key].get<std::string>();
}

// A replica's exit code, with its reason when it says more than the code (e.g. "137 (OOMKilled)"),
// then the exit of a process that failed while it ran ("rank 1: 7", a torchrun worker).
std::string ExitText(const json& r) {
  std::string text;
  if (r.contains("exitCode") && r["exitCode"].is_number_integer()) {
    text = std::to_string(r["exitCode"].get<int>());
    std::string reason = Str(r, "reason");
    if (!reason.empty() && reason != "Error" && reason != "Completed") text += " (" + reason + ")";
  }
  const json failed = r.value("processFailure", json());
  if (failed.is_object() && failed.value("exitCode", json()).is_number_integer()) {
    const json rank = failed.value("rank", json());
    const json local = failed.value("localRank", json());
    std::string who = rank.is_number_integer()    ? "rank " + std::to_string(rank.get<int>())
                      : local.is_number_integer() ? "local_rank " + std::to_string(local.get<int>())
                                                  : "a process";
    text += (text.empty() ? "" : ", ") + who + ": " + std::to_string(failed["exitCode"].get<int>());
  }
  return text;
}

std::string Age(const json& job, Time now) {
  std::optional<Time> created =
      ParseRfc3339(Str(job.value("metadata", json::object()), "creationTimestamp"));
  if (!created) return "<unknown>";
  return FormatAge(std::chrono::duration_cast<Duration>(now - *created));
}

// The trainer's newest progress report (Trainer v2.3's status.trainerStatus), or null.
const json& TrainerStatusOf(const json& job) {
  return api::ChildAt(api::ChildAt(job, "status"), "trainerStatus");
}

// "42%" from the report, "" without one.
std::string ProgressCell(const json& job) {
  const json& ts = TrainerStatusOf(job);
  if (!ts.is_object() || !ts.contains("progressPercentage")) return "";
  return std::to_string(api::IntAt(ts, "progressPercentage", 0)) + "%";
}

// The time left the report gave, counted down from when it was made (never below 0s); "" when
// none was given or the job is finished.
std::string EtaCell(const json& job, Time now) {
  const json& ts = TrainerStatusOf(job);
  if (!ts.is_object() || !ts.contains("estimatedRemainingSeconds") || jobs::IsFinishedJob(job))
    return "";
  Duration left = std::chrono::seconds(api::IntAt(ts, "estimatedRemainingSeconds", 0));
  if (std::optional<Time> at = ParseRfc3339(Str(ts, "lastUpdatedTime")); at && now > *at)
    left -= std::chrono::duration_cast<Duration>(now - *at);
  return FormatAge(std::max(left, Duration(0)));
}

}  // namespace

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string FormatWaitTimeout(const json& job, const std::string& condition,
                              const std::string& timeout) {
  std::string out = "timed out after " + timeout + " waiting for condition " + condition;
  if (!job.is_object()) return out + " (the job was never found)";
  const json& md = job.value("metadata", json::object());
  std::string state = JobState(job);
  out += ": " + Str(job, "kind") + " " + Str(md, "namespace", "default") + "/" + Str(md, "name") +
         " is " + (state.empty() ? "not started" : state);
  json why = JobWhy(job);
  if (why["reason"].is_string())
    out += "\n" + why["reason"].get<std::string>() + " (since " + why["since"].get<std::string>() +
           "): " + why["message"].get<std::string>();
  if (why["firstFailure"].is_string()) out += "\n" + why["firstFailure"].get<std::string>();
  return out;
}

std::string FormatJobTable(const std::vector<json>& jobs, bool with_kind, bool with_namespace,
                           Time now, bool wide) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  if (with_namespace) header.push_back("NAMESPACE");
  if (with_kind) header.push_back("KIND");
  for (const char* h : {"NAME", "STATE", "AGE"}) header.push_back(h);
  // PROGRESS and ETA once any of the jobs has reported its progress (trainerStatus).
  bool progress = false;
  for (const json& job : jobs) progress = progress || TrainerStatusOf(job).is_object();
  if (progress) header.insert(header.end(), {"PROGRESS", "ETA"});
  if (wide) header.push_back("REASON");
  rows.push_back(header);
  for (const json& job : jobs) {
    std::vector<std::string> row;
    const json& md = job.value("metadata", json::object());
    if (with_namespace) row.push_back(Str(md, "namespace", "default"));
    if (with_kind) row.push_back(Str(job, "kind"));
    row.push_back(Str(md, "name"));
    row.push_back(JobState(job));
    row.push_back(Age(job, now));
    if (progress) {
      std::string p = ProgressCell(job), eta = EtaCell(job, now);
      row.push_back(p.empty() ? "-" : p);
      row.push_back(eta.empty() ? "-" : eta);
    }
    if (wide) row.push_back(JobWhyLine(job));
    rows.push_back(row);
  }
  return FormatTable(rows);
}

namespace {

// "Gang: attempt 1, 1 gang restart left (backoffLimit 2)" for a Gang job (api/restart_scope.h),
// from its annotations as written; nullopt for other jobs.
std::optional<std::string> GangLine(const json& job) {
  const json& md = job.value("metadata", json::object());
  const json& annotations = md.value("annotations", json::object());
  if (!annotations.is_object() || Str(annotations, api::kRestartScopeAnnotation) != "Gang")
    return std::nullopt;
  std::string attempt = Str(annotations, api::kRestartAttemptAnnotation, "0");
  std::string text = "Gang: attempt " + attempt;
  const json& rp = job.value("spec", json::object()).value("runPolicy", json::object());
  if (rp.is_object() && rp.contains("backoffLimit") && rp["backoffLimit"].is_number_integer()) {
    long long limit = rp["backoffLimit"].get<long long>();
    long long left = std::max(0LL, limit - std::atoll(attempt.c_str()));
    text += ", " + std::to_string(left) + " gang restart" + (left == 1 ? "" : "s") +
            " left (backoffLimit " + std::to_string(limit) + ")";
  } else {
    text += ", no backoffLimit";
  }
  return text;
}

// "4 s before a stop (signal SIGUSR1); given: ActiveDeadline, replicas stop at T (in 3 s)"
// for a job with a checkpoint notice (api/checkpoint_notice.h); nullopt for other jobs.
std::optional<std::string> NoticeLine(const json& job, Time now) {
  StatusOr<api::Job> decoded = api::DecodeJob(job);
  if (!decoded.ok()) return std::nullopt;
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(*decoded);
  std::optional<api::Notice> given = api::RecordedNotice(*decoded);
  if (!policy && !given) return std::nullopt;
  std::string text;
  if (policy) {
    text = std::to_string(policy->seconds) + " s before a stop";
    if (policy->signal) text += " (signal " + policy->signal_name + ")";
  } else {
    text = "no notice policy";
  }
  if (!given) return text + "; none given";
  text += "; given: " + given->reason + ", replicas stop at " + FormatRfc3339(given->stop_at);
  long long left = std::chrono::duration_cast<std::chrono::seconds>(given->stop_at - now).count();
  text += left > 0 ? " (in " + std::to_string(left) + " s)" : " (passed)";
  return text;
}

}  // namespace

std::string FormatDescribe(const json& job, const json& replicas, const std::vector<json>& events,
                           Time now) {
  const json& md = job.value("metadata", json::object());
  const json& status = job.value("status", json::object());
  std::string out;
  auto line = [&](const std::string& k, const std::string& v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%-20s", (k + ":").c_str());
    out += buf + v + "\n";
  };
  line("Name", Str(md, "name"));
  line("Namespace", Str(md, "namespace", "default"));
  line("Kind", Str(job, "kind"));
  line("State", JobState(job));
  line("Created", Str(md, "creationTimestamp") + " (" + Age(job, now) + " ago)");
  if (status.contains("startTime")) line("Start Time", Str(status, "startTime"));
  if (status.contains("completionTime")) line("Completion Time", Str(status, "completionTime"));
  const json& rp = job.value("spec", json::object()).value("runPolicy", json::object());
  if (!rp.empty()) line("Run Policy", rp.dump());
  if (std::optional<std::string> gang = GangLine(job)) line("Restart Scope", *gang);
  if (std::optional<std::string> notice = NoticeLine(job, now)) line("Checkpoint Notice", *notice);
  if (const json& ts = TrainerStatusOf(job); ts.is_object()) {
    std::string text = ProgressCell(job).empty() ? "reported" : ProgressCell(job);
    if (std::string eta = EtaCell(job, now); !eta.empty()) text += ", about " + eta + " left";
    if (std::optional<Time> at = ParseRfc3339(Str(ts, "lastUpdatedTime")))
      text += " (reported " + FormatAge(std::chrono::duration_cast<Duration>(now - *at)) + " ago)";
    line("Progress", text);
    std::string metrics;
    const json& list = api::ChildAt(ts, "metrics");
    if (list.is_array())
      for (const json& m : list)
        metrics += (metrics.empty() ? "" : ", ") + Str(m, "name") + "=" + Str(m, "value");
    if (!metrics.empty()) line("Metrics", metrics);
  }
  out += "Conditions:\n";
  std::vector<std::vector<std::string>> rows = {{"  TYPE", "STATUS", "REASON", "MESSAGE"}};
  if (status.contains("conditions"))
    for (const json& c : status["conditions"]) {
      std::string message = Str(c, "message");
      rows.push_back({"  " + Str(c, "type"), Str(c, "status"), Str(c, "reason"),
                      message.substr(0, message.find('\n'))});
    }
  out += FormatTable(rows);
  json why = JobWhy(job);
  if (why["reason"].is_string() || why["firstFailure"].is_string()) {
    out += "Why:\n";
    if (why["reason"].is_string())
      out += "  " + why["reason"].get<std::string>() + " (since " +
             why["since"].get<std::string>() + "): " + why["message"].get<std::string>() + "\n";
    if (why["firstFailure"].is_string()) {
      std::string text = why["firstFailure"].get<std::string>();
      size_t start = 0;
      for (size_t nl = text.find('\n');; nl = text.find('\n', start)) {
        std::string part =
            text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        out += (start == 0 ? "  " : "    ") + part + "\n";
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
  }
  out += "Replica Statuses:\n";
  rows = {{"  TYPE", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS"}};
  if (status.contains("replicaStatuses"))
    for (auto it = status["replicaStatuses"].begin(); it != status["replicaStatuses"].end(); ++it)
      rows.push_back({"  " + it.key(), std::to_string(it->value("active", 0)),
                      std::to_string(it->value("succeeded", 0)),
                      std::to_string(it->value("failed", 0)),
                      std::to_string(it->value("restarts", 0))});
  out += FormatTable(rows);
  if (replicas.is_array() && !replicas.empty()) {
    out += "Replicas:\n";
    bool local = false, cluster = false, gpus = false;
    for (const json& r : replicas) {
      local = local || r.contains("port");
      cluster = cluster || r.contains("node");
      gpus = gpus || r.contains("gpus");
    }
    std::vector<std::string> header = {"  NAME", "STATE", "EXIT", "RESTARTS"};
    if (cluster) header.insert(header.end(), {"NODE", "IP"});
    if (local) header.insert(header.end(), {"PID", "PORT"});
    if (local && gpus) header.push_back("GPUS");
    if (local) header.push_back("COMMAND");
    rows = {header};
    for (const json& r : replicas) {
      std::vector<std::string> row = {"  " + Str(r, "name"), Str(r, "state"), ExitText(r),
                                      std::to_string(api::IntAt(r, "restarts", 0))};
      if (cluster) row.insert(row.end(), {Str(r, "node"), Str(r, "podIP")});
      if (local)
        row.insert(row.end(), {r.contains("pid") && r["pid"].is_number_integer()
                                   ? std::to_string(r["pid"].get<int>())
                                   : "",
                               std::to_string(api::IntAt(r, "port", 0))});
      if (local && gpus) {
        std::string devices;
        if (r.contains("gpus") && r["gpus"].is_array())
          for (const json& g : r["gpus"])
            devices += (devices.empty() ? "" : ",") +
                       std::string(Str(g, "resource") == "amd.com/gpu" ? "amd:" : "") +
                       std::to_string(api::IntAt(g, "index", 0));
        row.push_back(devices.empty() ? "-" : devices);
      }
      if (local) row.push_back(Abbreviate(Str(r, "command"), kTableCommandBytes));
      rows.push_back(std::move(row));
    }
    out += FormatTable(rows);
  }
  out += "Events:\n";
  if (events.empty()) {
    out += "  <none>\n";
  } else {
    rows = {{"  TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"}};
    for (const json& e : events)
      rows.push_back({"  " + Str(e, "time"), Str(e, "type"), Str(e, "reason"), Str(e, "object"),
                      Str(e, "message")});
    out += FormatTable(rows);
  }
  return out;
}

std::string FormatFinalLine(const json& job, Duration elapsed) {
  const json& md = job.value("metadata", json::object());
  std::string state = JobState(job);
  std::string message;
  const json& status = job.value("status", json::object());
  if (status.contains("conditions") && !status["conditions"].empty())
    message = Str(status["conditions"].back(), "message");
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1fs", elapsed.count() / 1000.0);
  return Str(job, "kind") + " " + Str(md, "namespace", "default") + "/" + Str(md, "name") + " " +
         (state.empty() ? "Unknown" : state) + " in " + secs +
         (message.empty() ? "" : ": " + message);
}

std::string FormatDryRun(const json& plan, const std::string& source) {
  std::string out = plan.value("kind", "") + " " + plan.value("namespace", "") + "/" +
                    plan.value("name", "") + " from " + source + ": dry run, nothing was started\n";
  if (plan.contains("gpuInventory")) {
    const json& inv = plan["gpuInventory"];
    out += "GPUs on this machine: " + std::to_string(inv.value("nvidia.com/gpu", 0)) +
           " nvidia.com/gpu, " + std::to_string(inv.value("amd.com/gpu", 0)) + " amd.com/gpu (" +
           inv.value("source", "") + ")\n";
  }
  bool containers = plan.contains("runtime") && plan["runtime"].is_object();
  if (containers)
    out += "Runtime: " + plan["runtime"].value("name", "") + " " +
           plan["runtime"].value("version", "") + " (" + plan["runtime"].value("binary", "") +
           "): each replica is a container of its image on this machine's network; the command "
           "lines below are exact (the runtime takes each variable's value from its own env), "
           "except that a run names containers after their attempt and puts a replica with "
           "limits below its cgroup\n";
  out += containers ? std::string("Env: only those below (the image's own env comes first; ")
                    : "Env: this shell's " + std::to_string(plan.value("inheritedEnv", 0)) +
                          " variables, then those below (";
  out +=
      "trainctl: injected as the operator does; resources: "
      "from the replica's limits; runner: trainctl run's own; env-file: --env-file; template: the "
      "manifest's)\n";
  auto joined = [](const json& argv) {
    std::vector<std::string> parts;
    for (const json& a : argv)
      if (a.is_string()) parts.push_back(a.get<std::string>());
    return local::ShellJoin(parts);
  };
  for (const json& r : plan.value("replicas", json::array())) {
    std::string command = joined(r.value("command", json::array()));
    out += "\n" + r.value("name", "") + "\n";
    for (const json& init : r.value("initContainers", json::array())) {
      out += "  init:     " + init.value("name", "") + ": " +
             joined(init.value("command", json::array())) + "\n";
    }
    if (r.contains("image") && r["image"].is_object())
      out += "  image:    " + r["image"].value("image", "") + " (" + r["image"].value("pull", "") +
             ")\n";
    out += "  command:  " + command + "\n";
    out += "  workdir:  " + r.value("workingDir", "") + "\n";
    out += "  port:     " + std::to_string(r.value("port", 0)) + " (a run picks its own)\n";
    std::string gpus;
    for (const json& g : r.value("gpus", json::array()))
      gpus +=
          (gpus.empty() ? "" : ", ") + g.value("resource", "") + " " +
          std::to_string(g.value("index", 0)) +
          (g.value("id", "") != std::to_string(g.value("index", 0)) ? " (" + g.value("id", "") + ")"
                                                                    : "");
    out += "  gpus:     " + (gpus.empty() ? std::string("none asked for") : gpus) + "\n";
    for (const json& w : r.value("cgroup", json::array())) {
      std::string file = w.value("file", "");
      out += "  cgroup:   " + file.substr(file.rfind('/') + 1) + " = " + w.value("value", "") +
             " (" + file + ")\n";
    }
    for (const json& m : r.value("mounts", json::array()))
      out += "  mount:    " + m.value("mountPath", "") + " -> " + m.value("path", "") +
             " (volume " + m.value("volume", "") + ")\n";
    out += "  env:\n";
    for (const json& e : r.value("env", json::array()))
      out += "    " + e.value("name", "") + "=" + e.value("value", "") + "   [" +
             e.value("source", "") + "]\n";
  }
  return out;
}

}  // namespace trainctl::cli
