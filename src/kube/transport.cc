// libcurl implementation of Transport (see transport.h). One I/O thread drives the streams
// (and the requests that find no direct connection free) with curl's socket interface
// (curl_multi_socket_action): the thread waits in epoll on the sockets curl asks it to watch
// and on an eventfd, and tells curl which socket is ready, so curl runs only the transfers on
// that connection and does not poll each transfer's socket itself. Callers hand transfers over
// through a queue and wake the thread through the eventfd. Do() first tries a handle of its own
// from a CurlHandlePool and runs the request with curl_easy_perform on the caller's thread.
#include "kube/transport.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "kube/curl_handle_pool.h"

namespace trainctl::kube {
namespace {

constexpr size_t kMaxBufferedBody = 256u << 20;  // a response body larger than this is an error

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// `299 - "text with \"quotes\""` → `text with "quotes"` (RFC 7234 quoted-string); anything
// else is returned as it is.
std::string WarningText(const std::string& value) {
  size_t open = value.find('"');
  size_t close = value.rfind('"');
  if (open == std::string::npos || close == std::string::npos || close <= open) return value;
  std::string out;
  for (size_t i = open + 1; i < close; ++i) {
    if (value[i] == '\\' && i + 1 < close) ++i;
    out += value[i];
  }
  return out;
}

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

class CurlTransport;

struct Transfer final : Stream {
  CurlTransport* owner = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpRequest request;
  HttpResponse response;
  std::function<bool(std::string_view)> on_data;  // set for streams
  std::function<void(StatusOr<HttpResponse>)> on_done;
  std::atomic<bool> cancelled{false};
  bool owns_easy = true;  // false: a CurlHandlePool's handle, lent for one request
  bool stopped_by_reader = false;
  bool body_too_large = false;
  char error[CURL_ERROR_SIZE] = {0};

  ~Transfer() override {
    if (easy && owns_easy) curl_easy_cleanup(easy);
    if (headers) curl_slist_free_all(headers);
  }
  void Cancel() override;
};

class CurlTransport final : public Transport {
 public:
  explicit CurlTransport(TransportConfig config)
      : config_(std::move(config)), direct_(config_.direct_connections) {
    InitCurlOnce();
    base_url_ = config_.server;
    while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
    if (!config_.tls_server_name.empty()) PointAtServerName();
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlTransport::OnSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlTransport::OnTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event wake{};
    wake.events = EPOLLIN;
    wake.data.fd = wake_fd_;
    if (epoll_fd_ < 0 || wake_fd_ < 0 ||
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
      setup_error_ = std::string("cannot set up the transport's event loop: ") + strerror(errno);
      return;  // no thread: Create() reports the error and destroys this
    }
    thread_ = std::thread([this] { Loop(); });
  }

  const std::string& setup_error() const { return setup_error_; }

  ~CurlTransport() override {
    direct_.Close();  // a request running on a caller's thread stops at its next progress call
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) {
      Wake();
      thread_.join();
    }
    curl_multi_cleanup(multi_);
    if (wake_fd_ >= 0) close(wake_fd_);
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (connect_to_) curl_slist_free_all(connect_to_);
  }

  StatusOr<HttpResponse> Do(const HttpRequest& request) override {
    // A direct handle is held for the whole call, its retry included: the destructor waits for
    // it, so nothing below runs on a destroyed transport.
    CurlHandleLease lease(&direct_);
    for (int attempt = 0;; ++attempt) {
      StatusOr<HttpResponse> response = InternalError("no response");
      if (lease.get()) {
        response = DoHere(request, lease.get());
      } else {
        std::promise<StatusOr<HttpResponse>> promise;
        std::future<StatusOr<HttpResponse>> result = promise.get_future();
        Submit(request, nullptr,
               [&promise](StatusOr<HttpResponse> r) { promise.set_value(std::move(r)); });
        response = result.get();
      }
      if (response.ok() && response->status == 401 && attempt == 0 && config_.on_unauthorized) {
        config_.on_unauthorized();
        continue;
      }
      return response;
    }
  }

  std::shared_ptr<Stream> OpenStream(const HttpRequest& request,
                                     std::function<bool(std::string_view)> on_data,
                                     std::function<void(StatusOr<HttpResponse>)> on_done) override {
    auto unauthorized = config_.on_unauthorized;
    return Submit(request, std::move(on_data),
                  [unauthorized, on_done = std::move(on_done)](StatusOr<HttpResponse> r) {
                    if (r.ok() && r->status == 401 && unauthorized) unauthorized();
                    on_done(std::move(r));
                  });
  }

  long ConnectionsOpened() const override { return connections_.load(); }

  void Wake() {
    uint64_t one = 1;
    // A full counter (2^64 - 2 wakes not yet read) still wakes the loop, so EAGAIN is fine.
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }

 private:
  std::shared_ptr<Transfer> Submit(const HttpRequest& request,
                                   std::function<bool(std::string_view)> on_data,
                                   std::function<void(StatusOr<HttpResponse>)> on_done) {
    auto t = std::make_shared<Transfer>();
    t->owner = this;
    t->request = request;
    t->on_data = std::move(on_data);
    t->on_done = std::move(on_done);
    StatusOr<Credentials> credentials = CurrentCredentials();
    if (!credentials.ok()) {
      t->on_done(credentials.status());
      return t;
    }
    Status st = Configure(t.get(), *credentials, curl_easy_init(), /*direct=*/false);
    if (!st.ok()) {
      t->on_done(st);
      return t;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        t->on_done(CancelledError("transport is shutting down"));
        return t;
      }
      pending_.push_back(t);
    }
    Wake();
    return t;
  }

  // Runs `request` on this thread over `handle`'s own connection (HTTP/1.1, kept alive by the
  // handle between requests).
  StatusOr<HttpResponse> DoHere(const HttpRequest& request, CURL* handle) {
    Transfer t;
    t.owner = this;
    t.owns_easy = false;  // the lease gives it back
    t.request = request;
    StatusOr<Credentials> credentials = CurrentCredentials();  // an exec plugin may take seconds
    if (!credentials.ok()) return credentials.status();
    if (direct_.closing()) return CancelledError(Where(request) + ": cancelled");
    Status st = Configure(&t, *credentials, handle, /*direct=*/true);
    if (!st.ok()) return st;
    CURLcode result = curl_easy_perform(handle);
    if (result == CURLE_ABORTED_BY_CALLBACK && direct_.closing()) t.cancelled = true;
    StatusOr<HttpResponse> out = InternalError("no response");
    t.on_done = [&out](StatusOr<HttpResponse> r) { out = std::move(r); };
    Finish(&t, result);
    return out;
  }

  StatusOr<Credentials> CurrentCredentials() const {
    if (!config_.credentials) return Credentials{};
    return config_.credentials();
  }

  std::string Where(const HttpRequest& request) const {
    return request.method + " " + config_.server + request.path;
  }

  // A request on a caller's thread stops when the transport is being destroyed.
  static int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<CurlTransport*>(user)->direct_.closing() ? 1 : 0;
  }

  // Sets `e` up for `t`'s request: direct = on the caller's thread over the handle's own
  // HTTP/1.1 connection; otherwise for the I/O thread's multi handle (HTTP/2, multiplexed).
  Status Configure(Transfer* t, const Credentials& credentials, CURL* e, bool direct) {
    if (!e) return InternalError("curl_easy_init failed");
    t->easy = e;
    const HttpRequest& r = t->request;
    std::string url = base_url_ + r.path;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    if (connect_to_) curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to_);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (direct) {
      curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
      // The API server closes a connection idle for 90 s or more; reuse none idle for 60 s.
      curl_easy_setopt(e, CURLOPT_MAXAGE_CONN, 60L);
      curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);  // OnProgress stops it when closing
      curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &CurlTransport::OnProgress);
      curl_easy_setopt(e, CURLOPT_XFERINFODATA, this);
    } else {
      curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
      curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // wait to multiplex rather than open another
    }
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(config_.connect_timeout.count()));
    if (r.timeout.count() > 0)
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
    if (r.idle_timeout.count() > 0) {
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                       std::max(1L, static_cast<long>(r.idle_timeout.count() / 1000)));
    }
    curl_easy_setopt(e, CURLOPT_USERAGENT, config_.user_agent.c_str());
    if (!config_.proxy_url.empty()) curl_easy_setopt(e, CURLOPT_PROXY, config_.proxy_url.c_str());

    if (config_.insecure_skip_tls_verify) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!config_.ca_pem.empty()) {
      curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(),
                     CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (!credentials.client_cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(credentials.client_cert_pem.data()),
                     credentials.client_cert_pem.size(), CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(credentials.client_key_pem.data()),
                    credentials.client_key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
      curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
    }

    t->headers = curl_slist_append(t->headers, ("Accept: " + r.accept).c_str());
    if (!credentials.bearer_token.empty())
      t->headers = curl_slist_append(t->headers,
                                     ("Authorization: Bearer " + credentials.bearer_token).c_str());
    if (!r.content_type.empty())
      t->headers = curl_slist_append(t->headers, ("Content-Type: " + r.content_type).c_str());
    for (const auto& [name, value] : r.headers)
      if ((name + value).find_first_of("\r\n") == std::string::npos)
        t->headers = curl_slist_append(t->headers, (name + ": " + value).c_str());
    t->headers = curl_slist_append(t->headers, "Expect:");  // no 100-continue round trip
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);

    if (r.method == "GET") {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
      if (!r.body.empty() || r.method != "DELETE") {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      }
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &CurlTransport::OnWrite);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &CurlTransport::OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    return Status::Ok();
  }

  static size_t OnWrite(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    if (t->cancelled.load()) return 0;
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (t->on_data && code >= 200 && code < 300) {
      if (!t->on_data(std::string_view(data, n))) {
        t->stopped_by_reader = true;
        return 0;
      }
      return n;
    }
    if (t->response.body.size() + n > kMaxBufferedBody) {
      t->body_too_large = true;
      return 0;
    }
    if (t->response.body.empty() && t->request.body_size_hint > t->response.body.capacity())
      t->response.body.reserve(std::min(t->request.body_size_hint, kMaxBufferedBody));
    t->response.body.append(data, n);
    return n;
  }

  static size_t OnHeader(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    std::string_view line(data, n);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100 Continue or a redirect)
      t->response.warnings.clear();
      t->response.retry_after_seconds.reset();
    } else if (StartsWithNoCase(line, "warning:")) {
      std::string text = WarningText(Trim(line.substr(8)));
      t->response.warnings.push_back(text);
      if (t->owner->config_.on_warning) t->owner->config_.on_warning(text);
    } else if (StartsWithNoCase(line, "retry-after:")) {
      std::string v = Trim(line.substr(12));
      if (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit) && v.size() < 9)
        t->response.retry_after_seconds = std::stoi(v);
    }
    return n;
  }

  void Finish(Transfer* t, CURLcode result) {
    long connects = 0;
    curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &connects);
    connections_ += connects;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->response.status);
    std::string where = Where(t->request);
    if (t->cancelled.load()) {
      t->on_done(CancelledError(where + ": cancelled"));
    } else if (result == CURLE_OK || (result == CURLE_WRITE_ERROR && t->stopped_by_reader)) {
      t->on_done(std::move(t->response));
    } else if (t->body_too_large) {
      t->on_done(InternalError(where + ": response body larger than " +
                               std::to_string(kMaxBufferedBody >> 20) + " MiB"));
    } else if (result == CURLE_OPERATION_TIMEDOUT) {
      t->on_done(DeadlineExceededError(where + ": " + (t->error[0] ? t->error : "timed out")));
    } else {
      t->on_done(UnavailableError(
          where + ": " +
          (t->error[0] ? std::string(t->error) : std::string(curl_easy_strerror(result)))));
    }
    t->on_done = nullptr;
    t->on_data = nullptr;
  }

  // curl asks for a socket to be watched for `what` (CURL_POLL_IN/OUT/INOUT) or no longer
  // (CURL_POLL_REMOVE). Runs on the I/O thread, inside curl_multi_* calls.
  static int OnSocket(CURL*, curl_socket_t socket, int what, void* user, void*) {
    auto* self = static_cast<CurlTransport*>(user);
    if (what == CURL_POLL_REMOVE) {
      // curl may already have closed it, which removed it from the epoll set.
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, socket, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    ev.data.fd = socket;
    if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, socket, &ev) != 0 && errno == ENOENT)
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, socket, &ev);
    return 0;
  }

  // curl wants CURL_SOCKET_TIMEOUT acted on after `timeout_ms` (0: at once; -1: never).
  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<CurlTransport*>(user);
    if (timeout_ms < 0) {
      self->timer_due_.reset();
    } else {
      self->timer_due_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    }
    return 0;
  }

  // Milliseconds epoll may wait: until curl's timer, at most a second (a safety net only).
  int WaitMillis() const {
    if (!timer_due_) return 1000;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*timer_due_ -
                                                             std::chrono::steady_clock::now());
    return static_cast<int>(std::clamp<long>(left.count(), 0, 1000));
  }

  void FinishDone(std::map<CURL*, std::shared_ptr<Transfer>>& active) {
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURLcode result = msg->data.result;
      auto it = active.find(msg->easy_handle);
      if (it == active.end()) continue;
      std::shared_ptr<Transfer> t = it->second;
      active.erase(it);
      curl_multi_remove_handle(multi_, t->easy);
      Finish(t.get(), result);
    }
  }

  void Loop() {
    std::map<CURL*, std::shared_ptr<Transfer>> active;
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    int running = 0;
    for (;;) {
      int n = epoll_wait(epoll_fd_, events, kMaxEvents, WaitMillis());
      bool woken = false;
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == wake_fd_) {
          uint64_t count;
          while (read(wake_fd_, &count, sizeof count) > 0) {
          }
          woken = true;
          continue;
        }
        int mask = 0;
        if (events[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi_, events[i].data.fd, mask, &running);
      }
      if (woken || n <= 0) {
        std::deque<std::shared_ptr<Transfer>> incoming;
        bool stopping;
        {
          std::lock_guard<std::mutex> lock(mu_);
          incoming.swap(pending_);
          stopping = stopping_;
        }
        for (auto& t : incoming) {
          curl_multi_add_handle(multi_, t->easy);  // sets curl's timer to 0: started below
          active[t->easy] = t;
        }
        for (auto it = active.begin(); it != active.end();) {
          if (stopping) it->second->cancelled = true;
          if (it->second->cancelled.load()) {
            curl_multi_remove_handle(multi_, it->first);
            Finish(it->second.get(), CURLE_ABORTED_BY_CALLBACK);
            it = active.erase(it);
          } else {
            ++it;
          }
        }
        if (stopping) break;
      }
      if (timer_due_ && *timer_due_ <= std::chrono::steady_clock::now()) {
        timer_due_.reset();  // curl sets the next one through OnTimer
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      FinishDone(active);
    }
  }

  // With tls_server_name: the URL names that host (so curl sends it as SNI and verifies the
  // certificate against it) and CONNECT_TO sends the connection to the real host and port.
  void PointAtServerName() {
    CURLU* url = curl_url();
    if (curl_url_set(url, CURLUPART_URL, base_url_.c_str(), 0) == CURLUE_OK) {
      char* host = nullptr;
      char* port = nullptr;
      curl_url_get(url, CURLUPART_HOST, &host, 0);
      curl_url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
      if (host && port) {
        connect_to_ = curl_slist_append(
            nullptr, (config_.tls_server_name + ":" + port + ":" + host + ":" + port).c_str());
        curl_url_set(url, CURLUPART_HOST, config_.tls_server_name.c_str(), 0);
        char* rewritten = nullptr;
        if (curl_url_get(url, CURLUPART_URL, &rewritten, 0) == CURLUE_OK && rewritten) {
          base_url_ = rewritten;
          while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
          curl_free(rewritten);
        }
      }
      curl_free(host);
      curl_free(port);
    }
    curl_url_cleanup(url);
  }

  friend struct Transfer;
  TransportConfig config_;
  CurlHandlePool direct_;  // handles for requests on their callers' threads
  std::string base_url_;
  curl_slist* connect_to_ = nullptr;
  CURLM* multi_ = nullptr;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::string setup_error_;
  std::optional<std::chrono::steady_clock::time_point> timer_due_;  // I/O thread only
  std::thread thread_;
  std::mutex mu_;
  std::deque<std::shared_ptr<Transfer>> pending_;  // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  std::atomic<long> connections_{0};
};

void Transfer::Cancel() {
  cancelled = true;
  owner->Wake();
}

}  // namespace

StatusOr<std::unique_ptr<Transport>> Transport::Create(TransportConfig config) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0)
    return InvalidError("server \"" + config.server + "\": must start with https:// or http://");
  auto transport = std::make_unique<CurlTransport>(std::move(config));
  if (!transport->setup_error().empty()) return UnavailableError(transport->setup_error());
  return std::unique_ptr<Transport>(std::move(transport));
}

}  // namespace trainctl::kube
