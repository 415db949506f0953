#include "kube/reflector.h"

#include <algorithm>
#include <chrono>

#include "kube/list_parse_scope.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

}  // namespace

Reflector::Reflector(Client* client, Resource resource, ReflectorOptions options,
                     ReflectorConsumer* consumer)
    : client_(client),
      resource_(std::move(resource)),
      options_(std::move(options)),
      consumer_(consumer),
      backoff_(options_.min_backoff) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Reflector::Stop() {
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_) stream_->Cancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Reflector::WaitForSync(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return synced_.load() || stopping_.load(); }) &&
         synced_.load();
}

ReflectorStats Reflector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string Reflector::last_resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resource_version_;
}

void Reflector::Fail(const Status& st) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.errors++;
  stats_.last_error = st.message();
}

void Reflector::Backoff() {
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  Duration wait(static_cast<long long>(backoff_.count() * jitter(rng_)));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [this] { return stopping_.load(); });
}

Status Reflector::ListAndReplace() {
  ListParseScope parse_scope;  // one parser's buffers for every page of this list
  ListOptions list;
  list.label_selector = options_.label_selector;
  list.field_selector = options_.field_selector;
  list.limit = options_.page_size;
  auto began = std::chrono::steady_clock::now();
  long objects = 0, pages = 0;
  auto count = [&](size_t page_objects) {
    objects += static_cast<long>(page_objects);
    pages++;
  };
  consumer_->ReplaceBegin();
  StatusOr<std::string> rv = client_->ListPages(
      resource_, options_.namespace_, list,
      [&](std::vector<json> page) {
        count(page.size());
        consumer_->ReplacePage(std::move(page));
      },
      [&] {
        objects = 0;
        consumer_->ReplaceBegin();
      },
      [&](std::string_view body) {
        std::optional<size_t> taken = consumer_->ReplaceRawPage(body);
        if (!taken) return false;
        count(*taken);
        return true;
      });
  if (!rv.ok()) return rv.status();
  consumer_->ReplaceEnd(*rv);
  {
    std::lock_guard<std::mutex> lock(mu_);
    resource_version_ = *rv;
    stats_.lists++;
    stats_.last_list_objects = objects;
    stats_.last_list_pages = pages;
    stats_.last_list_time =
        std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - began);
  }
  synced_ = true;
  cv_.notify_all();
  return Status::Ok();
}

Reflector::WatchEnd Reflector::WatchOnce() {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<WatchEvent> events;
    bool done = false;
    Status end;
  };
  auto shared = std::make_shared<Shared>();
  ListOptions watch;
  watch.label_selector = options_.label_selector;
  watch.field_selector = options_.field_selector;
  watch.resource_version = last_resource_version();
  watch.timeout_seconds = options_.watch_timeout_seconds;
  std::shared_ptr<Stream> stream = client_->Watch(
      resource_, options_.namespace_, watch,
      [shared](WatchEvent event) {
        {
          std::lock_guard<std::mutex> lock(shared->mu);
          shared->events.push_back(std::move(event));
        }
        shared->cv.notify_one();
        return Status::Ok();
      },
      [shared](Status end) {
        {
          std::lock_guard<std::mutex> lock(shared->mu);
          shared->done = true;
          shared->end = std::move(end);
        }
        shared->cv.notify_one();
      });
  {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = stream;
    stats_.watches++;
  }
  if (stopping_) stream->Cancel();

  for (;;) {
    std::deque<WatchEvent> batch;
    bool done;
    Status end;
    {
      std::unique_lock<std::mutex> lock(shared->mu);
      shared->cv.wait(lock, [&] { return !shared->events.empty() || shared->done; });
      batch.swap(shared->events);
      done = shared->done;
      end = shared->end;
    }
    Status broken;
    for (WatchEvent& event : batch) {
      if (event.type != WatchEventType::kBookmark && !consumer_->ApplyRaw(event.type, event.text)) {
        nlohmann::json object = WatchEventObject(event);
        if (object.is_discarded()) {
          // Checked by ParseWatchEvent, so not expected; the watch starts again from the last
          // event applied rather than skip this one.
          broken = InternalError("watch " + resource_.plural +
                                 ": an event could not be decoded: " + event.text.substr(0, 120));
          break;
        }
        consumer_->Apply(event.type, std::move(object));
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!event.resource_version.empty()) resource_version_ = event.resource_version;
      if (event.type != WatchEventType::kBookmark) stats_.events++;
    }
    if (!batch.empty() && broken.ok()) backoff_ = options_.min_backoff;  // the stream works
    if (!broken.ok() && !done) {
      stream->Cancel();
      std::unique_lock<std::mutex> lock(shared->mu);
      shared->cv.wait(lock, [&] { return shared->done; });
      done = true;
    }
    if (!broken.ok()) end = broken;
    if (!done) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stream_.reset();
    }
    if (stopping_) return WatchEnd::kStopped;
    if (end.ok()) return WatchEnd::kClosed;
    if (end.code() == StatusCode::kGone) return WatchEnd::kGone;
    Fail(end);
    return WatchEnd::kFailed;
  }
}

void Reflector::Run() {
  bool need_list = true;
  while (!stopping_) {
    if (need_list) {
      Status st = ListAndReplace();
      if (!st.ok()) {
        Fail(st);
        Backoff();
        continue;
      }
      need_list = false;
      backoff_ = options_.min_backoff;
    }
    auto began = std::chrono::steady_clock::now();
    long events_before = stats().events;
    switch (WatchOnce()) {
      case WatchEnd::kClosed:
        // A server that ends every watch at once, with nothing in it, must not be hammered.
        if (stats().events == events_before &&
            std::chrono::steady_clock::now() - began < std::chrono::seconds(1))
          Backoff();
        break;
      case WatchEnd::kGone: {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.relists_after_gone++;
        need_list = true;
        break;
      }
      case WatchEnd::kFailed:
        Backoff();
        break;
      case WatchEnd::kStopped:
        return;
    }
  }
}

}  // namespace trainctl::kube
