// OpenAcceptor: a listening TCP socket for the operator's HTTP and HTTPS servers, bound to
// "[host]:port" (":8080" = every address; port 0 picks a free one; "[::1]:9443" for IPv6).
// Errors name the address. Thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

#include "common/status.h"

namespace trainctl::op {

StatusOr<std::unique_ptr<boost::asio::ip::tcp::acceptor>> OpenAcceptor(
    boost::asio::io_context& io, const std::string& address);

}  // namespace trainctl::op
