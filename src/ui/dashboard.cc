#include "ui/dashboard.h"

#include "api/json_fields.h"
#include "jobs/history_capture.h"
#include "jobs/local_source.h"
#include "jobs/local_sweep.h"
#include "jobs/why.h"
#include "ui/assets.h"
#include "ui/login.h"
#include "ui/sse.h"
#include "ui/views.h"

namespace trainctl::ui {

using nlohmann::json;
using server::Request;
using server::Response;

namespace {

constexpr size_t kLogWindowBytes = 256u << 10;

// The headers every answer carries: nothing runs but our own files, nothing frames the page.
void Harden(Response* r) {
  r->headers.emplace_back("Content-Security-Policy",
                          "default-src 'self'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                          "base-uri 'none'; frame-ancestors 'none'");
  r->headers.emplace_back("X-Content-Type-Options", "nosniff");
  r->headers.emplace_back("Referrer-Policy", "no-referrer");
  r->headers.emplace_back("X-Frame-Options", "DENY");
}

Response Error(const Status& st) {
  int code = st.code() == StatusCode::kNotFound    ? 404
             : st.code() == StatusCode::kInvalid   ? 400
             : st.code() == StatusCode::kForbidden ? 403
                                                   : 502;
  return Response::Json(code, {{"error", st.message()}});
}

size_t ParseOffset(const std::string& text) {
  size_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || n > (size_t{1} << 50)) return 0;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

}  // namespace

const Asset* FindAsset(const std::string& path) {
  std::string want = path == "/" ? "/index.html" : path;
  for (const Asset& a : Assets())
    if (want == a.path) return &a;
  return nullptr;
}

Dashboard::Dashboard(DashboardConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock), sessions_(&clock) {}

Dashboard::~Dashboard() = default;

Status Dashboard::Open() {
  std::string history_path = config_.history_path;
  if (history_path.empty() && !config_.state_root.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(config_.state_root, ec);
    history_path = jobs::LocalHistoryPath(config_.state_root);
  }
  if (!history_path.empty()) {
    TRAINCTL_ASSIGN_OR_RETURN(history_, history::HistoryStore::Open(history_path));
  }
  if (config_.cluster && !cluster_) {
    TRAINCTL_ASSIGN_OR_RETURN(cluster_, jobs::ClusterJobSource::Open(*config_.cluster, clock_));
  }
  return Status::Ok();
}

void Dashboard::Register(server::Router& router) {
  auto guarded = [this](Handler h) { return [this, h](const Request& r) { return Guard(r, h); }; };
  if (config_.authorizer) {
    // In the cluster the page's files are anyone's (no data), so the sign-in form can show.
    router.HandlePrefix("GET", "/", [this](const Request& r) {
      Response response = Asset(r);
      Harden(&response);
      return response;
    });
    router.Handle("POST", "/api/v1/login", [this](const Request& r) { return Login(r); });
    router.Handle("POST", "/api/v1/logout", [this](const Request& r) { return Logout(r); });
  } else {
    router.HandlePrefix("GET", "/",
                        guarded([this](const Request& r, const Viewer&) { return Asset(r); }));
  }
  router.Handle("GET", "/api/v1/whoami", guarded([](const Request&, const Viewer& v) {
                  json me = {{"user", v.user ? json(v.user->name) : json(nullptr)},
                             {"session", v.session.has_value()}};
                  if (v.session) me["csrf"] = v.session->csrf;
                  Response r = Response::Json(200, me);
                  r.headers.emplace_back("Cache-Control", "no-store");
                  return r;
                }));
  router.Handle("GET", "/api/v1/jobs", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  return Response::Json(200, {{"items", ListLocked(r.Query("q"), v)}});
                }));
  router.Handle("GET", "/api/v1/job", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  StatusOr<json> page = PageLocked(r, v);
                  return page.ok() ? Response::Json(200, *page) : Error(page.status());
                }));
  router.Handle("GET", "/api/v1/logs", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  jobs::JobSource* source = nullptr;
                  StatusOr<json> job = LiveJobLocked(r, v, /*logs=*/true, &source);
                  if (!job.ok()) return Error(job.status());
                  StatusOr<jobs::LogChunk> chunk = source->ReadLog(
                      *job, r.Query("replica"), ParseOffset(r.Query("from")), kLogWindowBytes);
                  if (!chunk.ok()) return Error(chunk.status());
                  return Response::Json(
                      200, {{"text", chunk->text}, {"next", chunk->next}, {"size", chunk->size}});
                }));
  router.Handle("GET", "/api/v1/metrics", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  jobs::JobSource* source = nullptr;
                  StatusOr<json> job = LiveJobLocked(r, v, /*logs=*/true, &source);
                  if (!job.ok()) return Error(job.status());
                  StatusOr<json> series = source->Metrics(*job, r.Query("replica"));
                  return series.ok() ? Response::Json(200, WithCharts(std::move(*series)))
                                     : Error(series.status());
                }));
  // The history's read API, for `trainctl history` on a cluster (jobs/history_reader.h).
  router.Handle("GET", "/api/v1/history", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  StatusOr<json> page = HistoryListLocked(r, v);
                  return page.ok() ? Response::Json(200, *page) : Error(page.status());
                }));
  router.Handle("GET", "/api/v1/history/record", guarded([this](const Request& r, const Viewer& v) {
                  std::lock_guard<std::mutex> lock(data_mu_);
                  StatusOr<json> record = RecordLocked(r.Query("uid"), v);
                  return record.ok() ? Response::Json(200, *record) : Error(record.status());
                }));
  router.Handle("GET", "/api/v1/stream", guarded([this](const Request& r, const Viewer& v) {
                  Response response;
                  response.content_type = "text/event-stream; charset=utf-8";
                  response.stream = [this, r, v](server::StreamSink& sink) { Stream(r, v, sink); };
                  return response;
                }));
}

Response Dashboard::Guard(const Request& request, const Handler& handler) {
  Response response;
  Viewer viewer;
  if (config_.authorizer) {
    // In the cluster: the Origin check, then who the request names.
    viewer.session = sessions_.Find(CookieValue(request.Header("cookie"), kSessionCookie));
    StatusOr<UserInfo> user = Status(StatusCode::kForbidden, "");
    if (!SameOrigin(request)) {
      response =
          Response::Text(403, "requests from " + request.Header("origin") + " are refused\n");
    } else if (user = config_.authorizer->Authenticate(
                   request, viewer.session ? viewer.session->token : std::string());
               !user.ok()) {
      if (user.status().code() == StatusCode::kUnauthorized) {
        // The page shows its sign-in form on {"login": true}.
        response = Response::Json(401, {{"error", user.status().message()}, {"login", true}});
        if (viewer.session) {
          sessions_.Remove(viewer.session->id);  // its token was revoked or has expired
          response.headers.emplace_back("Set-Cookie", SessionCookie(""));
        }
      } else {
        response = Response::Text(502, user.status().message() + "\n");
      }
    } else {
      viewer.user = *user;
    }
    if (viewer.user) response = handler(request, viewer);
  } else {
    std::optional<Response> refused;
    {
      std::lock_guard<std::mutex> lock(auth_mu_);
      refused = CheckRequest(request, config_.auth);
    }
    response = refused ? std::move(*refused) : handler(request, viewer);
  }
  Harden(&response);
  return response;
}

Response Dashboard::Login(const Request& request) {
  Response response;
  StatusOr<std::string> token = LoginToken(request);
  StatusOr<UserInfo> user =
      token.ok() ? config_.authorizer->Review(*token) : StatusOr<UserInfo>(token.status());
  StatusOr<Session> session =
      user.ok() ? sessions_.Create(*token, user->name) : StatusOr<Session>(user.status());
  if (!session.ok()) {
    response = Response::Json(HttpStatusOf(session.status()),
                              {{"error", session.status().message()}, {"login", true}});
  } else {
    response = Response::Json(200, {{"user", session->user}, {"csrf", session->csrf}});
    response.headers.emplace_back("Set-Cookie", SessionCookie(session->id));
  }
  response.headers.emplace_back("Cache-Control", "no-store");
  Harden(&response);
  return response;
}

Response Dashboard::Logout(const Request& request) {
  std::optional<Session> session =
      sessions_.Find(CookieValue(request.Header("cookie"), kSessionCookie));
  Response response;
  if (!SameOrigin(request) || !session || !SameSecret(request.Header(kCsrfHeader), session->csrf)) {
    response = Response::Json(403, {{"error",
                                     "sign-out needs this page's session and its "
                                     "X-CSRF-Token"}});
  } else {
    sessions_.Remove(session->id);
    response = Response::Json(200, {{"signedOut", true}});
    response.headers.emplace_back("Set-Cookie", SessionCookie(""));
  }
  response.headers.emplace_back("Cache-Control", "no-store");
  Harden(&response);
  return response;
}

bool Dashboard::May(const Viewer& viewer, const std::string& verb, const std::string& kind,
                    const std::string& ns, bool pods_log) {
  if (!config_.authorizer || !viewer.user) return true;  // the local dashboard: its owner
  if (pods_log) return config_.authorizer->Allowed(*viewer.user, {"get", "", "pods", "log", ns});
  std::optional<api::Kind> k = api::KindFromName(kind);
  if (!k) return false;
  return config_.authorizer->Allowed(  // the kind's own group: a TrainJob's is trainer.kubeflow.org
      *viewer.user, {verb, jobs::JobResource(*k).group, api::Info(*k).plural, "", ns});
}

Response Dashboard::Asset(const Request& request) {
  const ui::Asset* asset = FindAsset(request.path);
  if (!asset) return Response::Text(404, "404 page not found\n");
  Response r;
  r.content_type = asset->content_type;
  r.headers.emplace_back("ETag", asset->etag);
  r.headers.emplace_back("Cache-Control", "no-cache");
  if (request.Header("if-none-match") == asset->etag) {
    r.status = 304;
    return r;
  }
  r.body.assign(reinterpret_cast<const char*>(asset->data), asset->size);
  return r;
}

json Dashboard::ListLocked(const std::string& q, const Viewer& viewer) {
  std::vector<json> live;
  auto quiet = [](const std::string&) {};
  if (!config_.state_root.empty()) {
    jobs::LocalJobSource local(config_.state_root, std::nullopt, clock_);
    if (StatusOr<std::vector<json>> jobs = local.List({}, quiet); jobs.ok())
      for (const json& job : *jobs) live.push_back(LiveRow(job, "local"));
  }
  if (cluster_)
    if (StatusOr<std::vector<json>> jobs = cluster_->List({}, quiet); jobs.ok())
      for (const json& job : *jobs) {
        json row = LiveRow(job, "kubernetes");
        if (May(viewer, "list", api::StringAt(row, "kind"), api::StringAt(row, "namespace")))
          live.push_back(std::move(row));
      }
  std::vector<history::Row> past;
  if (history_ && (q.empty() || q.size() >= 3)) {
    history::Query query;
    query.text = q;
    query.limit = config_.history_rows;
    if (StatusOr<std::vector<history::Row>> rows = history_->List(query); rows.ok())
      for (history::Row& row : *rows)
        if (row.source == "local" || May(viewer, "list", row.kind, row.namespace_))
          past.push_back(std::move(row));
  }
  return MergeRows(std::move(live), past, q);
}

jobs::SweepReport Dashboard::Sweep() {
  if (config_.state_root.empty()) return {};
  std::lock_guard<std::mutex> lock(data_mu_);
  return jobs::SweepLocalJobs(
      config_.state_root, std::nullopt, [this]() { return history_.get(); }, clock_);
}

jobs::JobSource* Dashboard::SourceLocked(const std::string& name, const std::string& ns) {
  if (name == "kubernetes" && cluster_) {
    cluster_->UseNamespace(ns);
    return cluster_.get();
  }
  if (name != "local") return nullptr;
  local_ = std::make_unique<jobs::LocalJobSource>(config_.state_root, ns, clock_);
  return local_.get();
}

StatusOr<json> Dashboard::LiveJobLocked(const Request& request, const Viewer& viewer, bool logs,
                                        jobs::JobSource** source) {
  *source = SourceLocked(request.Query("source"), request.Query("ns"));
  if (!*source)
    return InvalidError("source: expected local or kubernetes (one this dashboard reads)");
  std::optional<api::Kind> kind = api::KindFromName(request.Query("kind"));
  if (!kind) return InvalidError("kind: expected a kubeflow.org/v1 kind");
  if (!May(viewer, "get", request.Query("kind"), request.Query("ns")) ||
      (logs && !May(viewer, "get", "", request.Query("ns"), /*pods_log=*/true)))
    return Status(StatusCode::kForbidden,
                  "you may not read this in namespace " + request.Query("ns"));
  return (*source)->Get({kind, request.Query("name")});
}

StatusOr<json> Dashboard::RecordLocked(const std::string& uid, const Viewer& viewer) {
  if (!history_) return NotFoundError("this dashboard keeps no history (the operator's --history)");
  TRAINCTL_ASSIGN_OR_RETURN(std::optional<json> record, history_->Get(uid));
  if (!record) return NotFoundError("no job with uid " + uid + " in the history");
  std::string ns = api::StringAt(*record, "namespace");
  // A record holds log lines: reading it needs what reading the job and its logs needs.
  if (api::StringAt(*record, "source") != "local" &&
      (!May(viewer, "get", api::StringAt(*record, "kind"), ns) ||
       !May(viewer, "get", "", ns, /*pods_log=*/true)))
    return Status(StatusCode::kForbidden, "you may not read this in namespace " + ns);
  return std::move(*record);
}

StatusOr<json> Dashboard::HistoryListLocked(const Request& request, const Viewer& viewer) {
  if (!history_) return NotFoundError("this dashboard keeps no history (the operator's --history)");
  history::Query query;
  if (!request.Query("ns").empty()) query.namespace_ = request.Query("ns");
  query.kind = request.Query("kind");
  query.name = request.Query("name");
  query.text = request.Query("q");
  if (!query.text.empty() && query.text.size() < 3)
    return InvalidError("q: give at least 3 characters");
  size_t limit = ParseOffset(request.Query("limit"));
  query.limit = std::min<size_t>(limit == 0 ? 50 : limit, 1000);
  query.offset = ParseOffset(request.Query("offset"));
  TRAINCTL_ASSIGN_OR_RETURN(std::vector<history::Row> rows, history_->List(query));
  json items = json::array();
  for (const history::Row& row : rows)
    if (row.source == "local" || May(viewer, "list", row.kind, row.namespace_))
      items.push_back(history::RowJson(row));
  // With rows left out, the total counts what this user may see of this page only.
  size_t total = items.size();
  if (items.size() == rows.size())
    if (StatusOr<size_t> all = history_->Count(query); all.ok()) total = *all;
  return json{{"items", std::move(items)}, {"total", total}};
}

StatusOr<json> Dashboard::PageLocked(const Request& request, const Viewer& viewer) {
  if (std::string uid = request.Query("uid"); !uid.empty()) {
    TRAINCTL_ASSIGN_OR_RETURN(json record, RecordLocked(uid, viewer));
    return HistoryPage(record);
  }
  jobs::JobSource* source = SourceLocked(request.Query("source"), request.Query("ns"));
  if (!source)
    return InvalidError("source: expected local or kubernetes (one this dashboard reads)");
  std::optional<api::Kind> kind = api::KindFromName(request.Query("kind"));
  if (!kind) return InvalidError("kind: expected a kubeflow.org/v1 kind");
  if (!May(viewer, "get", request.Query("kind"), request.Query("ns")))
    return Status(StatusCode::kForbidden,
                  "you may not read this in namespace " + request.Query("ns"));
  TRAINCTL_ASSIGN_OR_RETURN(jobs::JobDetail detail,
                            source->Describe({kind, request.Query("name")}));
  StatusOr<std::string> metrics_replica = jobs::MetricsReplica(detail.job);
  json page = LivePage(jobs::DetailDocument(detail, source->name()),
                       metrics_replica.ok() ? *metrics_replica : "");
  if (!May(viewer, "get", "", request.Query("ns"), /*pods_log=*/true)) {
    page["failure"] = nullptr;  // its last lines are log lines
    page["replicaNames"] = json::array();
  }
  return page;
}

void Dashboard::Stream(const Request& request, const Viewer& viewer, server::StreamSink& sink) {
  const std::string q = request.Query("q");
  const bool with_job = !request.Query("name").empty();
  const std::string replica = request.Query("replica");
  size_t offset = ParseOffset(request.Query("from"));
  if (std::string last = request.Header("last-event-id"); !last.empty()) offset = ParseOffset(last);
  std::string sent_list, sent_page, sent_metrics;
  MonoTime last_write = clock_.Monotonic(), last_metrics{}, last_auth = clock_.Monotonic();
  if (!sink.Write(SseRetry(2000))) return;
  for (;;) {
    // A stream ends with its user's sign-in: signed out, or the token revoked or expired.
    if (viewer.session && !sessions_.Find(viewer.session->id)) return;
    if (config_.authorizer && clock_.Monotonic() - last_auth >= std::chrono::seconds(60)) {
      last_auth = clock_.Monotonic();
      if (!config_.authorizer
               ->Authenticate(request, viewer.session ? viewer.session->token : std::string())
               .ok())
        return;
    }
    std::string out;
    {
      std::lock_guard<std::mutex> lock(data_mu_);
      std::string list = ListLocked(q, viewer).dump();
      if (list != sent_list) out += SseEvent("jobs", list);
      sent_list = std::move(list);
      if (with_job) {
        if (StatusOr<json> page = PageLocked(request, viewer); page.ok()) {
          std::string text = page->dump(-1, ' ', false, json::error_handler_t::replace);
          if (text != sent_page) out += SseEvent("job", text);
          sent_page = std::move(text);
        }
        jobs::JobSource* source = nullptr;
        StatusOr<json> job = LiveJobLocked(request, viewer, /*logs=*/true, &source);
        if (job.ok() && !replica.empty()) {
          StatusOr<jobs::LogChunk> chunk = source->ReadLog(*job, replica, offset, kLogWindowBytes);
          if (chunk.ok() && !chunk->text.empty()) {
            json data = {{"replica", replica},
                         {"text", chunk->text},
                         {"from", offset},
                         {"next", chunk->next}};
            out += SseEvent("log", data.dump(-1, ' ', false, json::error_handler_t::replace),
                            std::to_string(chunk->next));
            offset = chunk->next;
          }
        }
        if (job.ok() && clock_.Monotonic() - last_metrics >= std::chrono::seconds(2)) {
          last_metrics = clock_.Monotonic();
          if (StatusOr<json> series = source->Metrics(*job, replica); series.ok()) {
            std::string text = WithCharts(std::move(*series)).dump();
            if (text != sent_metrics) out += SseEvent("metrics", text);
            sent_metrics = std::move(text);
          }
        }
      }
    }
    if (out.empty() && clock_.Monotonic() - last_write >= std::chrono::seconds(15))
      out = SseComment("ping");
    if (!out.empty()) {
      if (!sink.Write(out)) return;
      last_write = clock_.Monotonic();
    }
    if (!sink.WaitFor(config_.tick)) return;
  }
}

}  // namespace trainctl::ui
