// The runtime status endpoint's answers and the coalescing of reports (progress/).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "progress/report_coalescer.h"
#include "progress/status_endpoint.h"

namespace trainctl::progress {
namespace {

using nlohmann::json;

const char* kPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj-1/status";

std::string Report(int progress) {
  return json{{"trainerStatus",
               {{"progressPercentage", progress},
                {"estimatedRemainingSeconds", 120},
                {"metrics", json::array({{{"name", "loss"}, {"value", "0.123"}}})},
                {"lastUpdatedTime", "2026-11-30T18:00:00.123456+00:00"}}}}
      .dump();
}

server::Request Post(const std::string& path, std::string body, std::string auth = "Bearer good") {
  server::Request r;
  r.method = "POST";
  r.path = path;
  r.body = std::move(body);
  if (!auth.empty()) r.headers["authorization"] = std::move(auth);
  return r;
}

struct Recorded {
  std::vector<std::pair<std::string, api::TrainerStatus>> accepted;
};

StatusEndpoint Endpoint(Recorded* rec) {
  StatusEndpointHooks hooks;
  hooks.authorize = [](const std::string& token, const api::StatusTarget& t) {
    if (token == "good")
      return t.namespace_ == "team-a" && t.name == "tj-1" ? Grant::kAllowed : Grant::kForbidden;
    if (token == "down") return Grant::kUnavailable;
    return Grant::kUnauthenticated;
  };
  hooks.exists = [](const api::StatusTarget& t) {
    return t.namespace_ == "team-a" && (t.name == "tj-1" || t.name == "tj-2");
  };
  hooks.accept = [rec](const api::StatusTarget& t, api::TrainerStatus s) {
    rec->accepted.emplace_back(t.plural + ":" + t.namespace_ + "/" + t.name, std::move(s));
  };
  return StatusEndpoint(std::move(hooks));
}

TEST(StatusPathTest, ReadsTheJobATrainJobOrAV1Job) {
  std::optional<api::StatusTarget> t = api::ParseStatusPath(kPath);
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, api::TrainJobStatusTarget("team-a", "tj-1"));
  EXPECT_EQ(api::StatusPath(*t), kPath);
  t = api::ParseStatusPath("/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/pt/status");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, api::StatusTargetOf(api::Kind::kPyTorchJob, "ns", "pt"));
  EXPECT_EQ(api::StatusAudience(*t), "kubeflow.org/v1/namespaces/ns/pytorchjobs/pt/status");
  for (const char* bad :
       {"/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj-1",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs//status",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces//trainjobs/tj/status",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a.b/trainjobs/tj/status",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/a/b/status",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/Team/trainjobs/tj/status",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/pytorchjobs/tj/status",
        "/apis/kubeflow.org/v1/namespaces/ns/trainjobs/tj/status",
        "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/m/status",
        "/apis/kubeflow.org/v1/namespaces/ns/pods/p/status",
        "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/pt/status/"})
    EXPECT_FALSE(api::ParseStatusPath(bad)) << bad;
}

TEST(StatusPathTest, BearerTokenAsRfc7235SaysWithAnySpacing) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("  bearer \t abc  "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Bearer a b"), "");
  EXPECT_EQ(BearerToken(""), "");
}

TEST(StatusEndpointTest, AcceptsAReportAndEchoesIt) {
  Recorded rec;
  server::Response r = Endpoint(&rec).Handle(Post(kPath, Report(42)));
  ASSERT_EQ(r.status, 200) << r.body;
  json echo = json::parse(r.body);
  EXPECT_EQ(echo["trainerStatus"]["progressPercentage"], 42);
  EXPECT_EQ(echo["trainerStatus"]["lastUpdatedTime"], "2026-11-30T18:00:00Z");
  ASSERT_EQ(rec.accepted.size(), 1u);
  EXPECT_EQ(rec.accepted[0].first, "trainjobs:team-a/tj-1");
  EXPECT_EQ(rec.accepted[0].second.progress_percentage, 42);
  EXPECT_EQ(rec.accepted[0].second.metrics.at(0).value, "0.123");
}

TEST(StatusEndpointTest, ABodyWithoutTrainerStatusIsAnsweredAndNothingWritten) {
  Recorded rec;
  server::Response r = Endpoint(&rec).Handle(Post(kPath, "{}"));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(rec.accepted.empty());
}

TEST(StatusEndpointTest, RefusesWhatUpstreamRefusesWithAKubernetesStatus) {
  Recorded rec;
  StatusEndpoint endpoint = Endpoint(&rec);
  struct Case {
    server::Request request;
    int code;
    const char* reason;
  };
  const std::string other =
      "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj-2/status";
  const std::string gone =
      "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/tj-9/status";
  std::vector<Case> cases = {
      {Post(kPath, Report(42), ""), 401, "Unauthorized"},
      {Post(kPath, Report(42), "Bearer forged"), 401, "Unauthorized"},
      {Post(other, Report(42)), 403, "Forbidden"},
      {Post(kPath, Report(42), "Bearer down"), 503, "ServiceUnavailable"},
      {Post(kPath, std::string(70000, ' ')), 413, "RequestEntityTooLarge"},
      {Post(kPath, "{not json"), 400, "BadRequest"},
      {Post(kPath, std::string(200, '[') + std::string(200, ']')), 400, "BadRequest"},
      {Post(kPath, Report(101)), 422, "Invalid"},
      {Post("/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/x/y/status",
            Report(1)),
       404, "NotFound"},
  };
  for (const Case& c : cases) {
    server::Response r = endpoint.Handle(c.request);
    EXPECT_EQ(r.status, c.code) << c.request.path << " " << r.body;
    json body = json::parse(r.body, nullptr, false);
    EXPECT_EQ(body.value("reason", ""), c.reason) << r.body;
    EXPECT_EQ(body.value("status", ""), "Failure");
    EXPECT_EQ(body.value("code", 0), c.code);
  }
  // The 422 names the field and the bound.
  server::Response invalid = endpoint.Handle(Post(kPath, Report(101)));
  EXPECT_NE(invalid.body.find("trainerStatus.progressPercentage"), std::string::npos);
  EXPECT_NE(invalid.body.find("between 0 and 100"), std::string::npos);
  EXPECT_TRUE(rec.accepted.empty());
}

TEST(StatusEndpointTest, AReportForAJobThatIsGoneIs404) {
  Recorded rec;
  StatusEndpointHooks hooks;
  hooks.authorize = [](auto&&...) { return Grant::kAllowed; };
  hooks.exists = [](auto&&...) { return false; };
  hooks.accept = [&](auto&&...) { rec.accepted.emplace_back(); };
  server::Response r = StatusEndpoint(hooks).Handle(Post(kPath, Report(5)));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("TrainJob team-a/tj-1 not found"), std::string::npos);
  EXPECT_TRUE(rec.accepted.empty());
}

TEST(StatusEndpointTest, RegistersOnlyPostUnderThePrefix) {
  Recorded rec;
  StatusEndpoint endpoint = Endpoint(&rec);
  server::Router router;
  endpoint.Register(&router);
  server::Request get = Post(kPath, "");
  get.method = "GET";
  EXPECT_EQ(router.Route(get).status, 405);
  EXPECT_EQ(router.Route(Post("/healthz", "")).status, 404);
  EXPECT_EQ(router.Route(Post(kPath, Report(7))).status, 200);
}

api::TrainerStatus Progress(int p) {
  api::TrainerStatus s;
  s.progress_percentage = p;
  return s;
}

TEST(ReportCoalescerTest, AThousandReportsMakeOneWritePerIntervalAndTheLastLands) {
  ReportCoalescer c(Duration(1000));
  Time t(std::chrono::seconds(1000));
  for (int i = 0; i < 1000; ++i) c.Put("ns/a", Progress(i % 101));
  auto first = c.TakeDue(t);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].second.progress_percentage, 999 % 101);
  for (int i = 0; i < 500; ++i) c.Put("ns/a", Progress(i % 101));
  EXPECT_TRUE(c.TakeDue(t + Duration(999)).empty());  // within the interval: held
  auto second = c.TakeDue(t + Duration(1000));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].second.progress_percentage, 499 % 101);
  EXPECT_TRUE(c.TakeDue(t + Duration(5000)).empty());  // nothing new
  EXPECT_EQ(c.counts().reports, 1500u);
  EXPECT_EQ(c.counts().taken, 2u);
}

TEST(ReportCoalescerTest, JobsAreIndependentAndAFailedWriteComesBackUnlessSuperseded) {
  ReportCoalescer c(Duration(1000));
  Time t(std::chrono::seconds(1000));
  c.Put("ns/a", Progress(1));
  c.Put("ns/b", Progress(2));
  auto due = c.TakeDue(t);
  ASSERT_EQ(due.size(), 2u);
  c.Return("ns/a", due[0].second);  // its write failed
  c.Put("ns/b", Progress(3));
  c.Return("ns/b", due[1].second);  // a newer one came: the old is not written again
  auto next = c.TakeDue(t + Duration(1000));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].second.progress_percentage, 1);
  EXPECT_EQ(next[1].second.progress_percentage, 3);
  c.Put("ns/a", Progress(9));
  auto all = c.TakeAll();  // at shutdown, the interval does not hold it back
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].second.progress_percentage, 9);
}

}  // namespace
}  // namespace trainctl::progress
