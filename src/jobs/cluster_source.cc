#include "jobs/cluster_source.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "api/job.h"
#include "api/json_fields.h"
#include "api/trainer_status.h"
#include "jobs/cluster_view.h"
#include "jobs/why.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "metrics/series.h"

namespace trainctl::jobs {
namespace {

using nlohmann::json;

std::vector<api::Kind> KindsOf(const JobRef& ref) {
  if (ref.kind) return {*ref.kind};
  std::vector<api::Kind> all;
  for (const api::KindInfo& k : api::AllKinds())
    all.push_back(k.kind);  // a kind whose CRD is not installed is skipped when listed
  return all;
}

std::string NameOf(const json& job) {
  return api::StringAt(job.value("metadata", json::object()), "name");
}
std::string UidOf(const json& job) {
  return api::StringAt(job.value("metadata", json::object()), "uid");
}
std::optional<api::Kind> KindOf(const json& job) {
  return api::KindFromName(api::StringAt(job, "kind"));
}

// A TrainJob's pods are its JobSet's (named after it).
std::string PodsSelector(const json& job) {
  std::optional<api::Kind> kind = KindOf(job);
  const bool jobset = kind && api::Info(*kind).runtime_resolved;
  return std::string(jobset ? kLabelJobSetName : api::kLabelJobName) + "=" + NameOf(job);
}

// Splits a stream's bytes into lines for a sink; one sink call at a time. Thread-safe.
class LineSplitter {
 public:
  explicit LineSplitter(LogSink sink) : sink_(std::move(sink)) {}
  void Feed(const std::string& replica, std::string_view data, std::string* pending) {
    std::lock_guard<std::mutex> lock(mu_);
    pending->append(data);
    size_t start = 0, nl;
    while ((nl = pending->find('\n', start)) != std::string::npos) {
      sink_(replica, std::string_view(*pending).substr(start, nl - start));
      start = nl + 1;
    }
    pending->erase(0, start);
  }
  void Flush(const std::string& replica, std::string* pending) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending->empty()) sink_(replica, *pending);
    pending->clear();
  }

 private:
  std::mutex mu_;
  LogSink sink_;
};

struct LogFollow {
  std::shared_ptr<kube::Stream> stream;
  int restarts = 0;  // the container instance being read
  std::atomic<bool> done{false};
  std::atomic<bool> failed{false};
  std::string pending;  // a partial line, touched only by the transport's thread
};

}  // namespace

kube::Resource JobResource(api::Kind kind) {
  const std::string& served = api::Info(kind).api_versions.front();  // "<group>/<version>"
  return {served.substr(0, served.find('/')), served.substr(served.find('/') + 1),
          api::Info(kind).plural};
}

StatusOr<std::unique_ptr<ClusterJobSource>> ClusterJobSource::Open(const ClusterScope& scope,
                                                                   const Clock& clock) {
  StatusOr<kube::RestConfig> config = kube::LoadClientConfig(scope.kubeconfig);
  if (!config.ok())
    return Status(config.status().code(),
                  "cannot load the cluster configuration: " + config.status().message());
  StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(*config, &clock);
  if (!client.ok())
    return Status(client.status().code(),
                  "cannot connect to " + config->server + ": " + client.status().message());
  std::string ns = !scope.namespace_.empty()         ? scope.namespace_
                   : !config->namespace_name.empty() ? config->namespace_name
                                                     : "default";
  return std::unique_ptr<ClusterJobSource>(new ClusterJobSource(
      std::move(*client), std::move(ns), scope.all_namespaces, config->server, clock));
}

std::string ClusterJobSource::Where() const {
  return (all_namespaces_ ? std::string("any namespace") : "namespace " + namespace_name_) +
         " on " + server_;
}

StatusOr<std::vector<json>> ClusterJobSource::List(const JobRef& filter,
                                                   const NoteSink& /*notes*/) {
  std::string ns = all_namespaces_ ? "" : namespace_name_;
  std::vector<json> jobs;
  for (api::Kind kind : KindsOf(filter)) {
    StatusOr<json> list = client_->List(JobResource(kind), ns, {});
    if (!list.ok()) {
      if (list.status().code() == StatusCode::kNotFound) {
        if (!filter.kind) continue;  // that kind's CRD is not installed
        return NotFoundError("the server " + server_ + " does not serve " + ResourceName(kind) +
                             " (is its CRD installed? kubectl apply --server-side -k manifests/)");
      }
      return list.status();
    }
    if (!list->contains("items") || !(*list)["items"].is_array()) continue;
    for (json& item : (*list)["items"]) {
      if (!filter.name.empty() && NameOf(item) != filter.name) continue;
      // Items of a list carry no kind; the SDK and `-o json` expect it.
      item["apiVersion"] = api::Info(kind).api_versions.front();
      item["kind"] = api::Info(kind).name;
      api::ShowTrainerStatusAnnotation(&item);
      jobs.push_back(std::move(item));
    }
  }
  return jobs;
}

// A GET per candidate kind (a kind whose CRD is not installed answers NotFound like a missing
// job). NotFound when none has it; kInvalid when several kinds do.
StatusOr<json> ClusterJobSource::Get(const JobRef& ref) {
  std::vector<json> found;
  for (api::Kind kind : KindsOf(ref)) {
    StatusOr<json> job = client_->Get(JobResource(kind), namespace_name_, ref.name);
    if (job.ok()) {
      found.push_back(std::move(*job));
    } else if (job.status().code() != StatusCode::kNotFound) {
      return job.status();
    }
  }
  if (found.empty())
    return NotFoundError((ref.kind ? api::ToLower(api::Info(*ref.kind).name) + " " : "job ") +
                         "\"" + ref.name + "\" not found in namespace " + namespace_name_ + " on " +
                         server_);
  if (found.size() > 1)
    return InvalidError("\"" + ref.name + "\" names several jobs; give the kind, e.g. " +
                        api::ToLower(api::StringAt(found[0], "kind")) + " " + ref.name);
  if (!KindOf(found[0]))
    return IoError("the server returned a job of unknown kind \"" +
                   api::StringAt(found[0], "kind") + "\"");
  api::ShowTrainerStatusAnnotation(&found[0]);
  return found[0];
}

StatusOr<JobDetail> ClusterJobSource::Describe(const JobRef& ref) {
  TRAINCTL_ASSIGN_OR_RETURN(json job, Get(ref));
  JobDetail detail;
  kube::ListOptions pods_of;
  pods_of.label_selector = PodsSelector(job);
  StatusOr<json> pods = client_->List(kube::kPods, namespace_name_, pods_of);
  StatusOr<std::vector<json>> events = Events(job);
  if (!pods.ok()) detail.warnings.push_back(pods.status().message());
  if (!events.ok()) detail.warnings.push_back(events.status().message());
  if (pods.ok()) {
    const json& spec = job.contains("spec") ? job["spec"] : json();
    const char* map_field = api::Info(*KindOf(job)).spec_map_field;
    detail.replicas = ReplicaRowsFromPods(
        *pods, UidOf(job), spec.is_object() && spec.contains(map_field) ? spec[map_field] : json());
  }
  if (events.ok()) detail.events = std::move(*events);
  // The replica the operator named in the Failed/Restarting condition, and its last lines.
  detail.failure = FailureSummary(job, detail.replicas);
  if (!detail.failure.is_null()) {
    std::vector<std::string> tail;
    json no_pods = json::object();
    for (const LogTarget& t : LogTargets(pods.ok() ? *pods : no_pods, NameOf(job), UidOf(job),
                                         api::Info(*KindOf(job)).default_container,
                                         detail.failure["name"].get<std::string>())) {
      if (StatusOr<std::string> text = LogEndOf(t, static_cast<long long>(kFailureLogLines));
          text.ok())
        tail = LastLines(*text, kFailureLogLines);
    }
    detail.failure["lastLogLines"] = tail;
  }
  if (StatusOr<api::Job> decoded = api::DecodeJob(job); decoded.ok())
    for (const api::ClaimRef& claim : api::JobClaims(*decoded))
      detail.workspaces.push_back({{"claim", claim.claim}});
  detail.location = {{"server", server_}, {"pods", pods_of.label_selector}};
  detail.job = std::move(job);
  return detail;
}

Status ClusterJobSource::Logs(const json& job, const LogRequest& request, const LogSink& lines,
                              const NoteSink& notes) {
  if (request.follow) return Follow(job, request, lines, notes);
  kube::ListOptions pods_of;
  pods_of.label_selector = PodsSelector(job);
  TRAINCTL_ASSIGN_OR_RETURN(json pods, client_->List(kube::kPods, namespace_name_, pods_of));
  std::vector<LogTarget> targets = LogTargets(
      pods, NameOf(job), UidOf(job), api::Info(*KindOf(job)).default_container, request.replica);
  if (targets.empty()) {
    if (!request.replica.empty())
      return NotFoundError("no replica \"" + request.replica + "\" in " + NameOf(job) +
                           " (its pods: kubectl -n " + namespace_name_ + " get pods -l " +
                           pods_of.label_selector + ")");
    notes(NameOf(job) + " has no pods (yet)");
    return Status::Ok();
  }
  LineSplitter splitter(lines);
  int failures = 0;
  Status last = Status::Ok();
  for (const LogTarget& t : targets) {
    if (!t.started) {
      notes(t.short_name + ": no log yet: " + t.pod + " is " + t.state);
      continue;
    }
    kube::PodLogOptions options;
    options.container = t.container;
    StatusOr<std::string> text = client_->PodLog(namespace_name_, t.pod, options);
    if (!text.ok()) {
      notes("warning: " + text.status().message());
      last = text.status();
      ++failures;
      continue;
    }
    std::string pending;
    splitter.Feed(t.short_name, *text, &pending);
    splitter.Flush(t.short_name, &pending);
  }
  if (failures > 0)
    return Status(last.code(), std::to_string(failures) + " of " + std::to_string(targets.size()) +
                                   " logs could not be read");
  return Status::Ok();
}

// Streams every replica's log until the job has finished and every stream has ended; a
// restarted container is read again from its new start.
Status ClusterJobSource::Follow(const json& first, const LogRequest& request, const LogSink& lines,
                                const NoteSink& notes) {
  api::Kind kind = *KindOf(first);
  std::string name = NameOf(first), uid = UidOf(first);
  // Callbacks may outlive this frame if a cancelled stream is slow to end: they share
  // ownership of what they touch.
  auto splitter = std::make_shared<LineSplitter>(lines);
  std::map<std::string, std::shared_ptr<LogFollow>> follows;
  kube::ListOptions pods_of;
  pods_of.label_selector = PodsSelector(first);
  // The kubelet ends a stream when its container stops; some nodes (kwok) never do, so once
  // the job has finished, streams still open after a grace period are cancelled.
  const Duration kGrace(2000);
  std::optional<Time> finished_at;
  Time last_opened{};
  int failed_lists = 0;
  Status result = Status::Ok();
  for (;;) {
    StatusOr<json> pods = client_->List(kube::kPods, namespace_name_, pods_of);
    if (pods.ok()) {
      for (const LogTarget& t :
           LogTargets(*pods, name, uid, api::Info(kind).default_container, request.replica)) {
        std::shared_ptr<LogFollow>& f = follows[t.pod];
        bool again = f && f->done && (f->failed || t.restarts > f->restarts);
        if (!t.started || (f && !again)) continue;
        auto next = std::make_shared<LogFollow>();
        next->restarts = t.restarts;
        kube::PodLogOptions options;
        options.container = t.container;
        std::weak_ptr<LogFollow> weak = next;
        std::string replica = t.short_name;
        next->stream = client_->StreamPodLog(
            namespace_name_, t.pod, options,
            [splitter, weak, replica](std::string_view data) {
              std::shared_ptr<LogFollow> self = weak.lock();
              if (self) splitter->Feed(replica, data, &self->pending);
              return self != nullptr;
            },
            [splitter, weak, replica](Status st) {
              std::shared_ptr<LogFollow> self = weak.lock();
              if (!self) return;
              splitter->Flush(replica, &self->pending);
              self->failed = !st.ok() && st.code() != StatusCode::kCancelled;
              self->done = true;
            });
        f = std::move(next);
        last_opened = clock_.Now();
      }
    }
    failed_lists = pods.ok() ? 0 : failed_lists + 1;
    if (failed_lists > 30) {
      result = pods.status();
      break;
    }
    StatusOr<json> job = client_->Get(JobResource(kind), namespace_name_, name);
    if (!job.ok() && job.status().code() == StatusCode::kNotFound) {
      notes("job " + name + " was deleted");
      break;
    }
    if (job.ok() && UidOf(*job) != uid) break;  // replaced by a new job of the same name
    Time now = clock_.Now();
    if (!finished_at && job.ok() && EvaluateWait(*job, "Succeeded").state != WaitState::kPending)
      finished_at = now;
    if (finished_at) {
      bool all_done = true;
      for (const auto& [pod, f] : follows) all_done = all_done && (!f || f->done);
      if (all_done || (now - *finished_at >= kGrace && now - last_opened >= kGrace)) break;
    }
    clock_.SleepFor(Duration(finished_at ? 250 : 1000));
  }
  for (auto& [pod, f] : follows)
    if (f && !f->done) f->stream->Cancel();
  for (int i = 0; i < 50; ++i) {
    bool all_done = true;
    for (const auto& [pod, f] : follows) all_done = all_done && (!f || f->done);
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return result;
}

StatusOr<LogTarget> ClusterJobSource::StartedTarget(const json& job, const std::string& replica) {
  kube::ListOptions pods_of;
  pods_of.label_selector = PodsSelector(job);
  TRAINCTL_ASSIGN_OR_RETURN(json pods, client_->List(kube::kPods, namespace_name_, pods_of));
  std::vector<LogTarget> targets =
      LogTargets(pods, NameOf(job), UidOf(job), api::Info(*KindOf(job)).default_container, replica);
  if (targets.empty() || !targets[0].started)
    return NotFoundError("no log for replica \"" + replica + "\" of " + NameOf(job));
  return targets[0];
}

StatusOr<LogChunk> ClusterJobSource::ReadLog(const json& job, const std::string& replica,
                                             size_t from, size_t max_bytes) {
  TRAINCTL_ASSIGN_OR_RETURN(LogTarget target, StartedTarget(job, replica));
  kube::PodLogOptions options;
  options.container = target.container;
  options.limit_bytes = static_cast<long long>(from + max_bytes);
  TRAINCTL_ASSIGN_OR_RETURN(std::string text,
                            client_->PodLog(namespace_name_, target.pod, options));
  if (from > text.size()) from = text.size();  // a restarted container: a new, shorter log
  // The API gives no total size; more may follow when the window was full.
  size_t size = text.size() == from + max_bytes ? text.size() + 1 : text.size();
  return WholeLines(text.substr(from), from, size);
}

StatusOr<std::string> ClusterJobSource::LogEnd(const json& job, const std::string& replica,
                                               long long lines) {
  TRAINCTL_ASSIGN_OR_RETURN(LogTarget target, StartedTarget(job, replica));
  return LogEndOf(target, lines);
}

StatusOr<std::string> PodLogEnd(kube::Client& client, const std::string& ns,
                                const LogTarget& target, long long lines) {
  kube::PodLogOptions options;
  options.container = target.container;
  options.tail_lines = lines;
  return client.PodLog(ns, target.pod, options);
}

StatusOr<std::vector<json>> JobEvents(kube::Client& client, const std::string& ns,
                                      const json& job) {
  kube::ListOptions events_of;
  events_of.field_selector = "involvedObject.uid=" + UidOf(job);
  TRAINCTL_ASSIGN_OR_RETURN(json events, client.List(kube::kEvents, ns, events_of));
  return EventRowsFromApi(events);
}

StatusOr<std::string> ClusterJobSource::LogEndOf(const LogTarget& target, long long lines) {
  return PodLogEnd(*client_, namespace_name_, target, lines);
}

StatusOr<std::vector<json>> ClusterJobSource::Events(const json& job) {
  return JobEvents(*client_, namespace_name_, job);
}

StatusOr<json> ClusterJobSource::Metrics(const json& job, const std::string& asked) {
  std::string replica = asked;
  if (replica.empty()) {
    TRAINCTL_ASSIGN_OR_RETURN(replica, MetricsReplica(job));
  }
  StatusOr<LogTarget> target = StartedTarget(job, replica);
  if (!target.ok() && target.status().code() != StatusCode::kNotFound) return target.status();
  std::vector<json> records;
  if (target.ok()) {
    kube::PodLogOptions options;
    options.container = target->container;
    options.timestamps = true;  // each line's time, read by the tokenizer as its first token
    options.limit_bytes = kMaxMetricLogBytes;
    TRAINCTL_ASSIGN_OR_RETURN(std::string text,
                              client_->PodLog(namespace_name_, target->pod, options));
    records = metrics::RecordsFromOutput(text, clock_.Now());
  }
  return metrics::SeriesFromRecords(records, replica, false);
}

}  // namespace trainctl::jobs
