// Transport: requests and watch streams to one API server over libcurl (HTTP/1.1 and HTTP/2).
//
// One Transport owns one curl multi handle and one I/O thread, which carry every watch stream
// of the process on shared TLS connections (HTTP/2 multiplexing: many watches on one
// connection). OpenStream() delivers the body of a long-running response (a watch) chunk by
// chunk on the I/O thread until the server closes it, it fails, or the caller cancels it.
//
// Do() blocks the calling thread until the response is complete. It runs the request on that
// thread, over one of at most `direct_connections` HTTP/1.1 keep-alive connections, each used
// by one request at a time: no hand-over to the I/O thread and back, and no HTTP/2 framing, which
// together cost a request about as much CPU again (docs/benchmarks.md). When all of those are
// busy, a request goes through the I/O thread like a stream. Destroying the transport cancels
// its streams and the requests on the I/O thread, and stops a request running on a caller's
// thread at its next progress call (within about a second once it is sending or waiting; a
// credentials callback that is still running is waited for). It waits until every Do() that
// holds a direct connection has returned.
//
// libcurl sends a request again on a new connection when a connection it reused closes before
// any byte of the answer, as a keep-alive connection the server closed while idle does; so a create
// can be sent twice if the server applied it and the connection then died before it answered (the
// second gets AlreadyExists). Connections idle for 60 s are not reused, below the API server's
// own idle timeout of 90 s.
//
// Credentials come from a callback per request, so rotated tokens and exec plugins are picked
// up; a 401 calls `on_unauthorized` and the request is retried once. `Warning:` response
// headers are collected on the response and passed to `on_warning`, which may run on any
// thread, several at once.
//
// Thread-safe: all public methods may be called from any thread. Callbacks given to
// OpenStream run on the I/O thread and must not block.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::kube {

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;            // absolute path with query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type;  // of the body; empty when there is none
  std::string accept = "application/json";
  Duration timeout{30000};   // whole request; zero = none (streams)
  Duration idle_timeout{0};  // abort when nothing arrives for this long; zero = none
  // Room made for the answer's body when its first byte comes (a larger body still fits), so a
  // big body is not copied each time it outgrows its buffer; e.g. the size of the list page
  // before. Zero = the body grows as it comes.
  size_t body_size_hint = 0;
  // More headers, sent as given ("X-Name", "value"); names and values must not hold CR or LF.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpResponse {
  long status = 0;
  std::string body;  // the whole body (Do), or the error body of a failed stream
  std::vector<std::string> warnings;
  std::optional<int> retry_after_seconds;
};

// What the transport authenticates with, fetched for every request.
struct Credentials {
  std::string bearer_token;  // empty = none
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct TransportConfig {
  std::string server;  // "https://127.0.0.1:6443"
  std::string ca_pem;  // empty = system trust store
  bool insecure_skip_tls_verify = false;
  // The name the server's certificate is checked against (and sent as SNI) when it differs from
  // the host in `server`, e.g. "kubernetes.default.svc" for an IP address. Empty = the host.
  std::string tls_server_name;
  std::string proxy_url;
  std::string user_agent = "trainctl";
  Duration connect_timeout{10000};
  // Connections that Do() may hold open for requests on their callers' threads (see above);
  // 0 = every request goes through the I/O thread.
  size_t direct_connections = 8;
  std::function<StatusOr<Credentials>()> credentials;  // may be empty (anonymous)
  std::function<void()> on_unauthorized;               // e.g. re-run the exec plugin
  std::function<void(const std::string&)> on_warning;  // each `Warning:` header
};

// A long-running response being read. Destroying it does not cancel; call Cancel().
class Stream {
 public:
  virtual ~Stream() = default;
  // Stops reading; `on_done` is then called with a kCancelled status (once, as always).
  virtual void Cancel() = 0;
};

class Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(TransportConfig config);
  virtual ~Transport() = default;

  // Sends the request and waits for the whole response. A non-2xx status is not an error
  // here (the REST layer maps it); transport failures are kUnavailable/kDeadlineExceeded.
  virtual StatusOr<HttpResponse> Do(const HttpRequest& request) = 0;

  // Starts a streaming request. When the response status is 2xx, `on_data` receives the body
  // as it arrives (return false to stop). `on_done` is called exactly once at the end with the
  // response (status, warnings; the body only for non-2xx) or with the transport error.
  virtual std::shared_ptr<Stream> OpenStream(
      const HttpRequest& request, std::function<bool(std::string_view)> on_data,
      std::function<void(StatusOr<HttpResponse>)> on_done) = 0;

  // Number of TCP connections curl has opened so far: the I/O thread's (HTTP/2 multiplexing
  // keeps them low) and Do()'s (at most `direct_connections` at a time, each kept alive).
  virtual long ConnectionsOpened() const = 0;
};

}  // namespace trainctl::kube
