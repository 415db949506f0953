// Unit tests for the client's pure parts: API error mapping, watch stream decoding, the rate
// limiter, list metadata and request paths. The transport and the verbs are tested against a real
// API server in test/integration/.
#include <gtest/gtest.h>

#include "api/json_bounds.h"
#include "kube/api_error.h"
#include "kube/client.h"
#include "kube/list_metadata.h"
#include "kube/rate_limiter.h"
#include "kube/watch_decoder.h"

namespace trainctl::kube {
namespace {

HttpResponse Response(long status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

TEST(ListMetadataTest, ReadsTheTokenAndVersionAndStopsAtTheEndOfMetadata) {
  // What follows metadata is never read: a broken items array does not matter.
  std::optional<ListMetadata> m = PeekListMetadata(
      R"({"kind":"PodList","metadata":{"resourceVersion":"80082","continue":"eyJ2","remainingItemCount":9500},"items":[{"metadata":{"continue":"no"}} BROKEN)");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->continue_token, "eyJ2");
  EXPECT_EQ(m->resource_version, "80082");
}

TEST(ListMetadataTest, FindsMetadataAfterTheItemsAndIgnoresTheItemsOwn) {
  std::optional<ListMetadata> m = PeekListMetadata(
      R"({"items":[{"metadata":{"continue":"x","resourceVersion":"1"}}],"metadata":{"resourceVersion":"77"}})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->continue_token, "");
  EXPECT_EQ(m->resource_version, "77");
}

TEST(ListMetadataTest, NonStringsAreAbsentAndBrokenBodiesAreNotRead) {
  std::optional<ListMetadata> m =
      PeekListMetadata(R"({"metadata":{"continue":7,"resourceVersion":{"a":"b"}},"items":[]})");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->continue_token, "");
  EXPECT_EQ(m->resource_version, "");
  EXPECT_FALSE(PeekListMetadata(R"({"items":[],"metadata":{"continue":"t)").has_value());
  EXPECT_FALSE(PeekListMetadata(R"({"items":[],"metadata":"nope"})").has_value());
  EXPECT_FALSE(PeekListMetadata("[1,2]").has_value());
  EXPECT_FALSE(PeekListMetadata("").has_value());
}

TEST(ApiErrorTest, MapsReasonsAndCodes) {
  struct Case {
    long http;
    const char* reason;
    StatusCode want;
  } cases[] = {
      {404, "NotFound", StatusCode::kNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kConflict},
      {410, "Expired", StatusCode::kGone},
      {410, "Gone", StatusCode::kGone},
      {422, "Invalid", StatusCode::kInvalid},
      {429, "TooManyRequests", StatusCode::kTooManyRequests},
      {401, "Unauthorized", StatusCode::kUnauthorized},
      {403, "Forbidden", StatusCode::kForbidden},
      {504, "Timeout", StatusCode::kDeadlineExceeded},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    nlohmann::json body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                           {"reason", c.reason}, {"code", c.http},     {"message", "m"}};
    Status st = ErrorFromResponse(Response(c.http, body.dump()), "get pods \"x\"");
    EXPECT_EQ(st.code(), c.want) << c.reason;
    EXPECT_EQ(st.message().rfind("get pods \"x\": m", 0), 0u) << st.message();
  }
}

TEST(ApiErrorTest, InvalidKeepsTheServersFieldMessage) {
  nlohmann::json body = {
      {"kind", "Status"},
      {"reason", "Invalid"},
      {"code", 422},
      {"message", "Pod \"x\" is invalid: spec.containers: Required value"},
      {"details", {{"causes", {{{"field", "spec.containers"}, {"message", "Required value"}}}}}}};
  Status st = ErrorFromResponse(Response(422, body.dump()), "create pods \"x\" in ns");
  EXPECT_EQ(st.code(), StatusCode::kInvalid);
  EXPECT_EQ(st.message(),
            "create pods \"x\" in ns: Pod \"x\" is invalid: spec.containers: Required value "
            "(Invalid, HTTP 422)");
}

TEST(ApiErrorTest, CausesAreListedWhenTheMessageHasNone) {
  nlohmann::json body = {
      {"kind", "Status"},
      {"reason", "Invalid"},
      {"code", 422},
      {"message", "invalid"},
      {"details", {{"causes", {{{"field", "a"}, {"message", "bad"}}, {{"message", "worse"}}}}}}};
  Status st = ErrorFromResponse(Response(422, body.dump()), "op");
  EXPECT_EQ(st.message(), "op: invalid; a: bad; worse (Invalid, HTTP 422)");
}

TEST(ApiErrorTest, NonStatusBodiesAreQuotedNotTrusted) {
  Status html = ErrorFromResponse(Response(502, "<html>\nBad gateway</html>"), "list pods");
  EXPECT_EQ(html.code(), StatusCode::kUnavailable);
  EXPECT_EQ(html.message(),
            "list pods: unexpected response body: \"<html> Bad gateway</html>\" (HTTP 502)");
  Status truncated = ErrorFromResponse(Response(409, "{\"kind\":\"Stat"), "update x");
  EXPECT_EQ(truncated.code(), StatusCode::kConflict);
  Status empty = ErrorFromResponse(Response(404, ""), "get y");
  EXPECT_EQ(empty.code(), StatusCode::kNotFound);
  EXPECT_EQ(empty.message(), "get y: the server answered HTTP 404 (HTTP 404)");
}

TEST(ApiErrorTest, RetryAfterIsMentioned) {
  HttpResponse r = Response(429, "");
  r.retry_after_seconds = 3;
  EXPECT_NE(ErrorFromResponse(r, "x").message().find("retry after 3s"), std::string::npos);
}

std::vector<std::string> Split(LineSplitter& s, const std::vector<std::string>& chunks,
                               Status* status = nullptr) {
  std::vector<std::string> lines;
  for (const std::string& c : chunks) {
    Status st = s.Feed(c, [&](std::string_view line) {
      lines.emplace_back(line);
      return Status::Ok();
    });
    if (!st.ok()) {
      if (status) *status = st;
      break;
    }
  }
  return lines;
}

TEST(LineSplitterTest, ReassemblesLinesAcrossChunks) {
  LineSplitter s;
  EXPECT_EQ(Split(s, {"{\"a\"", ":1}\n{\"b\":2}\n{\"c", "\":3}\n\n"}),
            (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
  EXPECT_EQ(s.pending(), 0u);
}

TEST(LineSplitterTest, ByteByByteGivesTheSameLines) {
  std::string stream = "{\"type\":\"ADDED\"}\n{\"type\":\"DELETED\"}\n";
  std::vector<std::string> chunks;
  for (char c : stream) chunks.emplace_back(1, c);
  LineSplitter s;
  EXPECT_EQ(Split(s, chunks).size(), 2u);
}

TEST(LineSplitterTest, CutMidLineIsVisible) {
  LineSplitter s;
  EXPECT_EQ(Split(s, {"{\"a\":1}\n{\"b\":"}).size(), 1u);
  EXPECT_EQ(s.pending(), 5u);
}

TEST(LineSplitterTest, OversizedLineIsAnError) {
  LineSplitter s(/*max_line=*/10);
  Status st;
  Split(s, {"0123456", "789abcdef\n"}, &st);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
}

TEST(WatchEventTest, ParsesEveryType) {
  for (const char* t : {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}) {
    StatusOr<WatchEvent> e = ParseWatchEvent(std::string("{\"type\":\"") + t +
                                             "\",\"object\":{\"metadata\":{\"name\":\"p\"}}}");
    ASSERT_TRUE(e.ok()) << t;
    EXPECT_STREQ(WatchEventTypeName(e->type), t);
    EXPECT_EQ(WatchEventObject(*e)["metadata"]["name"], "p");
  }
}

TEST(WatchEventTest, KeepsTheTextAndTheResourceVersion) {
  std::string line = R"({"type":"MODIFIED","object":{"metadata":{"name":"p",
    "resourceVersion":"981"},"spec":{}}})";
  StatusOr<WatchEvent> e = ParseWatchEvent(line);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->text, line);
  EXPECT_EQ(e->resource_version, "981");
  EXPECT_EQ(e->type, WatchEventType::kModified);
  StatusOr<WatchEvent> bare = ParseWatchEvent(R"({"type":"ADDED","object":{"metadata":[]}})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->resource_version, "");
}

// What simdjson declines but the API allows is read the other way: the same event.
TEST(WatchEventTest, NumbersBeyond64BitsAndDeepNestingAreStillEvents) {
  std::string big = R"({"type":"ADDED","object":{"metadata":{"name":"p","resourceVersion":"7"},
    "x":123456789012345678901234567890}})";
  StatusOr<WatchEvent> e = ParseWatchEvent(big);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->resource_version, "7");
  EXPECT_TRUE(WatchEventObject(*e)["x"].is_number_float());
  std::string deep = std::string(9990, '[') + std::string(9990, ']');
  e = ParseWatchEvent(R"({"type":"DELETED","object":{"metadata":{"name":"p"},"x":)" + deep + "}}");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->type, WatchEventType::kDeleted);
  EXPECT_EQ(WatchEventObject(*e)["metadata"]["name"], "p");
}

// Both readers draw the line at the same depth: an event ParseWatchEvent takes always decodes.
TEST(WatchEventTest, TheDepthLimitIsTheSameForBothReaders) {
  auto event = [](size_t depth) {  // the event's own two levels, then arrays
    return R"({"type":"ADDED","object":{"x":)" + std::string(depth - 2, '[') +
           std::string(depth - 2, ']') + "}}";
  };
  StatusOr<WatchEvent> at_limit = ParseWatchEvent(event(api::kMaxApiJsonDepth));
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().message();
  EXPECT_FALSE(WatchEventObject(*at_limit).is_discarded());
  EXPECT_FALSE(ParseWatchEvent(event(api::kMaxApiJsonDepth + 1)).ok());
}

TEST(WatchEventTest, ObjectOfTextThatIsNoEventIsDiscarded) {
  WatchEvent e;
  e.text = "{broken";
  EXPECT_TRUE(WatchEventObject(e).is_discarded());
  e.text = R"({"type":"ADDED","object":7})";
  EXPECT_TRUE(WatchEventObject(e).is_discarded());
}

TEST(WatchEventTest, MalformedEventsAreErrors) {
  for (const char* bad : {"not json", "[]", "{\"object\":{}}", "{\"type\":\"ADDED\"}",
                          "{\"type\":\"RENAMED\",\"object\":{}}", "{\"type\":1,\"object\":{}}",
                          "{\"type\":\"ADDED\",\"object\":\"x\"}"}) {
    StatusOr<WatchEvent> e = ParseWatchEvent(bad);
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInternal);
    EXPECT_NE(e.status().message().find("malformed watch event"), std::string::npos);
  }
}

TEST(WatchEventTest, NestingPastTheApiServersLimitIsRefusedBeforeDecoding) {
  std::string deep = std::string(10001, '[') + std::string(10001, ']');
  StatusOr<WatchEvent> e = ParseWatchEvent(R"({"type":"ADDED","object":{"x":)" + deep + "}}");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("malformed watch event (nested deeper than 10000 levels)"),
            std::string::npos)
      << e.status().message();
}

TEST(WatchEventTest, ErrorEventWith410IsGone) {
  StatusOr<WatchEvent> e = ParseWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}})j");
  ASSERT_TRUE(e.ok());
  Status st = WatchErrorStatus(*e, "watch pods");
  EXPECT_EQ(st.code(), StatusCode::kGone);
  EXPECT_NE(st.message().find("too old resource version"), std::string::npos);
}

TEST(RateLimiterTest, BurstThenQps) {
  FakeClock clock(Time(std::chrono::seconds(1000)));
  RateLimiter limiter(/*qps=*/10, /*burst=*/3, &clock);
  EXPECT_EQ(limiter.Reserve(), Duration(0));
  EXPECT_EQ(limiter.Reserve(), Duration(0));
  EXPECT_EQ(limiter.Reserve(), Duration(0));
  EXPECT_EQ(limiter.Reserve(), Duration(100));  // the 4th waits one token (1/10 s)
  EXPECT_EQ(limiter.Reserve(), Duration(200));  // reservations queue up
  clock.Advance(Duration(1000));                // refill, capped at the burst
  EXPECT_EQ(limiter.Reserve(), Duration(0));
}

// What waits already takes its tokens first: with 3 saved up, a request behind 2 queued ones
// could go now, one behind 3 could not (the event recorder folds it then).
TEST(RateLimiterTest, WouldGoNowCountsTheRequestsAhead) {
  FakeClock clock(Time(std::chrono::seconds(1000)));
  RateLimiter limiter(/*qps=*/10, /*burst=*/3, &clock);
  EXPECT_TRUE(limiter.WouldGoNow());
  EXPECT_TRUE(limiter.WouldGoNow(2));
  EXPECT_FALSE(limiter.WouldGoNow(3));
  limiter.Reserve();
  EXPECT_FALSE(limiter.WouldGoNow(2));
  clock.Advance(Duration(100));  // one token back
  EXPECT_TRUE(limiter.WouldGoNow(2));
  RateLimiter off(/*qps=*/-1, /*burst=*/0, &clock);
  EXPECT_TRUE(off.WouldGoNow(1000));
}

TEST(RateLimiterTest, OffMeansNoWaitButRetryAfterStillApplies) {
  FakeClock clock(Time(std::chrono::seconds(1000)));
  RateLimiter limiter(/*qps=*/-1, /*burst=*/0, &clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Reserve(), Duration(0));
  limiter.PauseFor(Duration(1500));
  EXPECT_EQ(limiter.Reserve(), Duration(1500));
  clock.Advance(Duration(2000));
  EXPECT_EQ(limiter.Reserve(), Duration(0));
}

TEST(PathTest, CoreGroupAndSubresources) {
  EXPECT_EQ(ResourcePath(kPods, "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(kNamespaces, "ignored", "x"), "/api/v1/namespaces/x");
  Resource jobs{"kubeflow.org", "v1", "pytorchjobs"};
  EXPECT_EQ(ResourcePath(jobs, "team-a", "j"),
            "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs/j");
  EXPECT_EQ(QueryString({{"labelSelector", "a=b,c in (d)"}, {"limit", ""}, {"watch", "1"}}),
            "?labelSelector=a%3Db%2Cc%20in%20%28d%29&watch=1");
  EXPECT_EQ(QueryString({{"x", ""}}), "");
}

}  // namespace
}  // namespace trainctl::kube
