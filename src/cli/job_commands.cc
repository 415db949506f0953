#include "cli/job_commands.h"

#include <iostream>

#include "api/json_fields.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/format.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

void Note(const std::string& note) { std::cerr << note << "\n"; }
void Warn(const std::string& warning) { std::cerr << "warning: " << warning << "\n"; }

std::string NameOf(const json& job) {
  return api::StringAt(job.value("metadata", json::object()), "name");
}

// What describe prints below the job's own table: where it runs and what it keeps.
std::string LocationLines(const jobs::JobDetail& detail) {
  std::string out;
  const json& where = detail.location;
  if (where.contains("runner") && where["runner"].value("active", false))
    out += "Runner:             active (trainctl run in progress)\n";
  if (std::string logs = api::StringAt(where, "logDir"); !logs.empty())
    out += "Logs:               " + logs + "\n";
  if (std::string pods = api::StringAt(where, "pods"); !pods.empty())
    out += "Pods:               kubectl -n " +
           api::StringAt(detail.job.value("metadata", json::object()), "namespace") +
           " get pods -l " + pods + "\n";
  for (const json& w : detail.workspaces) {
    std::string path = api::StringAt(w, "path");
    out += "Workspace:          " + (path.empty() ? "" : path + " ") + "(PVC " +
           api::StringAt(w, "claim") +
           "; kept after the job: delete --delete-workspace removes it)\n";
  }
  return out;
}

}  // namespace

int GetJobs(jobs::JobSource& source, const std::vector<std::string>& args,
            const std::string& output, bool all_namespaces) {
  if (!output.empty() && output != "json" && output != "name" && output != "wide")
    return Fail("unsupported output format \"" + output + "\" (json, name, wide)", 2);
  StatusOr<jobs::JobRef> ref = jobs::ParseGetArgs(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<std::vector<json>> jobs = source.List(*ref, Warn);
  if (!jobs.ok()) return Fail(jobs.status().message(), ExitFor(jobs.status()));
  if (!ref->name.empty() && jobs->empty())
    return Fail("job \"" + ref->name + "\" not found in " + source.Where(), 1);
  if (output == "json") {
    if (!ref->name.empty() && jobs->size() == 1)
      std::cout << (*jobs)[0].dump(2) << "\n";
    else
      std::cout << json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", *jobs}}).dump(2) << "\n";
    return 0;
  }
  if (output == "name") {
    for (const json& j : *jobs)
      if (std::optional<api::Kind> kind = api::KindFromName(api::StringAt(j, "kind")))
        std::cout << jobs::ResourceName(*kind) << "/" << NameOf(j) << "\n";
    return 0;
  }
  if (jobs->empty()) {
    std::string ns = source.Namespace();
    std::cerr << "No resources found" << (ns.empty() ? "" : " in " + ns + " namespace") << ".\n";
    return 0;
  }
  RealClock clock;
  std::cout << FormatJobTable(*jobs, !ref->kind, all_namespaces, clock.Now(), output == "wide");
  return 0;
}

int DescribeJob(jobs::JobSource& source, const std::vector<std::string>& args,
                const std::string& output) {
  if (!output.empty() && output != "json")
    return Fail("unsupported output format \"" + output + "\" (json)", 2);
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<jobs::JobDetail> detail = source.Describe(*ref);
  if (!detail.ok()) return Fail(detail.status().message(), ExitFor(detail.status()));
  for (const std::string& w : detail->warnings) Warn(w);
  if (output == "json") {
    std::cout << jobs::DetailDocument(*detail, source.name()).dump(2) << "\n";
    return 0;
  }
  RealClock clock;
  std::cout << FormatDescribe(detail->job, detail->replicas, detail->events, clock.Now())
            << LocationLines(*detail);
  return 0;
}

int JobLogs(jobs::JobSource& source, const std::vector<std::string>& args,
            const std::string& replica, bool follow) {
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<json> job = source.Get(*ref);
  if (!job.ok()) return Fail(job.status().message(), ExitFor(job.status()));
  bool prefixed = replica.empty();
  Status st = source.Logs(
      *job, {replica, follow},
      [prefixed](const std::string& name, std::string_view line) {
        if (prefixed) std::cout << "[" << name << "] ";
        std::cout << line << "\n";
        std::cout.flush();
      },
      Note);
  std::cout.flush();
  if (!st.ok()) return Fail(st.message(), ExitFor(st));
  return 0;
}

int JobMetrics(jobs::JobSource& source, const std::vector<std::string>& args,
               const std::string& output, const std::string& replica) {
  if (!output.empty() && output != "json")
    return Fail("unsupported output format \"" + output + "\" (json)", 2);
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<json> job = source.Get(*ref);
  if (!job.ok()) return Fail(job.status().message(), ExitFor(job.status()));
  StatusOr<json> series = source.Metrics(*job, replica);
  if (!series.ok()) return Fail(series.status().message(), ExitFor(series.status()));
  if (output == "json") {
    std::cout << series->dump(2) << "\n";
    return 0;
  }
  std::string from = api::StringAt(*series, "replica");
  if ((*series)["series"].empty()) {
    std::cerr << "No metric lines in the output of " << from
              << " yet (print e.g. \"step=10 loss=0.43\": docs/metrics.md).\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "LAST", "STEP", "POINTS"}};
  auto number = [](const json& v) {
    if (!v.is_number()) return std::string("nan/inf");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return std::string(buf);
  };
  for (const auto& [name, s] : (*series)["series"].items())
    rows.push_back({name, number(s["value"].back()), number(s["step"].back()),
                    std::to_string(s["value"].size())});
  std::cout << "From " << from << " (" << (*series)["records"].get<size_t>() << " metric lines"
            << ((*series)["truncated"].get<bool>() ? ", recording stopped at the limit" : "")
            << ")\n"
            << FormatTable(rows);
  return 0;
}

int WaitForJob(jobs::JobSource& source, const std::vector<std::string>& args,
               const std::string& for_condition, const std::string& timeout, const Clock& clock) {
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<std::string> condition = jobs::ParseWaitCondition(for_condition);
  if (!condition.ok()) return Fail(condition.status().message(), 2);
  std::optional<long long> limit = ParseDurationMs(timeout);
  if (!limit) return Fail("--timeout: cannot parse \"" + timeout + "\" (e.g. 30s, 10m)", 2);
  Time deadline = clock.Now() + Duration(*limit);
  Status last = Status::Ok();
  json last_seen;  // the job as last read, to say why on a timeout
  for (;;) {
    StatusOr<json> job = source.Get(*ref);
    if (job.ok()) {
      last = Status::Ok();
      last_seen = *job;
      jobs::WaitOutcome outcome = jobs::EvaluateWait(*job, *condition);
      std::string name = NameOf(*job);
      // A finished local job is reported once its runner has stopped every replica and
      // written their logs, so what the user reads next is complete.
      bool settling = outcome.finished && clock.Now() < deadline && source.Settling(*ref);
      if (settling) {
        clock.SleepFor(source.PollInterval());
        continue;
      }
      if (outcome.state == jobs::WaitState::kMet) {
        std::cout << jobs::ResourceName(*api::KindFromName(api::StringAt(*job, "kind"))) << "/"
                  << name << " condition met\n";
        return 0;
      }
      if (outcome.state == jobs::WaitState::kFailed)
        return Fail(name + " failed: " + outcome.message, 1);
      if (outcome.state == jobs::WaitState::kFinishedWithout)
        return Fail(name + " finished without condition " + *condition, 1);
    } else if (job.status().code() == StatusCode::kInvalid) {
      return Fail(job.status().message(), 2);
    } else {
      last = job.status();  // not created yet, or the server is briefly unreachable
    }
    if (clock.Now() >= deadline)
      return Fail(FormatWaitTimeout(last_seen, *condition, timeout) +
                      (last.ok() ? std::string() : " (last read: " + last.message() + ")"),
                  1);
    clock.SleepFor(source.PollInterval());
  }
}

}  // namespace trainctl::cli
