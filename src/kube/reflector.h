// Reflector: keeps a consumer in sync with one resource type (optionally one namespace and a
// label selector) through list + watch, the way every controller's cache is fed.
//
//   list (paged) → Replace(all objects) → watch from the list's resourceVersion → Apply(event)…
//
// - When the watch ends normally (server timeout), it watches again from the last
//   resourceVersion seen (a BOOKMARK counts).
// - When the server says the resourceVersion is too old (410 Gone as an HTTP status or as an
//   ERROR event mid-stream), it lists again; the consumer's Replace sees the new full set, so
//   objects that vanished meanwhile are reported as deleted (see Store).
// - Other failures (connection refused, API server restarting, malformed events) retry with
//   jittered exponential back-off (0.5 s doubling to 30 s); nothing is skipped: the next list or
//   watch resumes from what was last applied.
//
// The consumer's callbacks run on the reflector's own thread, one at a time, never on the
// transport thread. Start() spawns that thread; Stop() (or the destructor) cancels the stream
// and joins it. HasSynced() turns true after the first successful list.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kube/client.h"

namespace trainctl::kube {

class ReflectorConsumer {
 public:
  virtual ~ReflectorConsumer() = default;
  // The complete current set of objects (after a list). Objects not in it are gone.
  virtual void Replace(std::vector<nlohmann::json> objects,
                       const std::string& resource_version) = 0;
  // The same set a page at a time, so that a consumer that keeps a projection never holds the
  // whole list's documents: ReplaceBegin (again when the list starts over), ReplacePage for each
  // page, ReplaceEnd. The reflector relists this way.
  virtual void ReplaceBegin() = 0;
  virtual void ReplacePage(std::vector<nlohmann::json> objects) = 0;
  // Optionally, a page as the server sent it (the list's body), to be projected without a
  // document: returns how many objects it took, or nullopt to have it parsed and given to
  // ReplacePage instead.
  virtual std::optional<size_t> ReplaceRawPage(std::string_view) { return std::nullopt; }
  virtual void ReplaceEnd(const std::string& resource_version) = 0;
  // One ADDED / MODIFIED / DELETED event.
  virtual void Apply(WatchEventType type, nlohmann::json object) = 0;
  // Optionally, the same event as its text (WatchEvent::text), to be read without a document:
  // true when taken, false to have it decoded and given to Apply instead.
  virtual bool ApplyRaw(WatchEventType, std::string_view) { return false; }
};

struct ReflectorOptions {
  std::string namespace_;  // empty = all namespaces
  std::string label_selector;
  std::string field_selector;
  int page_size = 500;
  int watch_timeout_seconds = 300;  // the server ends each watch after about this long
  Duration min_backoff{500};
  Duration max_backoff{30000};
};

struct ReflectorStats {
  long lists = 0;
  long watches = 0;
  long events = 0;
  long relists_after_gone = 0;
  long errors = 0;
  std::string last_error;
  // The last complete list: objects, requests (pages), and its wall time.
  long last_list_objects = 0;
  long last_list_pages = 0;
  Duration last_list_time{0};
};

class Reflector {
 public:
  Reflector(Client* client, Resource resource, ReflectorOptions options,
            ReflectorConsumer* consumer);
  ~Reflector();

  void Start();
  void Stop();
  bool HasSynced() const { return synced_.load(); }
  // Blocks until synced or `timeout`; true when synced.
  bool WaitForSync(Duration timeout);
  ReflectorStats stats() const;
  std::string last_resource_version() const;
  const Resource& resource() const { return resource_; }

 private:
  enum class WatchEnd { kClosed, kGone, kFailed, kStopped };
  void Run();
  Status ListAndReplace();
  WatchEnd WatchOnce();
  void Backoff();
  void Fail(const Status& st);

  Client* client_;
  Resource resource_;
  ReflectorOptions options_;
  ReflectorConsumer* consumer_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::mt19937 rng_{std::random_device{}()};
  Duration backoff_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Stream> stream_;  // guarded by mu_
  std::string resource_version_;    // guarded by mu_
  ReflectorStats stats_;            // guarded by mu_
};

}  // namespace trainctl::kube
