// Unit tests of the HTTP plumbing the servers share: targets and queries, the router, the
// per-connection deadlines, and the plain server over a real loopback socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "server/connection_deadlines.h"
#include "server/http.h"
#include "server/http_server.h"

namespace trainctl::server {
namespace {

TEST(ParseTargetTest, DecodesThePathAndTheQuery) {
  std::string path;
  std::map<std::string, std::string> query;
  ASSERT_TRUE(
      ParseTarget("/api/v1/jobs/a%2Fb?ns=ml&q=nccl+error&q=NCCL%20error&flag", &path, &query).ok());
  EXPECT_EQ(path, "/api/v1/jobs/a/b");
  EXPECT_EQ(query["ns"], "ml");
  EXPECT_EQ(query["q"], "NCCL error") << "the last of a repeated name";
  EXPECT_EQ(query.count("flag"), 1u);
  EXPECT_EQ(query["flag"], "");
  ASSERT_TRUE(ParseTarget("/a+b", &path, &query).ok());
  EXPECT_EQ(path, "/a+b") << "'+' is a space only in the query";
  EXPECT_TRUE(query.empty());
  for (const char* bad : {"", "api", "http://x/", "/%zz", "/%4", "/?a=%", "/%00"})
    EXPECT_FALSE(ParseTarget(bad, &path, &query).ok()) << bad;
}

Request Get(const std::string& target, const std::string& method = "GET") {
  Request r;
  r.method = method;
  r.target = target;
  EXPECT_TRUE(ParseTarget(target, &r.path, &r.query).ok());
  return r;
}

TEST(RouterTest, ExactPathsThenTheLongestPrefixThen404And405) {
  Router router;
  router.Handle("GET", "/api/v1/jobs",
                [](const Request& r) { return Response::Text(200, "list " + r.Query("ns")); });
  router.HandlePrefix("GET", "/api/v1/jobs/",
                      [](const Request& r) { return Response::Text(200, "job " + r.path); });
  router.HandlePrefix("GET", "/api/v1/jobs/local/",
                      [](const Request& r) { return Response::Text(200, "local " + r.path); });
  router.Handle("POST", "/validate", [](const Request& r) {
    return Response::Json(200, {{"echo", r.body}});
  });
  EXPECT_EQ(router.Route(Get("/api/v1/jobs?ns=ml")).body, "list ml");
  EXPECT_EQ(router.Route(Get("/api/v1/jobs/cluster/x")).body, "job /api/v1/jobs/cluster/x");
  EXPECT_EQ(router.Route(Get("/api/v1/jobs/local/x")).body, "local /api/v1/jobs/local/x");
  EXPECT_EQ(router.Route(Get("/api/v1/jobs", "HEAD")).status, 200) << "HEAD is GET";
  EXPECT_EQ(router.Route(Get("/nope")).status, 404);
  Response wrong = router.Route(Get("/api/v1/jobs", "DELETE"));
  EXPECT_EQ(wrong.status, 405);
  ASSERT_EQ(wrong.headers.size(), 1u);
  EXPECT_EQ(wrong.headers[0], std::make_pair(std::string("Allow"), std::string("GET, HEAD")));
  Request post = Get("/validate", "POST");
  post.body = "{}";
  Response answered = router.Route(post);
  EXPECT_EQ(answered.content_type, "application/json");
  EXPECT_EQ(answered.body, R"({"echo":"{}"})");
  EXPECT_EQ(router.Route(Get("/validate")).status, 405);
}

TEST(ResponseTest, JsonNeverThrowsOnBadUtf8) {
  Response r = Response::Json(200, {{"line", std::string("ok \xff end")}});
  EXPECT_NE(r.body.find("ok"), std::string::npos);
}

TEST(HttpServer, ParsesBindAddresses) {
  auto a = ParseBindAddress(":8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "0.0.0.0");
  EXPECT_EQ(a->second, 8080);
  auto b = ParseBindAddress("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "::1");
  EXPECT_FALSE(ParseBindAddress("8080x").ok());
  EXPECT_FALSE(ParseBindAddress(":99999").ok());
}

TEST(ConnectionDeadlinesTest, ReportsEachSocketOnceItsDeadlinePassed) {
  RealClock clock;
  ConnectionDeadlines deadlines(clock, Duration(3600000));  // no watchdog ticks in this test
  MonoTime t0{};
  deadlines.Set(7, t0 + Duration(100));
  deadlines.Set(8, t0 + Duration(200));
  EXPECT_TRUE(deadlines.Overdue(t0 + Duration(99)).empty());
  EXPECT_EQ(deadlines.Overdue(t0 + Duration(150)), std::vector<int>{7});
  EXPECT_TRUE(deadlines.Overdue(t0 + Duration(150)).empty());  // reported once
  deadlines.Set(8, t0 + Duration(500));                        // a new step, a new deadline
  deadlines.Clear(9);
  EXPECT_TRUE(deadlines.Overdue(t0 + Duration(300)).empty());
  deadlines.Clear(8);
  EXPECT_TRUE(deadlines.Overdue(MonoTime::max()).empty());
}

TEST(ConnectionDeadlinesTest, TheWatchdogEndsABlockedRead) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  RealClock clock;
  ConnectionDeadlines deadlines(clock, Duration(20));
  deadlines.Set(fds[0], clock.Monotonic() + Duration(100));
  char byte;
  MonoTime start = clock.Monotonic();
  ssize_t n = recv(fds[0], &byte, 1, 0);  // the peer never writes
  EXPECT_EQ(n, 0);                        // shut down: end of stream
  EXPECT_LT(clock.Monotonic() - start, Duration(5000));
  deadlines.Clear(fds[0]);
  close(fds[0]);
  close(fds[1]);
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(HttpServer, ASlowClientDoesNotHoldTheProbes) {
  HttpServer server;
  server.router().Handle("GET", "/healthz",
                         [](const Request&) { return Response::Text(200, "ok\n"); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  int slow = ConnectLoopback(server.port());
  ASSERT_GE(slow, 0);
  std::string partial = "GET /heal";
  ASSERT_EQ(send(slow, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
  RealClock clock;
  MonoTime start = clock.Monotonic();
  int probe = ConnectLoopback(server.port());
  ASSERT_GE(probe, 0);
  std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(probe, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = recv(probe, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  EXPECT_EQ(answer.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_LT(clock.Monotonic() - start, Duration(2000));  // not after the slow one's 5 s
  close(probe);
  close(slow);
  server.Stop();
}

std::string Exchange(int port, const std::string& request) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  send(fd, request.data(), request.size(), 0);
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, n);
  close(fd);
  return answer;
}

TEST(HttpServer, HandlersSeeTheRequest) {
  HttpServer server;
  server.router().Handle("GET", "/echo", [](const Request& r) {
    return Response::Text(200, r.Query("q") + "|" + r.Header("x-token") + "|" + r.method);
  });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::string answer =
      Exchange(server.port(), "GET /echo?q=a%20b HTTP/1.1\r\nHost: x\r\nX-Token: t1\r\n\r\n");
  EXPECT_EQ(answer.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_NE(answer.find("\r\n\r\na b|t1|GET"), std::string::npos) << answer;
  std::string head = Exchange(server.port(), "HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(head.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_EQ(head.find("GET"), std::string::npos) << "no body for HEAD: " << head;
  EXPECT_EQ(Exchange(server.port(), "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n").substr(0, 12),
            "HTTP/1.1 400");
  EXPECT_EQ(Exchange(server.port(), "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                .substr(0, 12),
            "HTTP/1.1 405");
  std::string big =
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(kMaxHttpBodyBytes + 1) +
      "\r\n\r\n";
  EXPECT_EQ(Exchange(server.port(), big).substr(0, 12), "HTTP/1.1 413");
  server.Stop();
}

TEST(HttpServer, StreamsLiveUntilTheClientOrTheServerGoes) {
  HttpServerOptions options;
  options.max_streams = 1;
  HttpServer server(options);
  std::atomic<int> writes{0};
  server.router().Handle("GET", "/events", [&](const Request&) {
    Response r;
    r.content_type = "text/event-stream";
    r.stream = [&](StreamSink& sink) {
      for (int i = 0;; ++i) {
        if (!sink.Write("data: " + std::to_string(i) + "\n\n")) return;
        ++writes;
        if (!sink.WaitFor(std::chrono::milliseconds(20))) return;
      }
    };
    return r;
  });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  int fd = ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  std::string request = "GET /events HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, request.data(), request.size(), 0);
  std::string got;
  char buf[256];
  // Past the 5 s request deadline would take too long here; a few events suffice to show the
  // body streams after the headers.
  while (got.find("data: 3\n\n") == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << got;
    got.append(buf, n);
  }
  EXPECT_EQ(got.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_NE(got.find("Content-Type: text/event-stream\r\n"), std::string::npos);
  EXPECT_EQ(got.find("Content-Length"), std::string::npos);
  // A second stream is refused while the first is open.
  EXPECT_EQ(Exchange(server.port(), request).substr(0, 12), "HTTP/1.1 503");
  RealClock clock;
  MonoTime start = clock.Monotonic();
  server.Stop();  // ends the open stream
  EXPECT_LT(clock.Monotonic() - start, Duration(2000));
  close(fd);
}

}  // namespace
}  // namespace trainctl::server
