#include "operator/listener.h"

#include "operator/http_server.h"

namespace trainctl::op {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

StatusOr<std::unique_ptr<tcp::acceptor>> OpenAcceptor(asio::io_context& io,
                                                      const std::string& address) {
  auto parsed = ParseBindAddress(address);
  if (!parsed.ok()) return parsed.status();
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(parsed->first, ec);
  if (ec) return InvalidError("bind address \"" + address + "\": " + ec.message());
  tcp::endpoint endpoint(ip, static_cast<unsigned short>(parsed->second));
  auto acceptor = std::make_unique<tcp::acceptor>(io);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("cannot listen on " + address + ": " + ec.message());
  return acceptor;
}

}  // namespace trainctl::op
