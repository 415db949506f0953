#include "operator/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>

#include "operator/listener.h"

namespace trainctl::op {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Impl {
  asio::io_context io;
  std::unique_ptr<tcp::acceptor> acceptor;
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

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
  StatusOr<std::unique_ptr<tcp::acceptor>> acceptor = OpenAcceptor(impl_->io, address);
  if (!acceptor.ok()) return acceptor.status();
  port_ = (*acceptor)->local_endpoint().port();
  impl_->acceptor = std::move(*acceptor);
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpServer::Serve() {
  while (!stopping_) {
    tcp::socket socket(impl_->io);
    boost::system::error_code ec;
    impl_->acceptor->accept(socket, ec);
    if (ec) {
      if (stopping_) return;
      continue;
    }
    // A client that sends nothing must not hold the server: 5 s receive timeout.
    struct timeval tv{5, 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request, ec);
    if (ec) continue;
    http::response<http::string_body> response;
    response.version(request.version());
    response.keep_alive(false);
    std::string target(request.target());
    target = target.substr(0, target.find('?'));
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      response.result(http::status::method_not_allowed);
      response.body() = "method not allowed\n";
    } else if (auto h = handlers_.find(target); h != handlers_.end()) {
      HttpReply reply = h->second();
      response.result(static_cast<unsigned>(reply.status));
      response.set(http::field::content_type, reply.content_type);
      if (request.method() == http::verb::get) response.body() = std::move(reply.body);
    } else {
      response.result(http::status::not_found);
      response.body() = "404 page not found\n";
    }
    response.prepare_payload();
    http::write(socket, response, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (impl_->acceptor) {
    boost::system::error_code ec;
    // Closing from another thread does not reliably wake accept(); shut the fd down first.
    ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
    impl_->acceptor->close(ec);
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace trainctl::op
