// Between Boost.Beast's messages and server::Request/Response, for the servers that move the
// bytes (server/http_server.cc, the operator's TLS webhook server). Serve() is the whole
// request-to-response step: parse the target (400 when it is bad), route, and build Beast's
// response (no body for HEAD; keep-alive as asked and allowed).
#pragma once

#include <boost/beast/http.hpp>

#include "server/http.h"

namespace trainctl::server {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;
using BeastResponse = boost::beast::http::response<boost::beast::http::string_body>;

StatusOr<Request> FromBeast(const BeastRequest& request);
BeastResponse ToBeast(const Response& response, const BeastRequest& request, bool keep_alive);
// Parses, routes and converts. `keep_alive`: whether the server may keep the connection.
BeastResponse Serve(const Router& router, const BeastRequest& request, bool keep_alive);

}  // namespace trainctl::server
