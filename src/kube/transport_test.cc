// Transport against a local socket that accepts and never answers: destroying the transport
// stops a request in flight, on a caller's thread or on the I/O thread, and returns it as
// cancelled. (Everything else about the transport is tested against a real API server in
// test/integration/kube_client_test.cc.)
#include "kube/transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

namespace trainctl::kube {
namespace {

// A listening socket on 127.0.0.1; the kernel completes connections into its backlog, and
// nothing ever reads them.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 8) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  // True once a client's connection waits in the backlog.
  bool WaitForConnection() const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 5000) == 1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(TransportTest, DestroyingTheTransportStopsARequestInFlight) {
  for (size_t direct : {size_t{8}, size_t{0}}) {
    SilentServer server;
    ASSERT_NE(server.port(), 0);
    TransportConfig config;
    config.server = "http://127.0.0.1:" + std::to_string(server.port());
    config.direct_connections = direct;  // 8: on the caller's thread; 0: on the I/O thread
    StatusOr<std::unique_ptr<Transport>> created = Transport::Create(config);
    ASSERT_TRUE(created.ok()) << created.status().message();
    std::unique_ptr<Transport> transport = std::move(created).value();
    Transport* raw = transport.get();
    std::promise<StatusOr<HttpResponse>> answer;
    std::future<StatusOr<HttpResponse>> result = answer.get_future();
    std::thread caller([&] {
      HttpRequest request;
      request.path = "/api";
      answer.set_value(raw->Do(request));
    });
    ASSERT_TRUE(server.WaitForConnection()) << "direct connections: " << direct;
    auto start = std::chrono::steady_clock::now();
    transport.reset();  // waits for the request on the caller's thread to stop
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    caller.join();
    StatusOr<HttpResponse> r = result.get();
    EXPECT_EQ(r.status().code(), StatusCode::kCancelled)
        << "direct connections: " << direct << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("GET http://127.0.0.1:"), std::string::npos)
        << r.status().message();
    EXPECT_LT(seconds, 3.0) << "direct connections: " << direct;
  }
}

}  // namespace
}  // namespace trainctl::kube
