#include "server/tls_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>

#include "common/clock.h"
#include "server/beast_message.h"
#include "server/connection_deadlines.h"
#include "server/listener.h"

namespace trainctl::server {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct TlsServer::Impl {
  RealClock clock;
  ConnectionDeadlines deadlines{clock};
  Listener listener;
  std::mutex mu;
  std::shared_ptr<ssl::context> context;  // guarded by mu
};

TlsServer::TlsServer() : impl_(std::make_unique<Impl>()) {}
TlsServer::~TlsServer() { Stop(); }

Status TlsServer::SetCertificate(const std::string& cert_pem, const std::string& key_pem) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!ec) context->use_certificate_chain(asio::buffer(cert_pem), ec);
  if (!ec) context->use_private_key(asio::buffer(key_pem), ssl::context::pem, ec);
  if (ec) return InvalidError("webhook certificate: " + ec.message());
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->context = std::move(context);
  return Status::Ok();
}

Status TlsServer::Start(const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->context) return FailedPreconditionError("webhook server: no certificate yet");
  }
  return impl_->listener.Start(address, [this](tcp::socket socket) {
    boost::system::error_code ec;
    int fd = socket.release(ec);
    if (ec) return;
    // A flood of connections gets refused, not a thread each.
    if (open_ >= kMaxTlsConnections) {
      ::close(fd);
      return;
    }
    ++open_;
    std::thread([this, fd] {
      ServeConnection(fd);
      --open_;
    }).detach();
  });
}

void TlsServer::ServeConnection(int fd) {
  std::shared_ptr<ssl::context> context;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    context = impl_->context;
  }
  // Blocking I/O: an idle or silent client is dropped after 10 s by the socket timeouts.
  struct timeval tv {
    10, 0
  };
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  asio::io_context io;
  ssl::stream<tcp::socket> stream(io, *context);
  boost::system::error_code ec;
  stream.lowest_layer().assign(tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  // Declared after the stream: clears the deadline before the stream closes the descriptor.
  DeadlineScope deadline(impl_->deadlines, fd);
  auto step_deadline = [&] { return impl_->clock.Monotonic() + kTlsRequestDeadline; };
  impl_->deadlines.Set(fd, step_deadline());
  stream.handshake(ssl::stream_base::server, ec);
  if (ec) return;
  beast::flat_buffer buffer;
  while (!impl_->listener.stopping()) {
    impl_->deadlines.Set(fd, step_deadline());  // waiting for, reading and answering a request
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxTlsHeaderBytes);
    parser.body_limit(kMaxTlsBodyBytes);
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      http::response<http::string_body> too_large{http::status::payload_too_large, 11};
      too_large.keep_alive(false);
      too_large.body() =
          "request body larger than " + std::to_string(kMaxTlsBodyBytes >> 20) + " MiB\n";
      too_large.prepare_payload();
      http::write(stream, too_large, ec);
      break;
    }
    if (ec) break;
    http::response<http::string_body> response = Serve(router_, parser.get(), /*keep_alive=*/true);
    http::write(stream, response, ec);
    if (ec || !response.keep_alive()) break;
  }
  stream.shutdown(ec);
}

void TlsServer::Stop() {
  impl_->listener.Stop();
  impl_->deadlines.Enforce(MonoTime::max());  // cut open connections now
  for (int i = 0; i < 100 && open_ > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

int TlsServer::port() const { return impl_->listener.port(); }

}  // namespace trainctl::server
