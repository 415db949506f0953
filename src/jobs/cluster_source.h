// ClusterJobSource: the data layer (job_source.h) over a Kubernetes API server. It reads
// kubeflow.org/v1 jobs, their pods (replica rows, logs through pods/log) and their events with
// kube::Client, using the user's kubeconfig (or the in-cluster config). The first failure is
// the one the operator wrote in the job's condition (the engine's rule), with the last lines
// of that pod's log.
//
// Does network I/O; the clock is injected.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "jobs/cluster_view.h"
#include "jobs/job_source.h"
#include "kube/client.h"

namespace trainctl::jobs {

struct ClusterScope {
  std::string kubeconfig;  // empty: $KUBECONFIG, ~/.kube/config or in-cluster
  std::string namespace_;  // empty: the context's namespace, else "default"
  bool all_namespaces = false;
};

// The end of one pod's log (its last `lines` lines), and the events of `job` (by its uid) as
// describe's rows, oldest first: for readers that hold only a client (thread-safe).
StatusOr<std::string> PodLogEnd(kube::Client& client, const std::string& ns,
                                const LogTarget& target, long long lines);
StatusOr<std::vector<nlohmann::json>> JobEvents(kube::Client& client, const std::string& ns,
                                                const nlohmann::json& job);

class ClusterJobSource final : public JobSource {
 public:
  // Loads the configuration and connects; the error names what failed and the server.
  static StatusOr<std::unique_ptr<ClusterJobSource>> Open(const ClusterScope& scope,
                                                          const Clock& clock);
  // Over a client already made (tests: a kube::FakeApi); `server` names it in messages.
  ClusterJobSource(std::unique_ptr<kube::Client> client, std::string ns, bool all,
                   std::string server, const Clock& clock)
      : client_(std::move(client)),
        namespace_name_(std::move(ns)),
        all_namespaces_(all),
        server_(std::move(server)),
        clock_(clock) {}

  std::string name() const override { return "kubernetes"; }
  std::string Where() const override;
  std::string Namespace() const override { return all_namespaces_ ? "" : namespace_name_; }
  Duration PollInterval() const override { return Duration(500); }
  StatusOr<std::vector<nlohmann::json>> List(const JobRef& filter, const NoteSink& notes) override;
  StatusOr<nlohmann::json> Get(const JobRef& ref) override;
  StatusOr<JobDetail> Describe(const JobRef& ref) override;
  Status Logs(const nlohmann::json& job, const LogRequest& request, const LogSink& lines,
              const NoteSink& notes) override;
  StatusOr<nlohmann::json> Metrics(const nlohmann::json& job, const std::string& replica) override;
  StatusOr<LogChunk> ReadLog(const nlohmann::json& job, const std::string& replica, size_t from,
                             size_t max_bytes) override;

  // The end of replica `replica`'s log (its last `lines` lines); kNotFound when it has none.
  StatusOr<std::string> LogEnd(const nlohmann::json& job, const std::string& replica,
                               long long lines);
  // The end of one pod's log (its last `lines` lines), in the current namespace.
  StatusOr<std::string> LogEndOf(const LogTarget& target, long long lines);
  // The events of `job` (involvedObject.uid) as describe's rows, oldest first.
  StatusOr<std::vector<nlohmann::json>> Events(const nlohmann::json& job);

  kube::Client& client() { return *client_; }
  // Single jobs (Get, Describe, Logs, ReadLog, Metrics) are looked up in `ns` from now on;
  // "" keeps the current namespace. For readers of several namespaces (the dashboard).
  void UseNamespace(const std::string& ns) {
    if (!ns.empty()) namespace_name_ = ns;
  }
  const std::string& namespace_() const { return namespace_name_; }
  const std::string& server() const { return server_; }

 private:
  // The pod and container whose log is replica `replica`'s; kNotFound when it has not run.
  StatusOr<LogTarget> StartedTarget(const nlohmann::json& job, const std::string& replica);
  Status Follow(const nlohmann::json& job, const LogRequest& request, const LogSink& lines,
                const NoteSink& notes);

  std::unique_ptr<kube::Client> client_;
  std::string namespace_name_;  // where single jobs are looked up
  bool all_namespaces_;
  std::string server_;
  const Clock& clock_;
};

// The kubeflow.org/v1 resource of a kind.
kube::Resource JobResource(api::Kind kind);

}  // namespace trainctl::jobs
