#include "cli/cluster_commands.h"

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "api/job.h"
#include "cli/cluster_view.h"
#include "cli/exit_status.h"
#include "cli/format.h"
#include "cli/job_query.h"
#include "kube/client.h"
#include "kube/config_loader.h"
#include "kube/connect.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

int Fail(const std::string& message, int code) {
  std::cerr << "error: " << message << "\n";
  return code;
}

const Clock& TheClock() {
  static RealClock clock;
  return clock;
}

struct Cluster {
  std::unique_ptr<kube::Client> client;
  std::string namespace_;  // where single jobs are looked up
  std::string server;
};

StatusOr<Cluster> Open(const GlobalOptions& g) {
  StatusOr<kube::RestConfig> config = kube::LoadClientConfig(g.kubeconfig);
  if (!config.ok())
    return Status(config.status().code(),
                  "cannot load the cluster configuration: " + config.status().message());
  StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(*config, &TheClock());
  if (!client.ok())
    return Status(client.status().code(),
                  "cannot connect to " + config->server + ": " + client.status().message());
  Cluster c;
  c.client = std::move(*client);
  c.server = config->server;
  c.namespace_ = !g.namespace_.empty()             ? g.namespace_
                 : !config->namespace_name.empty() ? config->namespace_name
                                                   : "default";
  return c;
}

kube::Resource JobResource(api::Kind kind) {
  return {"kubeflow.org", "v1", api::Info(kind).plural};
}

std::vector<api::Kind> KindsOf(const JobRef& ref) {
  if (ref.kind) return {*ref.kind};
  std::vector<api::Kind> all;
  for (const api::KindInfo& k : api::AllKinds()) all.push_back(k.kind);
  return all;
}

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string NameOf(const json& job) { return Str(job.value("metadata", json::object()), "name"); }
std::string UidOf(const json& job) { return Str(job.value("metadata", json::object()), "uid"); }

// One job by reference: a GET per candidate kind (a kind whose CRD is not installed answers
// NotFound like a missing job). NotFound when none has it; kInvalid when several kinds do.
StatusOr<json> FindJob(Cluster& c, const JobRef& ref) {
  std::vector<json> found;
  for (api::Kind kind : KindsOf(ref)) {
    StatusOr<json> job = c.client->Get(JobResource(kind), c.namespace_, ref.name);
    if (job.ok()) {
      found.push_back(std::move(*job));
    } else if (job.status().code() != StatusCode::kNotFound) {
      return job.status();
    }
  }
  if (found.empty())
    return NotFoundError((ref.kind ? api::ToLower(api::Info(*ref.kind).name) + " " : "job ") +
                         "\"" + ref.name + "\" not found in namespace " + c.namespace_ + " on " +
                         c.server);
  if (found.size() > 1)
    return InvalidError("\"" + ref.name + "\" names several jobs; give the kind, e.g. " +
                        api::ToLower(Str(found[0], "kind")) + " " + ref.name);
  return found[0];
}

std::optional<api::Kind> KindOf(const json& job) { return api::KindFromName(Str(job, "kind")); }

// Parses `[KIND] NAME`, connects and finds the job: -1 on success, else the exit status of the
// error it printed. The job's kind is known to be one of ours.
int OpenJob(const GlobalOptions& global, const std::vector<std::string>& args, Cluster* cluster,
            json* job) {
  StatusOr<JobRef> ref = ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<Cluster> c = Open(global);
  if (!c.ok()) return Fail(c.status().message(), 1);
  StatusOr<json> found = FindJob(*c, *ref);
  if (!found.ok()) return Fail(found.status().message(), ExitFor(found.status()));
  if (!KindOf(*found))
    return Fail("the server returned a job of unknown kind \"" + Str(*found, "kind") + "\"", 1);
  *cluster = std::move(*c);
  *job = std::move(*found);
  return -1;
}

}  // namespace

static int ClusterGet(const GlobalOptions& global, const std::vector<std::string>& args,
                      const std::string& output) {
  if (!output.empty() && output != "json" && output != "name" && output != "wide")
    return Fail("unsupported output format \"" + output + "\" (json, name, wide)", 2);
  StatusOr<JobRef> ref = ParseGetArgs(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<Cluster> c = Open(global);
  if (!c.ok()) return Fail(c.status().message(), 1);
  std::string ns = global.all_namespaces ? "" : c->namespace_;
  std::vector<json> jobs;
  for (api::Kind kind : KindsOf(*ref)) {
    StatusOr<json> list = c->client->List(JobResource(kind), ns, {});
    if (!list.ok()) {
      if (list.status().code() == StatusCode::kNotFound) {
        if (!ref->kind) continue;  // that kind's CRD is not installed
        return Fail("the server " + c->server + " does not serve " + ResourceName(kind) +
                        " (is its CRD installed? kubectl apply --server-side -k manifests/)",
                    1);
      }
      return Fail(list.status().message(), 1);
    }
    if (!list->contains("items") || !(*list)["items"].is_array()) continue;
    for (json& item : (*list)["items"]) {
      if (!ref->name.empty() && NameOf(item) != ref->name) continue;
      // Items of a list carry no kind; the SDK and `-o json` expect it.
      item["apiVersion"] = "kubeflow.org/v1";
      item["kind"] = api::Info(kind).name;
      jobs.push_back(std::move(item));
    }
  }
  if (!ref->name.empty() && jobs.empty())
    return Fail(
        "job \"" + ref->name + "\" not found in " +
            (global.all_namespaces ? std::string("any namespace") : "namespace " + c->namespace_) +
            " on " + c->server,
        1);
  if (output == "json") {
    if (!ref->name.empty() && jobs.size() == 1)
      std::cout << jobs[0].dump(2) << "\n";
    else
      std::cout << json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", jobs}}).dump(2) << "\n";
    return 0;
  }
  if (output == "name") {
    for (const json& j : jobs) std::cout << ResourceName(*KindOf(j)) << "/" << NameOf(j) << "\n";
    return 0;
  }
  if (jobs.empty()) {
    std::cerr << "No resources found"
              << (global.all_namespaces ? "" : " in " + c->namespace_ + " namespace") << ".\n";
    return 0;
  }
  std::cout << FormatJobTable(jobs, !ref->kind, global.all_namespaces, TheClock().Now(),
                              output == "wide");
  return 0;
}

static int ClusterDescribe(const GlobalOptions& global, const std::vector<std::string>& args,
                           bool as_json) {
  Cluster cluster;
  json found;
  if (int code = OpenJob(global, args, &cluster, &found); code >= 0) return code;
  Cluster* c = &cluster;
  json* job = &found;
  kube::ListOptions pods_of;
  pods_of.label_selector = std::string(api::kLabelJobName) + "=" + NameOf(*job);
  StatusOr<json> pods = c->client->List(kube::kPods, c->namespace_, pods_of);
  if (!pods.ok()) std::cerr << "warning: " << pods.status().message() << "\n";
  kube::ListOptions events_of;
  events_of.field_selector = "involvedObject.uid=" + UidOf(*job);
  StatusOr<json> events = c->client->List(kube::kEvents, c->namespace_, events_of);
  if (!events.ok()) std::cerr << "warning: " << events.status().message() << "\n";
  json replicas = pods.ok() ? ReplicaRowsFromPods(*pods, UidOf(*job)) : json::array();
  std::vector<json> event_rows = events.ok() ? EventRowsFromApi(*events) : std::vector<json>{};
  if (as_json) {
    std::cout << json({{"job", *job},
                       {"replicas", replicas},
                       {"events", event_rows},
                       {"why", JobWhy(*job)}})
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << FormatDescribe(*job, replicas, event_rows, TheClock().Now());
  std::cout << "Pods:               kubectl -n " << c->namespace_ << " get pods -l "
            << pods_of.label_selector << "\n";
  return 0;
}

namespace {

// Prints complete lines of a stream with a "[worker-0] " prefix; thread-safe.
class LinePrinter {
 public:
  void Feed(const std::string& prefix, std::string_view data, std::string* pending) {
    pending->append(data);
    size_t start = 0, nl;
    std::lock_guard<std::mutex> lock(mu_);
    while ((nl = pending->find('\n', start)) != std::string::npos) {
      std::cout << prefix << std::string_view(*pending).substr(start, nl - start) << "\n";
      start = nl + 1;
    }
    pending->erase(0, start);
    std::cout.flush();
  }
  void Flush(const std::string& prefix, std::string* pending) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending->empty()) std::cout << prefix << *pending << "\n";
    pending->clear();
    std::cout.flush();
  }

 private:
  std::mutex mu_;
};

struct Follow {
  std::shared_ptr<kube::Stream> stream;
  int restarts = 0;  // the container instance being read
  std::atomic<bool> done{false};
  std::atomic<bool> failed{false};
  std::string pending;  // a partial line, touched only by the transport's thread
};

int PrintLogsOnce(Cluster& c, const std::vector<LogTarget>& targets, bool prefixed) {
  int failures = 0;
  LinePrinter printer;
  for (const LogTarget& t : targets) {
    std::string prefix = prefixed ? "[" + t.short_name + "] " : "";
    if (!t.started) {
      std::cerr << prefix << "no log yet: " << t.pod << " is " << t.state << "\n";
      continue;
    }
    kube::PodLogOptions options;
    options.container = t.container;
    StatusOr<std::string> text = c.client->PodLog(c.namespace_, t.pod, options);
    if (!text.ok()) {
      std::cerr << "warning: " << text.status().message() << "\n";
      ++failures;
      continue;
    }
    std::string pending;
    printer.Feed(prefix, *text, &pending);
    printer.Flush(prefix, &pending);
  }
  return failures == 0 ? 0 : 1;
}

// Streams every replica's log until the job has finished and every stream has ended; a
// restarted container is read again from its new start.
int FollowLogs(Cluster& c, const json& first, const std::string& replica, bool prefixed) {
  api::Kind kind = *KindOf(first);
  std::string name = NameOf(first), uid = UidOf(first);
  // Callbacks may outlive this frame if a cancelled stream is slow to end: they share
  // ownership of what they touch.
  auto printer = std::make_shared<LinePrinter>();
  std::map<std::string, std::shared_ptr<Follow>> follows;
  kube::ListOptions pods_of;
  pods_of.label_selector = std::string(api::kLabelJobName) + "=" + name;
  // The kubelet ends a stream when its container stops; some nodes (kwok) never do, so once
  // the job has finished, streams still open after a grace period are cancelled.
  const Duration kGrace(2000);
  std::optional<Time> finished_at;
  Time last_opened{};
  int failed_lists = 0;
  for (;;) {
    StatusOr<json> pods = c.client->List(kube::kPods, c.namespace_, pods_of);
    if (pods.ok()) {
      for (const LogTarget& t :
           LogTargets(*pods, name, uid, api::Info(kind).default_container, replica)) {
        std::shared_ptr<Follow>& f = follows[t.pod];
        bool again = f && f->done && (f->failed || t.restarts > f->restarts);
        if (!t.started || (f && !again)) continue;
        std::string prefix = prefixed ? "[" + t.short_name + "] " : "";
        auto next = std::make_shared<Follow>();
        next->restarts = t.restarts;
        kube::PodLogOptions options;
        options.container = t.container;
        std::weak_ptr<Follow> weak = next;
        next->stream = c.client->StreamPodLog(
            c.namespace_, t.pod, options,
            [printer, weak, prefix](std::string_view data) {
              std::shared_ptr<Follow> self = weak.lock();
              if (self) printer->Feed(prefix, data, &self->pending);
              return self != nullptr;
            },
            [printer, weak, prefix](Status st) {
              std::shared_ptr<Follow> self = weak.lock();
              if (!self) return;
              printer->Flush(prefix, &self->pending);
              self->failed = !st.ok() && st.code() != StatusCode::kCancelled;
              self->done = true;
            });
        f = std::move(next);
        last_opened = TheClock().Now();
      }
    }
    failed_lists = pods.ok() ? 0 : failed_lists + 1;
    if (failed_lists > 30) return Fail(pods.status().message(), 1);
    StatusOr<json> job = c.client->Get(JobResource(kind), c.namespace_, name);
    if (!job.ok() && job.status().code() == StatusCode::kNotFound) {
      std::cerr << "job " << name << " was deleted\n";
      break;
    }
    if (job.ok() && UidOf(*job) != uid) break;  // replaced by a new job of the same name
    Time now = TheClock().Now();
    if (!finished_at && job.ok() && EvaluateWait(*job, "Succeeded").state != WaitState::kPending)
      finished_at = now;
    if (finished_at) {
      bool all_done = true;
      for (const auto& [pod, f] : follows) all_done = all_done && (!f || f->done);
      if (all_done || (now - *finished_at >= kGrace && now - last_opened >= kGrace)) break;
    }
    TheClock().SleepFor(Duration(finished_at ? 250 : 1000));
  }
  for (auto& [pod, f] : follows)
    if (f && !f->done) f->stream->Cancel();
  for (int i = 0; i < 50; ++i) {
    bool all_done = true;
    for (const auto& [pod, f] : follows) all_done = all_done && (!f || f->done);
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace

static int ClusterLogs(const GlobalOptions& global, const std::vector<std::string>& args,
                       const std::string& replica, bool follow) {
  Cluster cluster;
  json found;
  if (int code = OpenJob(global, args, &cluster, &found); code >= 0) return code;
  Cluster* c = &cluster;
  json* job = &found;
  std::optional<api::Kind> kind = KindOf(*job);
  bool prefixed = replica.empty();
  if (follow) return FollowLogs(*c, *job, replica, prefixed);
  kube::ListOptions pods_of;
  pods_of.label_selector = std::string(api::kLabelJobName) + "=" + NameOf(*job);
  StatusOr<json> pods = c->client->List(kube::kPods, c->namespace_, pods_of);
  if (!pods.ok()) return Fail(pods.status().message(), 1);
  std::vector<LogTarget> targets =
      LogTargets(*pods, NameOf(*job), UidOf(*job), api::Info(*kind).default_container, replica);
  if (targets.empty()) {
    if (!replica.empty())
      return Fail("no replica \"" + replica + "\" in " + NameOf(*job) + " (its pods: kubectl -n " +
                      c->namespace_ + " get pods -l " + pods_of.label_selector + ")",
                  1);
    std::cerr << NameOf(*job) << " has no pods (yet)\n";
    return 0;
  }
  return PrintLogsOnce(*c, targets, prefixed);
}

static int ClusterDelete(const GlobalOptions& global, const std::vector<std::string>& args,
                         bool delete_workspace) {
  Cluster cluster;
  json found;
  if (int code = OpenJob(global, args, &cluster, &found); code >= 0) return code;
  Cluster* c = &cluster;
  json* job = &found;
  api::Kind kind = *KindOf(*job);
  kube::DeleteOptions options;
  options.propagation_policy = "Background";  // as kubectl: the garbage collector removes pods
  options.precondition_uid = UidOf(*job);
  Status st = c->client->Delete(JobResource(kind), c->namespace_, NameOf(*job), options);
  if (!st.ok()) return Fail(st.message(), 1);
  std::cout << ResourceName(kind) << " \"" << NameOf(*job) << "\" deleted\n";
  if (!delete_workspace) return 0;
  StatusOr<api::Job> decoded = api::DecodeJob(*job);
  if (!decoded.ok()) return Fail("--delete-workspace: " + decoded.status().message(), 1);
  for (const api::ClaimRef& claim : api::JobClaims(*decoded)) {
    Status gone = c->client->Delete(kube::kPersistentVolumeClaims, c->namespace_, claim.claim);
    if (!gone.ok() && gone.code() != StatusCode::kNotFound)
      return Fail("persistentvolumeclaim \"" + claim.claim + "\": " + gone.message(), 1);
    std::cout << "persistentvolumeclaim \"" << claim.claim << "\" "
              << (gone.ok() ? "deleted" : "already gone") << "\n";
  }
  return 0;
}

static int ClusterWait(const GlobalOptions& global, const std::vector<std::string>& args,
                       const std::string& for_condition, const std::string& timeout) {
  StatusOr<JobRef> ref = ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<std::string> condition = ParseWaitCondition(for_condition);
  if (!condition.ok()) return Fail(condition.status().message(), 2);
  std::optional<long long> limit = ParseDurationMs(timeout);
  if (!limit) return Fail("--timeout: cannot parse \"" + timeout + "\" (e.g. 30s, 10m)", 2);
  StatusOr<Cluster> c = Open(global);
  if (!c.ok()) return Fail(c.status().message(), 1);
  Time deadline = TheClock().Now() + Duration(*limit);
  Status last = Status::Ok();
  json last_seen;  // the job as last read, to say why on a timeout
  for (;;) {
    StatusOr<json> job = FindJob(*c, *ref);
    if (job.ok()) {
      last_seen = *job;
      WaitOutcome outcome = EvaluateWait(*job, *condition);
      std::string name = NameOf(*job);
      if (outcome.state == WaitState::kMet) {
        std::cout << ResourceName(*KindOf(*job)) << "/" << name << " condition met\n";
        return 0;
      }
      if (outcome.state == WaitState::kFailed) return Fail(name + " failed: " + outcome.message, 1);
      if (outcome.state == WaitState::kFinishedWithout)
        return Fail(name + " finished without condition " + *condition, 1);
    } else if (job.status().code() == StatusCode::kInvalid) {
      return Fail(job.status().message(), 2);
    } else {
      last = job.status();  // not created yet, or the server is briefly unreachable
    }
    if (TheClock().Now() >= deadline)
      return Fail(FormatWaitTimeout(last_seen, *condition, timeout) +
                      (last.ok() ? std::string() : " (last read: " + last.message() + ")"),
                  1);
    TheClock().SleepFor(Duration(500));
  }
}

int ClusterBackend::Get(const std::vector<std::string>& args, const std::string& output) {
  return ClusterGet(global_, args, output);
}

int ClusterBackend::Describe(const std::vector<std::string>& args, const std::string& output) {
  if (!output.empty() && output != "json")
    return Fail("unsupported output format \"" + output + "\" (json)", 2);
  return ClusterDescribe(global_, args, output == "json");
}

int ClusterBackend::Logs(const std::vector<std::string>& args, const std::string& replica,
                         bool follow) {
  return ClusterLogs(global_, args, replica, follow);
}

int ClusterBackend::Patch(const std::vector<std::string>& args, const std::string& patch) {
  return Fail("patch is for local jobs; on a cluster use kubectl patch", 2);
}

int ClusterBackend::Delete(const std::vector<std::string>& args, bool delete_workspace) {
  return ClusterDelete(global_, args, delete_workspace);
}

int ClusterBackend::Wait(const std::vector<std::string>& args, const std::string& for_condition,
                         const std::string& timeout) {
  return ClusterWait(global_, args, for_condition, timeout);
}

}  // namespace trainctl::cli
