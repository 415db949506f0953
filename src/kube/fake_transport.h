// FakeTransport: a scripted Transport for unit tests of the client. Each request takes the next
// scripted reply in order (a response, a transport error, or for streams a list of body chunks
// and an end); requests are recorded. Test-only; thread-safe.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "kube/transport.h"

namespace trainctl::kube {

struct FakeReply {
  StatusOr<HttpResponse> response = HttpResponse{};
  std::vector<std::string> chunks;  // streams: body pieces delivered to on_data first
};

inline FakeReply Reply(long status, std::string body, std::optional<int> retry_after = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.retry_after_seconds = retry_after;
  return FakeReply{r, {}};
}

class FakeTransport final : public Transport {
 public:
  void Script(FakeReply reply) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.push_back(std::move(reply));
  }
  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  StatusOr<HttpResponse> Do(const HttpRequest& request) override { return Next(request).response; }

  std::shared_ptr<Stream> OpenStream(const HttpRequest& request,
                                     std::function<bool(std::string_view)> on_data,
                                     std::function<void(StatusOr<HttpResponse>)> on_done) override {
    FakeReply reply = Next(request);
    if (reply.response.ok() && reply.response->status >= 200 && reply.response->status < 300) {
      for (const std::string& chunk : reply.chunks)
        if (!on_data(chunk)) break;
    }
    on_done(reply.response);
    return std::make_shared<NoopStream>();
  }

  long ConnectionsOpened() const override { return 0; }

 private:
  struct NoopStream : Stream {
    void Cancel() override {}
  };
  FakeReply Next(const HttpRequest& request) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (replies_.empty()) return FakeReply{UnavailableError("no scripted reply"), {}};
    FakeReply r = std::move(replies_.front());
    replies_.pop_front();
    return r;
  }
  mutable std::mutex mu_;
  std::deque<FakeReply> replies_;
  std::vector<HttpRequest> requests_;
};

}  // namespace trainctl::kube
