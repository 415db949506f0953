#include "server/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "server/beast_message.h"
#include "server/connection_deadlines.h"
#include "server/listener.h"

namespace trainctl::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One request, one response by `deadline`, then the connection is closed. The deadline is
// cleared (scope) before the socket, a parameter, is closed.
void ServeRequest(const Router& router, ConnectionDeadlines& deadlines, MonoTime deadline,
                  tcp::socket socket) {
  deadlines.Set(socket.native_handle(), deadline);
  DeadlineScope scope(deadlines, socket.native_handle());
  boost::system::error_code ec;
  struct timeval tv {
    5, 0
  };
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  parser.header_limit(kMaxHttpHeaderBytes);
  parser.body_limit(kMaxHttpBodyBytes);
  http::read(socket, buffer, parser, ec);
  BeastResponse response;
  if (ec == http::error::body_limit) {
    BeastRequest head = parser.release();
    response = ToBeast(Response::Text(413, "request body larger than " +
                                               std::to_string(kMaxHttpBodyBytes >> 10) + " KiB\n"),
                       head, false);
  } else if (ec) {
    return;
  } else {
    response = Serve(router, parser.get(), /*keep_alive=*/false);
  }
  http::write(socket, response, ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

}  // namespace

struct HttpServer::Impl {
  RealClock clock;
  ConnectionDeadlines deadlines{clock};
  std::mutex mu;
  std::condition_variable idle;
  int open = 0;  // guarded by mu
  Listener listener;
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() { Stop(); }

StatusOr<std::pair<std::string, int>> ParseBindAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    return InvalidError("bind address \"" + address + "\": expected [host]:port");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::string port_text = address.substr(colon + 1);
  int port = -1;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return InvalidError("bind address \"" + address + "\": port must be 0-65535");
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, port);
}

Status HttpServer::Start(const std::string& address) {
  if (address == "0") return Status::Ok();
  return impl_->listener.Start(address, [this](tcp::socket socket) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->open >= kMaxHttpConnections) return;  // the socket closes here
      ++impl_->open;
    }
    std::thread([this, socket = std::move(socket)]() mutable {
      ServeRequest(router_, impl_->deadlines, impl_->clock.Monotonic() + kHttpRequestDeadline,
                   std::move(socket));  // closes the socket
      std::lock_guard<std::mutex> lock(impl_->mu);
      --impl_->open;
      impl_->idle.notify_all();
    }).detach();
  });
}

void HttpServer::Stop() {
  impl_->listener.Stop();
  impl_->deadlines.Enforce(MonoTime::max());
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [this] { return impl_->open == 0; });
}

int HttpServer::port() const { return impl_->listener.port(); }

}  // namespace trainctl::server
