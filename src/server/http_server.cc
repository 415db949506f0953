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
// A streamed body straight onto the socket.
class SocketSink final : public StreamSink {
 public:
  SocketSink(tcp::socket& socket, std::mutex& mu, std::condition_variable& wake,
             const bool& stopping)
      : socket_(socket), mu_(mu), wake_(wake), stopping_(stopping) {}
  bool Write(std::string_view bytes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }
  bool WaitFor(std::chrono::milliseconds d) override {
    std::unique_lock<std::mutex> lock(mu_);
    return !wake_.wait_for(lock, d, [this] { return stopping_; });
  }

 private:
  tcp::socket& socket_;
  std::mutex& mu_;
  std::condition_variable& wake_;
  const bool& stopping_;
};

// The status line and headers of a streamed response.
std::string StreamHead(const Response& r) {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " +
                     std::string(http::obsolete_reason(static_cast<http::status>(r.status))) +
                     "\r\nContent-Type: " + r.content_type +
                     "\r\nCache-Control: no-cache\r\nConnection: close\r\n";
  for (const auto& [name, value] : r.headers) head += name + ": " + value + "\r\n";
  return head + "\r\n";
}

}  // namespace

struct HttpServer::Impl {
  RealClock clock;
  ConnectionDeadlines deadlines{clock};
  std::mutex mu;
  std::condition_variable idle;
  std::condition_variable wake;  // streams: the server stops
  int open = 0;                  // guarded by mu
  int streams = 0;               // guarded by mu
  bool stopping = false;         // guarded by mu
  Listener listener;
};

void HttpServer::ServeRequest(tcp::socket socket, MonoTime deadline) {
  ConnectionDeadlines& deadlines = impl_->deadlines;
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
    StatusOr<Request> request = FromBeast(parser.get());
    Response routed =
        request.ok() ? router_.Route(*request)
                     : Response::Text(400, "bad request: " + request.status().message() + "\n");
    if (routed.stream) {
      {
        std::lock_guard<std::mutex> lock(impl_->mu);
        if (impl_->streams >= options_.max_streams)
          routed = Response::Text(503, "too many open streams\n");
        else
          ++impl_->streams;
      }
      if (routed.stream) {
        SocketSink sink(socket, impl_->mu, impl_->wake, impl_->stopping);
        if (sink.Write(StreamHead(routed))) {
          deadlines.Clear(socket.native_handle());  // a stream lives as long as its client
          routed.stream(sink);
        }
        std::lock_guard<std::mutex> lock(impl_->mu);
        --impl_->streams;
        socket.shutdown(tcp::socket::shutdown_both, ec);
        return;
      }
    }
    response = ToBeast(routed, parser.get(), /*keep_alive=*/false);
  }
  http::write(socket, response, ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
}

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>()), options_(options) {}
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
      if (impl_->open >= options_.max_connections) return;  // the socket closes here
      ++impl_->open;
    }
    std::thread([this, socket = std::move(socket)]() mutable {
      ServeRequest(std::move(socket),
                   impl_->clock.Monotonic() + kHttpRequestDeadline);  // closes the socket
      std::lock_guard<std::mutex> lock(impl_->mu);
      --impl_->open;
      impl_->idle.notify_all();
    }).detach();
  });
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->listener.Stop();
  impl_->deadlines.Enforce(MonoTime::max());
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->idle.wait(lock, [this] { return impl_->open == 0; });
}

int HttpServer::port() const { return impl_->listener.port(); }

}  // namespace trainctl::server
