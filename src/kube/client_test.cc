// Unit tests of the client's verbs over a scripted transport: retries (429 + Retry-After,
// 5xx, transport errors), paging with an expired continue token, and watch decoding with cut
// and malformed streams. The real API server is exercised in test/integration/.
#include "kube/client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "kube/fake_transport.h"
#include "kube/reflector.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : clock_(Time(std::chrono::seconds(100))) {
    auto fake = std::make_unique<FakeTransport>();
    fake_ = fake.get();
    ClientOptions options;
    options.qps = -1;
    options.max_retries = 3;
    options.sleep = [this](Duration d) {
      slept_.push_back(d);
      clock_.Advance(d);
    };
    client_ = std::make_unique<Client>(std::move(fake), options, &clock_);
  }
  FakeClock clock_;
  FakeTransport* fake_;
  std::unique_ptr<Client> client_;
  std::vector<Duration> slept_;
};

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", message}}.dump();
}

TEST_F(ClientTest, ThrottledRequestsWaitForRetryAfterThenSucceed) {
  fake_->Script(Reply(429, StatusBody(429, "TooManyRequests", "slow down"), 2));
  fake_->Script(Reply(201, R"({"metadata":{"name":"x"}})"));
  StatusOr<json> created = client_->Create(kConfigMaps, "ns", {{"metadata", {{"name", "x"}}}});
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_EQ(fake_->requests().size(), 2u);
  EXPECT_EQ(slept_, (std::vector<Duration>{Duration(2000)}));
}

TEST(ClientClockTest, RetryWaitsSleepOnTheClientsClock) {
  FakeClock clock(Time(std::chrono::seconds(100)));
  auto fake = std::make_unique<FakeTransport>();
  fake->Script(Reply(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests"})", 7));
  fake->Script(Reply(200, R"({"metadata":{"name":"p"}})"));
  ClientOptions options;
  options.qps = -1;  // no options.sleep: the clock waits
  Client client(std::move(fake), options, &clock);
  ASSERT_TRUE(client.Get(kPods, "ns", "p").ok());
  EXPECT_EQ(clock.Now(), Time(std::chrono::seconds(107)));
}

TEST_F(ClientTest, GivesUpAfterMaxRetriesWithTheServersMessage) {
  for (int i = 0; i < 4; ++i)
    fake_->Script(Reply(429, StatusBody(429, "TooManyRequests", "busy"), 1));
  Status st = client_->Get(kPods, "ns", "p").status();
  EXPECT_EQ(st.code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(st.message(), "get pods \"p\" in ns: busy (TooManyRequests, HTTP 429); retry after 1s");
  EXPECT_EQ(fake_->requests().size(), 4u);
}

TEST_F(ClientTest, TransportErrorsAreRetriedOnlyWhenIdempotent) {
  fake_->Script(FakeReply{UnavailableError("connection refused"), {}});
  fake_->Script(Reply(200, R"({"metadata":{"name":"p"}})"));
  EXPECT_TRUE(client_->Get(kPods, "ns", "p").ok());
  fake_->Script(FakeReply{UnavailableError("connection reset"), {}});
  Status st = client_->Create(kPods, "ns", {{"metadata", {{"name", "p"}}}}).status();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "create pods \"p\" in ns: connection reset");
}

TEST_F(ClientTest, MalformedSuccessBodyIsAnErrorNotACrash) {
  fake_->Script(Reply(200, R"({"metadata":{"name":"p"},"spec":{"conta)"));
  Status st = client_->Get(kPods, "ns", "p").status();
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("not JSON"), std::string::npos) << st.message();
}

// CreateOnly sends what Create sends and reports what it reports, without reading the body.
TEST_F(ClientTest, CreateOnlySendsWhatCreateSendsAndDoesNotReadTheReply) {
  nlohmann::json pod = {{"metadata", {{"name", "p"}}}, {"spec", {{"nodeName", "n"}}}};
  fake_->Script(Reply(201, R"({"metadata":{"name":"p"}})"));
  fake_->Script(Reply(201, R"({"metadata":{"name":"p"},"spec":{"conta)"));
  WriteOptions dry_run;
  dry_run.dry_run = true;
  EXPECT_TRUE(client_->Create(kPods, "ns", pod, dry_run).ok());
  EXPECT_TRUE(client_->CreateOnly(kPods, "ns", pod, dry_run).ok())
      << "a created object's copy is not decoded, so a broken one is no error";
  std::vector<HttpRequest> sent = fake_->requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].method, "POST");
  EXPECT_EQ(sent[1].path, sent[0].path);
  EXPECT_EQ(sent[1].body, sent[0].body);
  EXPECT_EQ(sent[1].content_type, sent[0].content_type);
  fake_->Script(Reply(409, StatusBody(409, "AlreadyExists", "pods \"p\" already exists")));
  Status st = client_->CreateOnly(kPods, "ns", pod);
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(st.message().rfind("create pods \"p\" in ns: ", 0), 0u) << st.message();
}

TEST_F(ClientTest, ListAllFollowsContinueAndRestartsWhenItExpired) {
  fake_->Script(Reply(200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"t1"}})"));
  fake_->Script(
      Reply(410, StatusBody(410, "Expired", "The provided continue parameter is too old")));
  fake_->Script(Reply(200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"t2"}})"));
  fake_->Script(Reply(200, R"({"items":[{"n":3}],"metadata":{"resourceVersion":"77"}})"));
  ListOptions options;
  options.limit = 2;
  options.label_selector = "a=b";
  StatusOr<json> all = client_->ListAll(kPods, "ns", options);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ((*all)["items"].size(), 3u);  // the restarted list, not the stale first page
  EXPECT_EQ((*all)["metadata"]["resourceVersion"], "77");
  std::vector<HttpRequest> sent = fake_->requests();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].path, "/api/v1/namespaces/ns/pods?labelSelector=a%3Db&limit=2");
  EXPECT_EQ(sent[1].path, "/api/v1/namespaces/ns/pods?labelSelector=a%3Db&limit=2&continue=t1");
  EXPECT_EQ(sent[2].path, sent[0].path);
}

TEST_F(ClientTest, ListPagesHandsOverOnePageAtATimeAndSaysWhenItStartsOver) {
  fake_->Script(Reply(200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"t1"}})"));
  fake_->Script(Reply(410, StatusBody(410, "Expired", "too old")));
  fake_->Script(Reply(200, R"({"items":[{"n":1},{"n":2}],"metadata":{"continue":"t2"}})"));
  fake_->Script(Reply(200, R"({"items":[{"n":3}],"metadata":{"resourceVersion":"77"}})"));
  std::vector<std::string> seen;
  ListOptions options;
  options.limit = 2;
  StatusOr<std::string> rv = client_->ListPages(
      kPods, "ns", options,
      [&](std::vector<json> page) { seen.push_back("page of " + std::to_string(page.size())); },
      [&] { seen.push_back("restart"); });
  ASSERT_TRUE(rv.ok()) << rv.status().message();
  EXPECT_EQ(*rv, "77");
  EXPECT_EQ(seen, (std::vector<std::string>{"page of 2", "restart", "page of 2", "page of 1"}));
}

TEST_F(ClientTest, ListPagesAsksForTheNextPageWhileThisOneIsHandedOver) {
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t1"},"items":[{"n":1}]})"));
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t2"},"items":[{"n":2}]})"));
  fake_->Script(Reply(200, R"({"metadata":{"resourceVersion":"9"},"items":[{"n":3}]})"));
  std::vector<size_t> requested_during_page;
  ListOptions options;
  options.limit = 1;
  StatusOr<std::string> rv = client_->ListPages(
      kPods, "ns", options,
      [&](std::vector<json>) {
        // The next request goes out on its own; wait for it (bounded) without returning.
        size_t want = std::min<size_t>(requested_during_page.size() + 2, 3);
        for (int i = 0; i < 200 && fake_->requests().size() < want; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        requested_during_page.push_back(fake_->requests().size());
      },
      [] {});
  ASSERT_TRUE(rv.ok()) << rv.status().message();
  EXPECT_EQ(*rv, "9");
  EXPECT_EQ(requested_during_page, (std::vector<size_t>{2, 3, 3}));
  std::vector<HttpRequest> sent = fake_->requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[1].path, "/api/v1/namespaces/ns/pods?limit=1&continue=t1");
  EXPECT_EQ(sent[2].path, "/api/v1/namespaces/ns/pods?limit=1&continue=t2");
}

TEST_F(ClientTest, ListPagesGivesEachNextPageRoomForAboutAsMuchAsThePageBefore) {
  const std::string first = R"({"metadata":{"continue":"t1"},"items":[{"n":1},{"n":2}]})";
  const std::string second = R"({"metadata":{"continue":"t2"},"items":[{"n":3}]})";
  fake_->Script(Reply(200, first));
  fake_->Script(Reply(200, second));
  fake_->Script(Reply(200, R"({"metadata":{"resourceVersion":"9"},"items":[]})"));
  StatusOr<std::string> rv = client_->ListPages(
      kPods, "ns", {}, [](std::vector<json>) {}, [] {});
  ASSERT_TRUE(rv.ok()) << rv.status().message();
  std::vector<HttpRequest> sent = fake_->requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].body_size_hint, 0u) << "nothing known before the first page";
  EXPECT_EQ(sent[1].body_size_hint, first.size() + first.size() / 8);
  EXPECT_EQ(sent[2].body_size_hint, second.size() + second.size() / 8);
  fake_->Script(Reply(200, R"({"metadata":{"name":"p"}})"));
  ASSERT_TRUE(client_->Get(kPods, "ns", "p").ok());
  EXPECT_EQ(fake_->requests().back().body_size_hint, 0u) << "only list pages get a hint";
}

TEST_F(ClientTest, ListPagesOffersEachBodyRawFirstAndParsesOnlyWhatIsDeclined) {
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t1"},"items":[{"n":1}]})"));
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t2"},"items":[{"n":2},{"n":3}]})"));
  fake_->Script(Reply(200, R"({"metadata":{"resourceVersion":"9"},"items":[{"n":4}]})"));
  std::vector<std::string> seen;
  int offered = 0;
  StatusOr<std::string> rv = client_->ListPages(
      kPods, "ns", {},
      [&](std::vector<json> page) { seen.push_back("parsed " + std::to_string(page.size())); },
      [] {},
      [&](std::string_view body) {
        offered++;
        if (body.find("\"n\":2") != std::string_view::npos) return false;  // declined
        seen.push_back("raw");
        return true;
      });
  ASSERT_TRUE(rv.ok()) << rv.status().message();
  EXPECT_EQ(*rv, "9") << "the version read from the raw last page";
  EXPECT_EQ(offered, 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"raw", "parsed 2", "raw"}));
}

TEST_F(ClientTest, ListPagesNamesABrokenPageAndHandsNothingOfIt) {
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t1"},"items":[{"n":1}]})"));
  fake_->Script(Reply(200, R"({"metadata":{"continue":"t2"},"items":[{"n":2} oops)"));
  int pages = 0;
  StatusOr<std::string> rv = client_->ListPages(
      kPods, "ns", {}, [&](std::vector<json>) { pages++; }, [] {});
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(pages, 1);
  EXPECT_NE(rv.status().message().find("list pods in ns: the server sent a body"),
            std::string::npos)
      << rv.status().message();
}

TEST_F(ClientTest, ListAllToleratesOddMetadataFromTheServer) {
  fake_->Script(Reply(200, R"({"items":[{"n":1}],"metadata":{"continue":7,"resourceVersion":5}})"));
  StatusOr<json> all = client_->ListAll(kPods, "ns", {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ((*all)["items"].size(), 1u);
  fake_->Script(Reply(200, R"({"items":"nope","metadata":"nope"})"));
  EXPECT_TRUE(client_->ListAll(kPods, "ns", {}).ok());
}

TEST_F(ClientTest, ListAllGivesUpWhenItExpiresTwice) {
  fake_->Script(Reply(200, R"({"items":[],"metadata":{"continue":"t1"}})"));
  fake_->Script(Reply(410, StatusBody(410, "Expired", "too old")));
  fake_->Script(Reply(200, R"({"items":[],"metadata":{"continue":"t2"}})"));
  fake_->Script(Reply(410, StatusBody(410, "Expired", "too old")));
  EXPECT_EQ(client_->ListAll(kPods, "ns", {}).status().code(), StatusCode::kGone);
}

struct WatchRun {
  std::vector<std::string> names;
  Status end;
};

WatchRun RunWatch(Client& client) {
  WatchRun run;
  client.Watch(
      kPods, "ns", {},
      [&](const WatchEvent& e) {
        run.names.push_back(std::string(WatchEventTypeName(e.type)) + ":" +
                            WatchEventObject(e)["metadata"].value("name", ""));
        return Status::Ok();
      },
      [&](Status st) { run.end = st; });
  return run;
}

TEST_F(ClientTest, WatchDecodesEventsSplitAcrossChunks) {
  FakeReply reply = Reply(200, "");
  reply.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                  "\n"
                  R"({"type":"MOD)",
                  R"(IFIED","object":{"metadata":{"name":"a"}}})"
                  "\n",
                  R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"
                  "\n"};
  fake_->Script(reply);
  WatchRun run = RunWatch(*client_);
  EXPECT_TRUE(run.end.ok()) << run.end.message();
  EXPECT_EQ(run.names, (std::vector<std::string>{"ADDED:a", "MODIFIED:a", "BOOKMARK:"}));
  EXPECT_NE(fake_->requests()[0].path.find("watch=1&allowWatchBookmarks=true"), std::string::npos);
}

// A consumer that takes the text of events naming "raw" and leaves the others to Apply.
class RecordingConsumer final : public ReflectorConsumer {
 public:
  void Replace(std::vector<nlohmann::json>, const std::string&) override {}
  void ReplaceBegin() override {}
  void ReplacePage(std::vector<nlohmann::json>) override {}
  void ReplaceEnd(const std::string& rv) override { Add("listed@" + rv); }
  void Apply(WatchEventType type, nlohmann::json object) override {
    Add(std::string("doc ") + WatchEventTypeName(type) + ":" +
        object["metadata"].value("name", ""));
  }
  bool ApplyRaw(WatchEventType type, std::string_view text) override {
    if (text.find("\"raw\"") == std::string_view::npos) return false;
    Add(std::string("text ") + WatchEventTypeName(type) + ":raw");
    return true;
  }
  std::vector<std::string> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void Add(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.push_back(std::move(s));
  }
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
};

TEST_F(ClientTest, ReflectorOffersEachEventAsTextFirstAndWatchesOnFromItsResourceVersion) {
  fake_->Script(Reply(200, R"({"metadata":{"resourceVersion":"5"},"items":[]})"));
  FakeReply watch = Reply(200, "");
  watch.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"raw","resourceVersion":"6"}}})"
                  "\n",
                  R"({"type":"MODIFIED","object":{"metadata":{"name":"b","resourceVersion":"7"},)"
                  R"("x":123456789012345678901234567890}})"
                  "\n",
                  R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"
                  "\n"};
  fake_->Script(watch);
  RecordingConsumer consumer;
  ReflectorOptions options;
  options.min_backoff = Duration(5);
  options.max_backoff = Duration(5);
  Reflector reflector(client_.get(), kPods, options, &consumer);
  reflector.Start();
  for (int i = 0; i < 400 && fake_->requests().size() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  reflector.Stop();
  EXPECT_EQ(consumer.seen(),
            (std::vector<std::string>{"listed@5", "text ADDED:raw", "doc MODIFIED:b"}));
  std::vector<HttpRequest> sent = fake_->requests();
  ASSERT_GE(sent.size(), 3u);
  EXPECT_NE(sent[1].path.find("resourceVersion=5"), std::string::npos) << sent[1].path;
  EXPECT_NE(sent[2].path.find("resourceVersion=9"), std::string::npos) << sent[2].path;
  EXPECT_EQ(reflector.stats().events, 2);
}

TEST_F(ClientTest, WatchCutMidEventIsReported) {
  FakeReply reply = Reply(200, "");
  reply.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                  "\n"
                  R"({"type":"ADD)"};
  fake_->Script(reply);
  WatchRun run = RunWatch(*client_);
  EXPECT_EQ(run.names.size(), 1u);
  EXPECT_EQ(run.end.code(), StatusCode::kUnavailable);
  EXPECT_NE(run.end.message().find("cut in the middle of an event"), std::string::npos);
}

TEST_F(ClientTest, WatchErrorEventAndHttp410AreBothGone) {
  FakeReply mid = Reply(200, "");
  mid.chunks = {
      R"j({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 5 (80)"}})j"
      "\n"};
  fake_->Script(mid);
  EXPECT_EQ(RunWatch(*client_).end.code(), StatusCode::kGone);
  fake_->Script(Reply(410, StatusBody(410, "Gone", "too old")));
  EXPECT_EQ(RunWatch(*client_).end.code(), StatusCode::kGone);
}

TEST_F(ClientTest, MalformedWatchEventStopsTheStreamWithAClearError) {
  FakeReply reply = Reply(200, "");
  reply.chunks = {"<html>proxy error</html>\n"};
  fake_->Script(reply);
  WatchRun run = RunWatch(*client_);
  EXPECT_EQ(run.end.code(), StatusCode::kInternal);
  EXPECT_NE(run.end.message().find("watch pods in ns: malformed watch event (not JSON)"),
            std::string::npos)
      << run.end.message();
}

}  // namespace
}  // namespace trainctl::kube
