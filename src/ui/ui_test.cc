// Unit tests of the dashboard: who may use it (Host, Origin, the token and its cookie), the
// server-sent events framing, the list and page views, the compiled-in files, and the API
// over a state folder through the router.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "kube/fake_api.h"
#include "local/state_store.h"
#include "ui/assets.h"
#include "ui/auth.h"
#include "ui/cluster_auth.h"
#include "ui/dashboard.h"
#include "ui/login.h"
#include "ui/sessions.h"
#include "ui/sse.h"
#include "ui/views.h"

namespace trainctl::ui {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using server::Request;
using server::Response;

Request Get(const std::string& target, const std::string& host = "127.0.0.1:8000") {
  Request r;
  r.method = "GET";
  r.target = target;
  EXPECT_TRUE(server::ParseTarget(target, &r.path, &r.query).ok());
  r.headers["host"] = host;
  return r;
}

std::string HeaderOf(const Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return "";
}

const AuthConfig kAuth = {"s3cret", HostsFor("127.0.0.1", 8000)};

TEST(AuthTest, TheTokenBecomesACookieOnce) {
  std::optional<Response> first = CheckRequest(Get("/?token=s3cret&x=1"), kAuth);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 303);
  EXPECT_EQ(HeaderOf(*first, "Location"), "/?x=1") << "the token leaves the address bar";
  EXPECT_EQ(HeaderOf(*first, "Set-Cookie"),
            "trainctl_ui=s3cret; HttpOnly; SameSite=Strict; Path=/");
  Request with_cookie = Get("/api/v1/jobs");
  with_cookie.headers["cookie"] = "other=1; trainctl_ui=s3cret";
  EXPECT_FALSE(CheckRequest(with_cookie, kAuth)) << "allowed";
  EXPECT_FALSE(CheckRequest(with_cookie, {"s3cret", HostsFor("127.0.0.1", 8000)}));
}

TEST(AuthTest, RefusedWithoutTokenFromAnotherOriginOrHost) {
  EXPECT_EQ(CheckRequest(Get("/api/v1/jobs"), kAuth)->status, 401);
  EXPECT_EQ(CheckRequest(Get("/?token=wrong"), kAuth)->status, 401);
  Request bad_cookie = Get("/");
  bad_cookie.headers["cookie"] = "trainctl_ui=s3cre";
  EXPECT_EQ(CheckRequest(bad_cookie, kAuth)->status, 401);
  Request evil = Get("/api/v1/jobs");
  evil.headers["cookie"] = "trainctl_ui=s3cret";
  evil.headers["origin"] = "http://evil.example";
  std::optional<Response> refused = CheckRequest(evil, kAuth);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(refused->body.find("http://evil.example"), std::string::npos);
  evil.headers["origin"] = "http://127.0.0.1:8000";
  EXPECT_FALSE(CheckRequest(evil, kAuth)) << "its own origin";
  // DNS rebinding: a name that resolves here is still not this server's.
  Request rebound = Get("/?token=s3cret", "attacker.example:8000");
  EXPECT_EQ(CheckRequest(rebound, kAuth)->status, 403);
  EXPECT_EQ(CheckRequest(Get("/?token=s3cret", "localhost:8000"), kAuth)->status, 303);
  EXPECT_EQ(CheckRequest(Get("/?token=s3cret", "127.0.0.1:8001"), kAuth)->status, 403);
}

TEST(AuthTest, TokensAreLongRandomAndComparedWhole) {
  std::string a = NewToken().value(), b = NewToken().value();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(SameSecret(a, a));
  EXPECT_FALSE(SameSecret(a, a.substr(0, 63)));
  EXPECT_FALSE(SameSecret(a, b));
  EXPECT_EQ(HostsFor("0.0.0.0", 80).size(), 3u);
  EXPECT_EQ(HostsFor("10.0.0.5", 80).back(), "10.0.0.5:80");
}

TEST(ClusterAuthTest, ReviewsAskAndAnswerAsTheApiServerDoes) {
  EXPECT_EQ(TokenReviewBody("t0k")["spec"]["token"], "t0k");
  StatusOr<UserInfo> user = ParseTokenReview({{"status",
                                               {{"authenticated", true},
                                                {"user",
                                                 {{"username", "system:serviceaccount:ml:viewer"},
                                                  {"groups", {"system:serviceaccounts"}}}}}}});
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->name, "system:serviceaccount:ml:viewer");
  EXPECT_EQ(user->groups, std::vector<std::string>{"system:serviceaccounts"});
  StatusOr<UserInfo> nobody =
      ParseTokenReview({{"status", {{"authenticated", false}, {"error", "token expired"}}}});
  ASSERT_FALSE(nobody.ok());
  EXPECT_EQ(nobody.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(nobody.status().message().find("token expired"), std::string::npos);
  EXPECT_FALSE(ParseTokenReview(json("garbage")).ok());
  EXPECT_FALSE(ParseTokenReview({{"status", {{"authenticated", true}}}}).ok()) << "no user";

  json sar = AccessReviewBody(*user, {"get", "", "pods", "log", "ml"});
  EXPECT_EQ(sar["spec"]["user"], "system:serviceaccount:ml:viewer");
  EXPECT_EQ(sar["spec"]["resourceAttributes"], json({{"verb", "get"},
                                                     {"group", ""},
                                                     {"resource", "pods"},
                                                     {"subresource", "log"},
                                                     {"namespace", "ml"}}));
  EXPECT_TRUE(ParseAccessReview({{"status", {{"allowed", true}}}}));
  EXPECT_FALSE(ParseAccessReview({{"status", {{"allowed", true}, {"denied", true}}}}));
  EXPECT_FALSE(ParseAccessReview({{"status", {{"allowed", false}}}}));
  EXPECT_FALSE(ParseAccessReview(json::array()));
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
}

TEST(LoginTest, ASignInIsJsonWithATokenFromThisOrigin) {
  Request r = Get("/api/v1/login");
  r.method = "POST";
  r.headers["content-type"] = "application/json; charset=utf-8";
  r.body = R"({"token": "  eyJ.abc \n"})";
  StatusOr<std::string> token = LoginToken(r);
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(*token, "eyJ.abc") << "pasted whitespace goes";
  r.headers["origin"] = "http://127.0.0.1:8000";
  EXPECT_TRUE(LoginToken(r).ok());
  r.headers["origin"] = "http://evil.example";
  EXPECT_EQ(LoginToken(r).status().code(), StatusCode::kForbidden);
  EXPECT_EQ(HttpStatusOf(LoginToken(r).status()), 403);
  r.headers.erase("origin");
  r.headers["content-type"] = "application/x-www-form-urlencoded";
  EXPECT_EQ(HttpStatusOf(LoginToken(r).status()), 400) << "a form post needs no preflight";
  r.headers["content-type"] = "application/json";
  for (const char* body : {"", "[]", R"({"token": 3})", R"({"token": "  "})", "{"}) {
    r.body = body;
    EXPECT_EQ(LoginToken(r).status().code(), StatusCode::kInvalid) << body;
  }
}

TEST(SessionTest, SessionsAreRandomBoundedAndExpire) {
  FakeClock clock(Time(std::chrono::seconds(1700000000)));
  SessionStore store(&clock);
  StatusOr<Session> a = store.Create("tok-a", "alice");
  StatusOr<Session> b = store.Create("tok-b", "bob");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id.size(), 64u);
  EXPECT_NE(a->id, b->id);
  EXPECT_NE(a->id, a->csrf);
  ASSERT_TRUE(store.Find(a->id));
  EXPECT_EQ(store.Find(a->id)->token, "tok-a");
  std::string guess = a->id;
  guess[63] = guess[63] == '0' ? '1' : '0';
  EXPECT_FALSE(store.Find(guess)) << "a near miss finds nothing";
  EXPECT_FALSE(store.Find(""));
  store.Remove(b->id);
  EXPECT_FALSE(store.Find(b->id));
  clock.Advance(std::chrono::duration_cast<Duration>(SessionStore::kLifetime));
  EXPECT_FALSE(store.Find(a->id)) << "eight hours at most";
  for (size_t i = 0; i < SessionStore::kMaxSessions + 5; ++i) {
    clock.Advance(Duration(1));
    ASSERT_TRUE(store.Create("t", "u").ok());
  }
  EXPECT_EQ(store.size(), SessionStore::kMaxSessions);
  EXPECT_EQ(SessionCookie("abc"), "trainctl_session=abc; Path=/; HttpOnly; SameSite=Strict");
  EXPECT_EQ(SessionCookie(""), "trainctl_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  EXPECT_EQ(CookieValue("x=1; trainctl_session=abc", kSessionCookie), "abc");
}

TEST(SseTest, FramesEventsIdsAndMultilineData) {
  EXPECT_EQ(SseEvent("jobs", "[1]"), "event: jobs\ndata: [1]\n\n");
  EXPECT_EQ(SseEvent("log", "a\nb\r\nc", "42"),
            "id: 42\nevent: log\ndata: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(SseEvent("x\ny", "", ""), "event: x y\ndata: \n\n") << "fields stay on one line";
  EXPECT_EQ(SseComment("ping"), ": ping\n\n");
  EXPECT_EQ(SseRetry(2000), "retry: 2000\n\n");
}

json Job(const std::string& name, const std::string& uid, const std::string& state) {
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", uid},
            {"creationTimestamp", "2026-11-26T10:00:00Z"}}},
          {"spec",
           {{"pytorchReplicaSpecs",
             {{"Worker",
               {{"replicas", 2},
                {"template",
                 {{"spec",
                   {{"containers", json::array({{{"name", "pytorch"}, {"image", "x"}}})}}}}}}}}}}},
          {"status",
           {{"replicaStatuses", {{"Worker", {{"active", 1}, {"failed", 1}}}}},
            {"conditions",
             json::array({{{"type", state},
                           {"status", "True"},
                           {"message", "First failure: " + name +
                                           "-worker-1 (Worker 1) exited with code 3."}}})}}}};
}

TEST(ViewsTest, RowsMergeLiveJobsWithHistoryWithoutDuplicates) {
  json row = LiveRow(Job("pt", "u1", "Failed"), "local");
  EXPECT_EQ(row["key"], "live/local/default/PyTorchJob/pt");
  EXPECT_EQ(row["replicas"], json({{"total", 2}, {"active", 1}, {"succeeded", 0}, {"failed", 1}}));
  EXPECT_EQ(row["why"], "First failure: pt-worker-1 (Worker 1) exited with code 3.");
  EXPECT_TRUE(row["progress"].is_null());  // it reported no progress
  json reported = Job("pt", "u1", "Running");
  reported["status"]["trainerStatus"] = {{"progressPercentage", 42},
                                         {"lastUpdatedTime", "2026-11-30T00:00:00Z"}};
  EXPECT_EQ(LiveRow(reported, "local")["progress"], 42);
  history::Row same;
  same.uid = "u1";
  same.name = "pt";
  history::Row gone;
  gone.uid = "u0";
  gone.name = "old";
  gone.state = "Failed";
  gone.why = "line one\nline two";
  json rows = MergeRows({row, LiveRow(Job("other", "u2", "Running"), "local")}, {same, gone}, "");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2]["key"], "history/u0");
  EXPECT_EQ(rows[2]["why"], "line one");
  EXPECT_FALSE(rows[2]["live"].get<bool>());
  rows = MergeRows({row, LiveRow(Job("other", "u2", "Running"), "local")}, {}, "WORKER-1");
  ASSERT_EQ(rows.size(), 1u) << "only the failed one says worker-1 in its why";
  EXPECT_EQ(rows[0]["name"], "pt");
  rows = MergeRows({row, LiveRow(Job("other", "u2", "Running"), "local")}, {}, "othe");
  ASSERT_EQ(rows.size(), 1u);
}

TEST(ViewsTest, PagesHaveOneShapeAndSurviveOddInput) {
  json page = HistoryPage({{"uid", "u1"},
                           {"source", "local"},
                           {"job", Job("pt", "u1", "Failed")},
                           {"metrics", nullptr},
                           {"logs", {{"worker-0", {{"bytes", 3}, {"tail", "hi\n"}}}}}});
  EXPECT_FALSE(page["live"].get<bool>());
  EXPECT_EQ(page["replicaNames"], json::array({"worker-0"}));
  EXPECT_EQ(page["metricsReplica"], "");
  EXPECT_NO_THROW(HistoryPage(json("not an object")));
  EXPECT_NO_THROW(HistoryPage({{"job", 3}, {"logs", "x"}, {"metrics", 1}}));
  EXPECT_NO_THROW(LiveRow(json::array(), "local"));
  json live = LivePage({{"source", "local"},
                        {"job", Job("pt", "u1", "Running")},
                        {"replicas", json::array({{{"name", "pt-worker-0"}}, {{"name", "x"}}})}},
                       "worker-0");
  EXPECT_EQ(live["replicaNames"], json::array({"worker-0", "x"}));
}

TEST(ViewsTest, SeriesOfDifferentQuantitiesNeverShareAChart) {
  json empty = {{"step", json::array()}, {"value", json::array()}};
  json doc = {{"series",
               {{"loss", empty},
                {"lr", empty},
                {"eval_loss", empty},
                {"val/loss", empty},
                {"grad_norm", empty},
                {"learning_rate", empty},
                {"train_accuracy", empty},
                {"accuracy", empty},
                {"epoch", empty},
                {"val_", empty}}}};
  std::map<std::string, std::vector<std::string>> got;
  for (const json& chart : ChartsFor(doc))
    got[chart["axis"]] = chart["series"].get<std::vector<std::string>>();
  std::map<std::string, std::vector<std::string>> want = {
      {"loss", {"eval_loss", "loss", "val/loss"}},
      {"lr", {"lr"}},
      {"learning_rate", {"learning_rate"}},
      {"grad_norm", {"grad_norm"}},
      {"accuracy", {"accuracy", "train_accuracy"}},
      {"epoch", {"epoch"}},
      {"val_", {"val_"}}};
  EXPECT_EQ(got, want) << "a loss and a learning rate on one axis hide the smaller";
  EXPECT_EQ(ChartsFor(json::object()), json::array());
  EXPECT_EQ(ChartsFor(json("odd")), json::array());
  EXPECT_EQ(WithCharts(nullptr), nullptr);
  EXPECT_EQ(WithCharts(doc)["charts"], ChartsFor(doc));
  json page = HistoryPage({{"metrics", doc}});
  EXPECT_EQ(page["metrics"]["charts"].size(), 7u) << "a history page's series are grouped too";
}

TEST(AssetsTest, ThePageItsScriptAndTheChartLibraryAreCompiledIn) {
  const Asset* index = FindAsset("/");
  ASSERT_NE(index, nullptr);
  std::string html(reinterpret_cast<const char*>(index->data), index->size);
  EXPECT_NE(html.find("/app.js"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos) << "no inline script (CSP)";
  EXPECT_STREQ(index->content_type, "text/html; charset=utf-8");
  ASSERT_NE(FindAsset("/third_party/uplot/uPlot.iife.min.js"), nullptr);
  const Asset* license = FindAsset("/third_party/uplot/LICENSE");
  ASSERT_NE(license, nullptr);
  EXPECT_NE(std::string(reinterpret_cast<const char*>(license->data), license->size).find("MIT"),
            std::string::npos);
  EXPECT_EQ(FindAsset("/third_party/uplot/README.md"), nullptr);
  EXPECT_EQ(FindAsset("/nope.js"), nullptr);
}

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ui_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    local::JobDir dir(root_.string(), {api::Kind::kPyTorchJob, "default", "pt"});
    ASSERT_TRUE(dir.Create().ok());
    ASSERT_TRUE(dir.WriteJob(Job("pt", "u1", "Running")).ok());
    std::ofstream(dir.LogPath("pt-worker-0")) << "step=1 loss=2\nhello\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  // The job folder's files: name → (bytes, modification time).
  std::map<std::string, std::pair<std::string, fs::file_time_type>> JobFolder() {
    std::map<std::string, std::pair<std::string, fs::file_time_type>> out;
    for (const fs::directory_entry& e :
         fs::recursive_directory_iterator(root_ / "default" / "pytorchjobs" / "pt")) {
      std::ifstream in(e.path(), std::ios::binary);
      out[e.path().string()] = {
          e.is_regular_file() ? std::string(std::istreambuf_iterator<char>(in), {}) : "",
          fs::last_write_time(e.path())};
    }
    return out;
  }

  // A stream's client that stays for a few ticks of a second each.
  struct TicksSink : server::StreamSink {
    explicit TicksSink(FakeClock* clock) : clock(clock) {}
    FakeClock* clock;
    std::string text;
    int ticks = 5;
    bool Write(std::string_view bytes) override {
      text += bytes;
      return true;
    }
    bool WaitFor(std::chrono::milliseconds) override {
      clock->Advance(std::chrono::seconds(1));
      return --ticks > 0;
    }
  };

  Response Ask(server::Router& router, const std::string& target) {
    Request r = Get(target);
    r.headers["cookie"] = "trainctl_ui=s3cret";
    return router.Route(r);
  }

  fs::path root_;
  FakeClock clock_{*ParseRfc3339("2026-11-26T10:01:00Z")};
};

TEST_F(DashboardTest, TheApiAnswersFromTheStateFolderBehindTheChecks) {
  DashboardConfig config;
  config.state_root = root_.string();
  config.auth = kAuth;
  Dashboard dashboard(config, clock_);
  ASSERT_TRUE(dashboard.Open().ok());
  server::Router router;
  dashboard.Register(router);

  EXPECT_EQ(router.Route(Get("/api/v1/jobs")).status, 401);
  Response index = Ask(router, "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(HeaderOf(index, "Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  EXPECT_EQ(HeaderOf(index, "X-Frame-Options"), "DENY");

  auto folder_before = JobFolder();
  json list = json::parse(Ask(router, "/api/v1/jobs").body);
  ASSERT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(list["items"][0]["name"], "pt");
  EXPECT_EQ(list["items"][0]["state"], "Failed") << "its runner is gone";
  EXPECT_TRUE(list["items"][0]["live"].get<bool>());

  Response page = Ask(router, "/api/v1/job?source=local&ns=default&kind=PyTorchJob&name=pt");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(json::parse(page.body)["metricsReplica"], "worker-0");
  json log = json::parse(
      Ask(router,
          "/api/v1/logs?source=local&ns=default&kind=PyTorchJob&name=pt&replica=worker-0&from=14")
          .body);
  EXPECT_EQ(log["text"], "hello\n");
  EXPECT_EQ(Ask(router, "/api/v1/job?source=local&ns=default&kind=PyTorchJob&name=nope").status,
            404);
  EXPECT_EQ(Ask(router, "/api/v1/job?source=mars&ns=default&kind=PyTorchJob&name=pt").status, 400);
  EXPECT_EQ(Ask(router, "/api/v1/job?uid=nope").status, 404);
  Response stream = Ask(
      router, "/api/v1/stream?source=local&ns=default&kind=PyTorchJob&name=pt&replica=worker-0");
  EXPECT_EQ(stream.content_type, "text/event-stream; charset=utf-8");
  ASSERT_TRUE(stream.stream);
  TicksSink sink(&clock_);
  stream.stream(sink);
  EXPECT_NE(sink.text.find("event: jobs"), std::string::npos);
  EXPECT_NE(sink.text.find("event: job\n"), std::string::npos);
  EXPECT_NE(sink.text.find("RunnerLost"), std::string::npos);
  EXPECT_NE(sink.text.find("event: metrics"), std::string::npos);
  EXPECT_NE(sink.text.find("\"charts\""), std::string::npos) << "the series' chart groups";

  // The job has no runner: the reads show it as Failed (RunnerLost) and write nothing; the
  // sweep, which the dashboard's owner calls on its timer, records it and keeps it.
  EXPECT_EQ(json::parse(Ask(router, "/api/v1/history?name=pt&limit=5").body)["items"].size(), 0u);
  EXPECT_EQ(JobFolder(), folder_before) << "a read wrote to the job's folder";
  jobs::SweepReport swept = dashboard.Sweep();
  ASSERT_EQ(swept.lost.size(), 1u);
  EXPECT_EQ(swept.lost[0].name, "pt");
  ASSERT_EQ(swept.recorded.size(), 1u);
  EXPECT_NE(JobFolder(), folder_before);

  // The history's read API (`trainctl history` on a cluster reads it from the operator's).
  json rows = json::parse(Ask(router, "/api/v1/history?name=pt&limit=5").body);
  ASSERT_EQ(rows["items"].size(), 1u) << rows.dump();
  EXPECT_EQ(rows["items"][0]["uid"], "u1");
  EXPECT_EQ(rows["total"], 1);
  EXPECT_EQ(history::RowFromJson(rows["items"][0]).state, "Failed");
  EXPECT_EQ(json::parse(Ask(router, "/api/v1/history?name=other").body)["items"].size(), 0u);
  Response record = Ask(router, "/api/v1/history/record?uid=u1");
  ASSERT_EQ(record.status, 200) << record.body;
  EXPECT_EQ(json::parse(record.body)["job"]["metadata"]["name"], "pt");
  EXPECT_EQ(Ask(router, "/api/v1/history/record?uid=nope").status, 404);
  EXPECT_EQ(Ask(router, "/api/v1/history?q=ab").status, 400) << "3 characters at least";
  EXPECT_EQ(router.Route(Get("/api/v1/history")).status, 401);
}

// In the cluster the page's own files are anyone's (the sign-in form must show), the data is
// not, and a sign-in that is not JSON from this origin is refused before any TokenReview.
TEST_F(DashboardTest, InTheClusterThePageShowsButTheDataNeedsASignIn) {
  auto api = std::make_unique<kube::FakeApi>();
  kube::FakeApi* fake = api.get();
  kube::ClientOptions options;
  options.qps = 0;
  options.max_retries = 0;
  kube::Client client(std::move(api), options, &clock_);
  ClusterAuthorizer authorizer(&client, &clock_, "");
  DashboardConfig config;
  config.authorizer = &authorizer;
  Dashboard dashboard(config, clock_);
  ASSERT_TRUE(dashboard.Open().ok());
  server::Router router;
  dashboard.Register(router);
  EXPECT_EQ(router.Route(Get("/")).status, 200);
  EXPECT_EQ(router.Route(Get("/app.js")).status, 200);
  Response refused = router.Route(Get("/api/v1/whoami"));
  EXPECT_EQ(refused.status, 401);
  EXPECT_TRUE(json::parse(refused.body)["login"].get<bool>());
  Request form = Get("/api/v1/login");
  form.method = "POST";
  form.headers["content-type"] = "text/plain";
  form.body = "{\"token\": \"t\"}";
  EXPECT_EQ(router.Route(form).status, 400);
  form.headers["content-type"] = "application/json";
  form.headers["origin"] = "http://elsewhere.example";
  EXPECT_EQ(router.Route(form).status, 403);
  EXPECT_TRUE(fake->Requests().empty()) << "refused before asking the API server";
  Request logout = Get("/api/v1/logout");
  logout.method = "POST";
  EXPECT_EQ(router.Route(logout).status, 403) << "no session";
}

}  // namespace
}  // namespace trainctl::ui
