#include "jobs/local_source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "api/job.h"
#include "api/json_fields.h"
#include "jobs/local_view.h"
#include "local/job_view.h"
#include "local/log_tailer.h"
#include "local/volumes.h"
#include "metrics/series.h"

namespace trainctl::jobs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The log files of a job's replicas: (short name, path), sorted by short name.
std::vector<std::pair<std::string, std::string>> LogFiles(const local::JobDir& dir,
                                                          const std::string& replica) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string prefix = dir.key().name + "-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.LogDir(), ec)) {
    std::string file = entry.path().filename();
    if (file.size() < 5 || file.substr(file.size() - 4) != ".log") continue;
    std::string pod = file.substr(0, file.size() - 4);
    std::string short_name = pod.rfind(prefix, 0) == 0 ? pod.substr(prefix.size()) : pod;
    if (!replica.empty() && replica != short_name && replica != pod) continue;
    out.emplace_back(short_name, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string LocalJobSource::Where() const {
  return ns_ ? "namespace " + *ns_ : std::string("any namespace");
}

StatusOr<local::JobKey> LocalJobSource::Find(const JobRef& ref) const {
  std::vector<local::JobKey> matches;
  for (const local::JobKey& k : local::ListJobs(root_, ns_))
    if (k.name == ref.name && (!ref.kind || k.kind == *ref.kind)) matches.push_back(k);
  if (matches.empty())
    return NotFoundError("job \"" + ref.name + "\" not found in namespace " +
                         ns_.value_or("(all)") + " of " + root_);
  if (matches.size() > 1)
    return InvalidError("\"" + ref.name + "\" names several jobs; give the kind, e.g. " +
                        api::ToLower(api::Info(matches[0].kind).name) + " " + ref.name);
  return matches[0];
}

StatusOr<std::vector<json>> LocalJobSource::List(const JobRef& filter, const NoteSink& notes) {
  std::vector<json> jobs;
  for (const local::JobKey& key : local::ListJobs(root_, ns_)) {
    if ((filter.kind && key.kind != *filter.kind) ||
        (!filter.name.empty() && key.name != filter.name))
      continue;
    local::JobDir dir(root_, key);
    StatusOr<LocalJobSnapshot> stored = ReadLocalJob(dir, clock_.Now(), /*with_events=*/false);
    if (!stored.ok()) {
      if (stored.status().code() != StatusCode::kNotFound)  // not a job being removed
        notes(stored.status().message());
      continue;
    }
    jobs.push_back(std::move(stored->job));
  }
  return jobs;
}

StatusOr<json> LocalJobSource::Get(const JobRef& ref) {
  TRAINCTL_ASSIGN_OR_RETURN(local::JobKey key, Find(ref));
  local::JobDir dir(root_, key);
  TRAINCTL_ASSIGN_OR_RETURN(LocalJobSnapshot snap,
                            ReadLocalJob(dir, clock_.Now(), /*with_events=*/false));
  return std::move(snap.job);
}

bool LocalJobSource::Settling(const JobRef& ref) {
  StatusOr<local::JobKey> key = Find(ref);
  if (!key.ok()) return false;
  return local::JobDir(root_, *key).RunnerActive();
}

StatusOr<JobDetail> LocalJobSource::Describe(const JobRef& ref) {
  TRAINCTL_ASSIGN_OR_RETURN(local::JobKey key, Find(ref));
  local::JobDir dir(root_, key);
  TRAINCTL_ASSIGN_OR_RETURN(LocalJobSnapshot snap,
                            ReadLocalJob(dir, clock_.Now(), /*with_events=*/true));
  json workspaces = json::array();
  if (StatusOr<api::Job> job = api::DecodeJob(snap.job); job.ok())
    for (const api::ClaimRef& claim : api::JobClaims(*job))
      workspaces.push_back({{"claim", claim.claim},
                            {"path", local::ClaimFolder(root_, key.namespace_, claim.claim)}});
  std::optional<json> failed = local::FirstFailedReplica(snap.replicas);
  std::vector<std::string> tail;
  if (failed && failed->contains("name") && (*failed)["name"].is_string())
    tail = TailLines(dir.LogPath((*failed)["name"].get<std::string>()), kFailureLogLines);
  return LocalDetail(snap, failed, tail, std::move(workspaces));
}

Status LocalJobSource::Logs(const json& job, const LogRequest& request, const LogSink& lines,
                            const NoteSink& /*notes*/) {
  std::optional<api::Kind> kind = api::KindFromName(api::StringAt(job, "kind"));
  const json& md = job.contains("metadata") ? job["metadata"] : json::object();
  if (!kind) return InvalidError("not a job of a known kind");
  local::JobDir dir(root_, {*kind, api::StringAt(md, "namespace"), api::StringAt(md, "name")});
  if (!request.replica.empty() && LogFiles(dir, request.replica).empty() && !request.follow)
    return NotFoundError("no logs for replica \"" + request.replica + "\" of " + dir.key().name);
  local::LogTailer tailer;
  for (;;) {
    bool active = dir.RunnerActive();
    for (const auto& file : LogFiles(dir, request.replica)) {
      const std::string& short_name = file.first;  // a lambda may not capture a binding
      tailer.Poll(
          short_name, file.second, [&](const std::string& line) { lines(short_name, line); },
          !request.follow || !active);
    }
    if (!request.follow || !active) return Status::Ok();
    clock_.SleepFor(PollInterval());
  }
}

StatusOr<LogChunk> LocalJobSource::ReadLog(const json& job, const std::string& replica, size_t from,
                                           size_t max_bytes) {
  std::optional<api::Kind> kind = api::KindFromName(api::StringAt(job, "kind"));
  if (!kind) return InvalidError("not a job of a known kind");
  const json& md = job["metadata"];
  local::JobDir dir(root_, {*kind, api::StringAt(md, "namespace"), api::StringAt(md, "name")});
  std::vector<std::pair<std::string, std::string>> files = LogFiles(dir, replica);
  if (files.empty())
    return NotFoundError("no log for replica \"" + replica + "\" of " + dir.key().name);
  std::ifstream in(files[0].second, std::ios::binary | std::ios::ate);
  if (!in) return IoError("cannot read " + files[0].second);
  size_t size = static_cast<size_t>(in.tellg());
  if (from > size) from = size;  // the log was replaced (a new run of the same name)
  std::string window(std::min(max_bytes, size - from), '\0');
  in.seekg(static_cast<std::streamoff>(from));
  in.read(window.data(), static_cast<std::streamsize>(window.size()));
  window.resize(static_cast<size_t>(in.gcount()));
  return WholeLines(std::move(window), from, size);
}

StatusOr<json> LocalJobSource::Metrics(const json& job, const std::string& asked) {
  StatusOr<std::string> recorded = MetricsReplica(job);
  if (asked.empty() && !recorded.ok()) return recorded.status();
  std::string replica = asked.empty() ? *recorded : asked;
  std::optional<api::Kind> kind = api::KindFromName(api::StringAt(job, "kind"));
  if (!kind) return InvalidError("not a job of a known kind");
  const json& md = job["metadata"];
  local::JobDir dir(root_, {*kind, api::StringAt(md, "namespace"), api::StringAt(md, "name")});
  if (!recorded.ok() || replica != *recorded) {  // another rank: read its log now
    std::vector<std::pair<std::string, std::string>> files = LogFiles(dir, replica);
    if (files.empty())
      return NotFoundError("no log for replica \"" + replica + "\" of " + dir.key().name);
    std::ifstream in(files[0].second, std::ios::binary | std::ios::ate);
    std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
    std::streamoff from = std::max<std::streamoff>(0, size - kMaxMetricLogBytes);
    std::string text(static_cast<size_t>(size - from), '\0');
    in.seekg(from);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    return metrics::SeriesFromRecords(metrics::RecordsFromOutput(text, clock_.Now()), replica,
                                      from > 0);
  }
  std::vector<json> records = dir.ReadMetricRecords();
  bool truncated = !records.empty() && records.back().value("truncated", false);
  return metrics::SeriesFromRecords(records, replica, truncated);
}

}  // namespace trainctl::jobs
