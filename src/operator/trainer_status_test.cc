// The operator's side of the runtime status endpoint: token checks by TokenReview, the
// coalesced status writes, and what a trainer pod is given to reach it.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "kube/base64.h"
#include "kube/fake_api.h"
#include "operator/status_env.h"
#include "operator/status_token_review.h"
#include "operator/trainer_status_writer.h"

namespace trainctl::op {
namespace {

using nlohmann::json;
using progress::Grant;

api::StatusTarget TJ(const std::string& ns, const std::string& name) {
  return api::TrainJobStatusTarget(ns, name);
}

// A JWT-shaped token claiming `aud` (unsigned: only the API server's answer counts here).
std::string Token(const std::string& aud, int64_t exp = 4102444800) {
  auto url = [](std::string b64) {
    for (char& c : b64) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!b64.empty() && b64.back() == '=') b64.pop_back();
    return b64;
  };
  return url(kube::Base64Encode(R"({"alg":"RS256"})")) + "." +
         url(kube::Base64Encode(json{{"aud", json::array({aud})}, {"exp", exp}}.dump())) + ".sig";
}

// Answers TokenReviews as an API server would: a token is valid for the audiences it was issued
// for, and belongs to a service account of one namespace.
class TokenReviewApi final : public kube::Transport {
 public:
  void Issue(const std::string& token, const std::string& audience, const std::string& ns) {
    std::lock_guard<std::mutex> lock(mu_);
    issued_[token] = {audience, ns};
  }
  void Down(bool down) { down_ = down; }
  int reviews() const { return reviews_; }

  StatusOr<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    kube::HttpResponse r;
    if (down_) return UnavailableError("connection refused");
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.path.substr(0, request.path.find('?')),
              "/apis/authentication.k8s.io/v1/tokenreviews");
    ++reviews_;
    json review = json::parse(request.body);
    const std::string token = review["spec"]["token"];
    const std::string audience = review["spec"]["audiences"][0];
    auto it = issued_.find(token);
    json status = {{"authenticated", false}};
    if (it != issued_.end() && it->second.first == audience)
      status = {{"authenticated", true},
                {"user", {{"username", "system:serviceaccount:" + it->second.second + ":default"}}},
                {"audiences", json::array({audience})}};
    review["status"] = status;
    r.status = 201;
    r.body = review.dump();
    return r;
  }
  std::shared_ptr<kube::Stream> OpenStream(
      const kube::HttpRequest&, std::function<bool(std::string_view)>,
      std::function<void(StatusOr<kube::HttpResponse>)>) override {
    return nullptr;
  }
  long ConnectionsOpened() const override { return 0; }

 private:
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, std::string>> issued_;
  bool down_ = false;
  int reviews_ = 0;
};

kube::ClientOptions Quick() {
  kube::ClientOptions options;
  options.qps = -1;
  options.max_retries = 0;
  options.sleep = [](Duration) {};
  return options;
}

class StatusTokenReviewTest : public ::testing::Test {
 protected:
  StatusTokenReviewTest() : clock_(Time(std::chrono::seconds(1700000000))) {
    auto api = std::make_unique<TokenReviewApi>();
    api_ = api.get();
    client_ = std::make_unique<kube::Client>(std::move(api), Quick(), &clock_);
    reviews_ = std::make_unique<StatusTokenReview>(client_.get(), &clock_);
  }
  FakeClock clock_;
  TokenReviewApi* api_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<StatusTokenReview> reviews_;
};

TEST_F(StatusTokenReviewTest, ATokenIsGoodOnlyForItsOwnTrainJob) {
  const std::string mine = Token(api::TrainerStatusAudience("a", "tj"));
  api_->Issue(mine, api::TrainerStatusAudience("a", "tj"), "a");
  EXPECT_EQ(reviews_->Authorize(mine, TJ("a", "tj")), Grant::kAllowed);
  // Valid, but for TrainJob a/tj: another job of the namespace is forbidden, not unknown.
  EXPECT_EQ(reviews_->Authorize(mine, TJ("a", "other")), Grant::kForbidden);
  EXPECT_EQ(reviews_->Authorize(mine, TJ("b", "tj")), Grant::kForbidden);
  // A token issued for the job's audience to a service account of another namespace.
  const std::string foreign = Token(api::TrainerStatusAudience("a", "tj2"));
  api_->Issue(foreign, api::TrainerStatusAudience("a", "tj2"), "b");
  EXPECT_EQ(reviews_->Authorize(foreign, TJ("a", "tj2")), Grant::kForbidden);
  // Forged (claims the audience, never issued), empty, not a JWT, for the API server.
  EXPECT_EQ(reviews_->Authorize(Token(api::TrainerStatusAudience("a", "tj3")), TJ("a", "tj3")),
            Grant::kUnauthenticated);
  EXPECT_EQ(reviews_->Authorize("", TJ("a", "tj")), Grant::kUnauthenticated);
  EXPECT_EQ(reviews_->Authorize("garbage", TJ("a", "tj")), Grant::kUnauthenticated);
  const std::string api_token = Token("https://kubernetes.default.svc");
  api_->Issue(api_token, "https://kubernetes.default.svc", "a");
  EXPECT_EQ(reviews_->Authorize(api_token, TJ("a", "tj")), Grant::kUnauthenticated);
}

TEST_F(StatusTokenReviewTest, AnswersAreCachedSoReportsDoNotEachCostAReview) {
  const std::string mine = Token(api::TrainerStatusAudience("a", "tj"));
  api_->Issue(mine, api::TrainerStatusAudience("a", "tj"), "a");
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(reviews_->Authorize(mine, TJ("a", "tj")), Grant::kAllowed);
  EXPECT_EQ(api_->reviews(), 1);
  for (int i = 0; i < 100; ++i) reviews_->Authorize("garbage", TJ("a", "tj"));
  EXPECT_EQ(api_->reviews(), 2);  // a refusal is remembered too, for a while
  clock_.Advance(Duration(11000));
  reviews_->Authorize("garbage", TJ("a", "tj"));
  EXPECT_EQ(api_->reviews(), 3);
  clock_.Advance(Duration(5 * 60 * 1000));
  reviews_->Authorize(mine, TJ("a", "tj"));
  EXPECT_EQ(api_->reviews(), 4);  // a valid answer is asked again after 5 minutes
}

TEST_F(StatusTokenReviewTest, AnApiServerThatDoesNotAnswerIsUnavailableAndNotCached) {
  const std::string mine = Token(api::TrainerStatusAudience("a", "tj"));
  api_->Issue(mine, api::TrainerStatusAudience("a", "tj"), "a");
  api_->Down(true);
  EXPECT_EQ(reviews_->Authorize(mine, TJ("a", "tj")), Grant::kUnavailable);
  api_->Down(false);
  EXPECT_EQ(reviews_->Authorize(mine, TJ("a", "tj")), Grant::kAllowed);
}

TEST(StatusTokenClaimsTest, ReadsServiceAccountsAndAudiences) {
  EXPECT_EQ(ServiceAccountNamespace("system:serviceaccount:team:default"), "team");
  EXPECT_EQ(ServiceAccountNamespace("system:node:n1"), "");
  EXPECT_EQ(ServiceAccountNamespace("system:serviceaccount:team"), "");
  EXPECT_EQ(ClaimedAudiences(Token("x")), std::vector<std::string>{"x"});
  EXPECT_TRUE(ClaimedAudiences("a.b").empty());
  EXPECT_TRUE(ClaimedAudiences("a.!!!.c").empty());
}

const char* kTrainJobPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj";

api::TrainerStatus Progress(int p) {
  api::TrainerStatus s;
  s.progress_percentage = p;
  s.last_updated_time = Time(std::chrono::seconds(1700000000));
  return s;
}

class TrainerStatusWriterTest : public ::testing::Test {
 protected:
  TrainerStatusWriterTest() : clock_(Time(std::chrono::seconds(1700000000))) {
    auto api = std::make_unique<kube::FakeApi>();
    api_ = api.get();
    client_ = std::make_unique<kube::Client>(std::move(api), Quick(), &clock_);
    writer_ = std::make_unique<TrainerStatusWriter>(client_.get(), &clock_);
    api_->Seed(kTrainJobPath, {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                               {"kind", "TrainJob"},
                               {"metadata", {{"name", "tj"}, {"namespace", "ns"}}}});
  }
  std::vector<kube::HttpRequest> Patches() {
    return api_->Requests("PATCH", std::string(kTrainJobPath) + "/status");
  }
  FakeClock clock_;
  kube::FakeApi* api_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<TrainerStatusWriter> writer_;
};

TEST_F(TrainerStatusWriterTest, AThousandReportsAreOneWriteAndTheNewestLands) {
  for (int i = 0; i <= 1000; ++i) writer_->Accept(TJ("ns", "tj"), Progress(i / 10));
  writer_->Flush();
  for (int i = 0; i < 50; ++i) writer_->Accept(TJ("ns", "tj"), Progress(100));
  writer_->Flush();  // within the interval: held
  ASSERT_EQ(Patches().size(), 1u);
  EXPECT_EQ((*api_->Object(kTrainJobPath))["status"]["trainerStatus"]["progressPercentage"], 100);
  clock_.Advance(kTrainerStatusWriteInterval);
  writer_->Flush();
  EXPECT_EQ(Patches().size(), 2u);
  EXPECT_EQ(writer_->counts().coalescer.reports, 1051u);
  EXPECT_EQ(writer_->counts().writes, 2u);
}

TEST_F(TrainerStatusWriterTest, FieldsAReportLeavesOutAreRemoved) {
  api::TrainerStatus full = Progress(10);
  full.estimated_remaining_seconds = 60;
  full.metrics = {{"loss", "0.5"}};
  writer_->Accept(TJ("ns", "tj"), full);
  writer_->Flush();
  clock_.Advance(kTrainerStatusWriteInterval);
  writer_->Accept(TJ("ns", "tj"), Progress(20));
  writer_->Flush();
  json ts = (*api_->Object(kTrainJobPath))["status"]["trainerStatus"];
  EXPECT_EQ(ts["progressPercentage"], 20);
  EXPECT_FALSE(ts.contains("metrics")) << ts;
  EXPECT_FALSE(ts.contains("estimatedRemainingSeconds")) << ts;
  EXPECT_EQ(ts["lastUpdatedTime"], "2023-11-14T22:13:20Z");
}

TEST_F(TrainerStatusWriterTest, AGoneTrainJobIsDroppedAndAFailedWriteRetried) {
  writer_->Accept(TJ("ns", "gone"), Progress(1));
  writer_->Flush();
  clock_.Advance(kTrainerStatusWriteInterval);
  writer_->Flush();
  EXPECT_EQ(writer_->counts().failures, 1u);  // 404: not tried again
  api_->Fail("PATCH", kTrainJobPath, 500, "InternalError", "etcd", /*times=*/1);
  writer_->Accept(TJ("ns", "tj"), Progress(7));
  writer_->Flush();
  EXPECT_FALSE((*api_->Object(kTrainJobPath)).contains("status"));
  clock_.Advance(kTrainerStatusWriteInterval);
  writer_->Flush();
  EXPECT_EQ((*api_->Object(kTrainJobPath))["status"]["trainerStatus"]["progressPercentage"], 7);
}

TEST_F(TrainerStatusWriterTest, StopWritesWhatIsPendingAndExistsAsksOnce) {
  writer_->Start();
  writer_->Accept(TJ("ns", "tj"), Progress(1));
  writer_->Stop();
  EXPECT_EQ((*api_->Object(kTrainJobPath))["status"]["trainerStatus"]["progressPercentage"], 1);
  EXPECT_TRUE(writer_->Exists(TJ("ns", "tj")));
  EXPECT_TRUE(writer_->Exists(TJ("ns", "tj")));
  EXPECT_FALSE(writer_->Exists(TJ("ns", "nope")));
  EXPECT_EQ(api_->Requests("GET", kTrainJobPath).size(), 1u);
}

TEST_F(StatusTokenReviewTest, AV1JobsTokenIsGoodForThatJobOnly) {
  const api::StatusTarget pt = api::StatusTargetOf(api::Kind::kPyTorchJob, "a", "pt");
  const std::string mine = Token(api::StatusAudience(pt));
  api_->Issue(mine, api::StatusAudience(pt), "a");
  EXPECT_EQ(reviews_->Authorize(mine, pt), Grant::kAllowed);
  // The same name as a TrainJob, or another v1 kind: another job.
  EXPECT_EQ(reviews_->Authorize(mine, TJ("a", "pt")), Grant::kForbidden);
  EXPECT_EQ(reviews_->Authorize(mine, api::StatusTargetOf(api::Kind::kTFJob, "a", "pt")),
            Grant::kForbidden);
}

TEST_F(TrainerStatusWriterTest, AV1JobsReportIsKeptInItsAnnotation) {
  const char* path = "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs/pt";
  api_->Seed(path, {{"apiVersion", "kubeflow.org/v1"},
                    {"kind", "PyTorchJob"},
                    {"metadata", {{"name", "pt"}, {"namespace", "ns"}}}});
  const api::StatusTarget pt = api::StatusTargetOf(api::Kind::kPyTorchJob, "ns", "pt");
  EXPECT_TRUE(writer_->Exists(pt));
  writer_->Accept(pt, Progress(30));
  writer_->Flush();
  json stored = *api_->Object(path);
  const std::string kept = stored["metadata"]["annotations"][api::kTrainerStatusAnnotation];
  EXPECT_EQ(json::parse(kept)["progressPercentage"], 30);
  EXPECT_FALSE(stored.contains("status"));  // the v1 CRD has no trainerStatus
  EXPECT_EQ(api_->Requests("PATCH", std::string(path) + "/status").size(), 0u);
}

TEST(TrainerStatusEnvTest, OnlyTheTrainerStepGetsTheEndpointTokenAndCa) {
  json jobset = json::parse(R"({"spec": {"replicatedJobs": [
    {"name": "dataset-initializer", "template": {"metadata": {"labels":
      {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
      "spec": {"template": {"spec": {"containers": [{"name": "dataset-initializer"}]}}}}},
    {"name": "node", "template": {"metadata": {"labels":
      {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
      "spec": {"template": {"spec": {"containers": [
        {"name": "node", "env": [{"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "old"}]},
        {"name": "sidecar"}],
        "volumes": [{"name": "data", "emptyDir": {}}]}}}}}]}})");
  AddTrainerStatusEnv(&jobset, "team", "tj",
                      TrainerStatusServerUrl("trainctl-operator", "trainctl-system", 10443));
  const json& init = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  EXPECT_FALSE(init["containers"][0].contains("env"));
  EXPECT_FALSE(init.contains("volumes"));
  const json& pod = jobset["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"];
  for (const json& c : pod["containers"]) {
    std::map<std::string, std::string> env;
    for (const json& e : c["env"]) env[e["name"]] = e["value"];
    EXPECT_EQ(env.size(), 3u) << c;
    EXPECT_EQ(env["KUBEFLOW_TRAINER_SERVER_URL"],
              "https://trainctl-operator.trainctl-system.svc:10443"
              "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tj/status");
    EXPECT_EQ(env["KUBEFLOW_TRAINER_SERVER_CA_CERT"], "/var/run/secrets/kubeflow/trainer/ca.crt");
    EXPECT_EQ(env["KUBEFLOW_TRAINER_SERVER_TOKEN"], "/var/run/secrets/kubeflow/trainer/token");
    EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/var/run/secrets/kubeflow/trainer");
    EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  }
  ASSERT_EQ(pod["volumes"].size(), 2u);
  const json& sources = pod["volumes"][1]["projected"]["sources"];
  EXPECT_EQ(sources[0]["serviceAccountToken"]["audience"],
            "trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tj/status");
  EXPECT_EQ(sources[0]["serviceAccountToken"]["expirationSeconds"], 3600);
  EXPECT_EQ(sources[1]["configMap"]["name"], "tj-tls-config");
  json cm = TrainerStatusCaConfigMap("team", "tj", "uid-1", "PEM");
  EXPECT_EQ(cm["data"]["ca.crt"], "PEM");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["uid"], "uid-1");
}

}  // namespace
}  // namespace trainctl::op
