#include "server/listener.h"

#include <sys/socket.h>

#include "server/http_server.h"

namespace trainctl::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Status Listener::Start(const std::string& address, OnConnection on_connection) {
  auto parsed = ParseBindAddress(address);
  if (!parsed.ok()) return parsed.status();
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(parsed->first, ec);
  if (ec) return InvalidError("bind address \"" + address + "\": " + ec.message());
  tcp::endpoint endpoint(ip, static_cast<unsigned short>(parsed->second));
  auto acceptor = std::make_unique<tcp::acceptor>(io_);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("cannot listen on " + address + ": " + ec.message());
  port_ = acceptor->local_endpoint().port();
  acceptor_ = std::move(acceptor);
  thread_ = std::thread([this, on_connection = std::move(on_connection)] {
    while (!stopping_) {
      tcp::socket socket(io_);
      boost::system::error_code error;
      acceptor_->accept(socket, error);
      if (error) continue;  // stopping, or a client that went away before accept
      on_connection(std::move(socket));
    }
  });
  return Status::Ok();
}

void Listener::Stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_) {
    boost::system::error_code ec;
    // Closing from another thread does not reliably wake accept(); shut the fd down first.
    ::shutdown(acceptor_->native_handle(), SHUT_RDWR);
    acceptor_->close(ec);
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace trainctl::server
