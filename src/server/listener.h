// Listener: the accept loop shared by the operator's HTTP (metrics, probes) and HTTPS (webhook)
// servers. Start() binds "[host]:port" (":8080" = every address; port 0 picks a free one;
// "[::1]:9443" for IPv6) and hands each accepted socket to `on_connection` on its own accept
// thread; Stop() closes the listener and joins that thread. Errors name the address.
// Start/Stop from one thread; port() after a successful Start.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace trainctl::server {

class Listener {
 public:
  using OnConnection = std::function<void(boost::asio::ip::tcp::socket)>;
  ~Listener() { Stop(); }

  Status Start(const std::string& address, OnConnection on_connection);
  void Stop();
  bool stopping() const { return stopping_; }
  int port() const { return port_; }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int port_ = 0;
};

}  // namespace trainctl::server
