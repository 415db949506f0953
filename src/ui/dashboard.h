// The dashboard (`trainctl ui`, docs/dashboard.md): its pages and JSON API on a server::Router,
// over the job data layer (jobs/job_source.h) and the job history (history/store.h).
//
//   GET /                        the page (and its script, style and uPlot: ui/assets.h)
//   GET /api/v1/jobs?q=          list rows (ui/views.h): live jobs of every source, then
//                                finished jobs from the history; q searches both
//   GET /api/v1/job?source=&ns=&kind=&name=   a live job's page document
//   GET /api/v1/job?uid=         a finished job's page document, from the history
//   GET /api/v1/logs?source=&ns=&kind=&name=&replica=&from=   a piece of a live log
//   GET /api/v1/metrics?…        a live job's series
//   GET /api/v1/stream?q=&source=&ns=&kind=&name=&replica=&from=   server-sent events:
//       "jobs" (the list, when it changes), "job" (the page document, when it changes),
//       "log" ({replica, text, from, next}; id = next, so Last-Event-ID resumes), "metrics"
//       (when they change), and a comment every 15 s
//
// Every request passes ui/auth.h first. Every request and stream only reads: none writes a
// file, holds a lock on a job or records history. Sources: this machine's state folder, and a
// cluster through the user's kubeconfig when configured. Reads are serialised (one data lock); each
// stream polls every `tick`. The state folder's upkeep (a lost runner, the history, TTL
// removal) is Sweep(), which its owner calls on a timer (cli/ui_command.cc).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "history/store.h"
#include "jobs/cluster_source.h"
#include "jobs/local_sweep.h"
#include "server/http.h"
#include "ui/auth.h"
#include "ui/cluster_auth.h"
#include "ui/sessions.h"

namespace trainctl::ui {

struct DashboardConfig {
  std::string state_root;                     // this machine's jobs; "" none (the operator's)
  std::optional<jobs::ClusterScope> cluster;  // set: the cluster's jobs too
  std::string history_path;                   // "" <state_root>/history.db (none without one)
  // Set: the in-cluster dashboard. Each request names its user (a bearer token, a trusted
  // proxy's header, or a browser session made by signing in with a token: ui/sessions.h) and
  // sees only what the API server lets that user read (ui/cluster_auth.h); the token cookie and
  // the Host check are the local dashboard's and are not used. The page's own files are served
  // to anyone (they hold no data), so that the sign-in form can show.
  ClusterAuthorizer* authorizer = nullptr;
  AuthConfig auth;
  std::chrono::milliseconds tick{500};
  size_t history_rows = 200;  // the most history rows a list carries
};

class Dashboard {
 public:
  Dashboard(DashboardConfig config, const Clock& clock);
  ~Dashboard();

  // Opens the history and connects to the cluster (when configured). The error says which.
  Status Open();
  // The cluster's jobs through a client made elsewhere (the operator's), before Open().
  void UseClusterSource(std::unique_ptr<jobs::ClusterJobSource> source) {
    cluster_ = std::move(source);
  }
  void Register(server::Router& router);
  // The local sweep (jobs/local_sweep.h) of the state folder into the history, under the data
  // lock; nothing without a state folder (the operator's dashboard).
  jobs::SweepReport Sweep();
  // The Host values to accept, once the server knows its port; until then every request is
  // refused.
  void SetHosts(std::vector<std::string> hosts) {
    std::lock_guard<std::mutex> lock(auth_mu_);
    config_.auth.hosts = std::move(hosts);
  }

 private:
  // Who is asking: nobody to check (the local dashboard), or a user of the cluster.
  struct Viewer {
    std::optional<UserInfo> user;
    std::optional<Session> session;  // signed in through the login page
  };
  using Handler = std::function<server::Response(const server::Request&, const Viewer&)>;
  server::Response Guard(const server::Request& request, const Handler& handler);
  server::Response Asset(const server::Request& request);
  // The in-cluster sign-in and sign-out (ui/login.h, ui/sessions.h).
  server::Response Login(const server::Request& request);
  server::Response Logout(const server::Request& request);
  // May `viewer` do `verb` on jobs of `kind` (or, with `pods_log`, read pod logs) in `ns`?
  bool May(const Viewer& viewer, const std::string& verb, const std::string& kind,
           const std::string& ns, bool pods_log = false);
  // Under data_mu_.
  nlohmann::json ListLocked(const std::string& q, const Viewer& viewer);
  jobs::JobSource* SourceLocked(const std::string& name, const std::string& ns);
  StatusOr<nlohmann::json> LiveJobLocked(const server::Request& request, const Viewer& viewer,
                                         bool logs, jobs::JobSource** source);
  StatusOr<nlohmann::json> PageLocked(const server::Request& request, const Viewer& viewer);
  // A history record, when the viewer may read its job and its logs.
  StatusOr<nlohmann::json> RecordLocked(const std::string& uid, const Viewer& viewer);
  // GET /api/v1/history: {"items": [history::RowJson…], "total"}, the rows the viewer may list.
  StatusOr<nlohmann::json> HistoryListLocked(const server::Request& request, const Viewer& viewer);
  void Stream(const server::Request& request, const Viewer& viewer, server::StreamSink& sink);

  DashboardConfig config_;
  const Clock& clock_;
  std::mutex auth_mu_;  // guards config_.auth
  SessionStore sessions_;
  std::mutex data_mu_;
  std::unique_ptr<history::HistoryStore> history_;   // guarded by data_mu_
  std::unique_ptr<jobs::ClusterJobSource> cluster_;  // guarded by data_mu_
  std::unique_ptr<jobs::JobSource> local_;           // guarded by data_mu_
};

}  // namespace trainctl::ui
