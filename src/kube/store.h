// Store<T>: an informer cache. It consumes a Reflector's lists and events, keeps a compact
// projection T of each object (not the JSON document), maintains secondary indexes, and tells
// handlers what changed — including deletes synthesized when a relist no longer contains an
// object (it vanished while the watch was broken).
//
// T is produced by a projector `std::optional<T>(const json&)` (nullopt = do not cache) and must
// be copyable. A page projector and an event projector, when set, project a relist's pages and
// watch events straight from their text (without a document; same results). Keys
// are "<namespace>/<name>" (or "<name>" for cluster-scoped objects). Indexers map an object to
// index values (e.g. its controller owner's UID, a label value).
//
// Thread-safe: the Reflector thread writes; any thread may read (copies are returned, or
// VisitIndex visits in place under the lock).
// Handlers run on the writer's thread after the store is updated, without the store's lock.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/reflector.h"

namespace trainctl::kube {

// "<namespace>/<name>", or "<name>" when there is no namespace; empty when there is no name.
std::string ObjectKey(const nlohmann::json& object);

template <typename T>
class Store final : public ReflectorConsumer {
 public:
  using Projector = std::function<std::optional<T>(const nlohmann::json&)>;
  using Indexer = std::function<std::vector<std::string>(const T&)>;
  // Projects a whole list page from its body: (key, value) of each object to cache, or nullopt
  // when it cannot (the page is then parsed and projected one object at a time).
  using PageProjector =
      std::function<std::optional<std::vector<std::pair<std::string, T>>>(std::string_view body)>;
  // Reads one watch event from its text (WatchEvent::text): the object's key and projection, or
  // nullopt when it cannot (the event is then decoded and given to the projector).
  using EventProjector =
      std::function<std::optional<EventProjection<T>>(std::string_view event_text)>;
  struct Handlers {
    std::function<void(const std::string& key, const T&)> on_add;
    std::function<void(const std::string& key, const T& old_value, const T& new_value)> on_update;
    std::function<void(const std::string& key, const T&)> on_delete;
  };

  explicit Store(Projector projector) : projector_(std::move(projector)) {}

  // Register before the reflector starts.
  void AddIndexer(const std::string& name, Indexer indexer) {
    indexers_[name] = std::move(indexer);
  }
  void SetHandlers(Handlers handlers) { handlers_ = std::move(handlers); }
  // Optional; register before the reflector starts. It must project as `projector` does.
  void SetPageProjector(PageProjector page_projector) {
    page_projector_ = std::move(page_projector);
  }
  // Optional; register before the reflector starts. It must key and project as ObjectKey and
  // `projector` do.
  void SetEventProjector(EventProjector event_projector) {
    event_projector_ = std::move(event_projector);
  }

  std::optional<T> Get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<T> List() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<T> out;
    out.reserve(items_.size());
    for (const auto& [key, value] : items_) out.push_back(value);
    return out;
  }
  std::vector<T> ByIndex(const std::string& index, const std::string& value) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<T> out;
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return out;
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return out;
    for (const Entry* entry : keys->second) out.push_back(entry->second);
    return out;
  }
  // Calls `visit(const T&)` for each object with that index value, under the store's lock and
  // without copying: `visit` must be quick and must not call into this store.
  template <typename Visit>
  void VisitIndex(const std::string& index, const std::string& value, Visit&& visit) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto idx = indexes_.find(index);
    if (idx == indexes_.end()) return;
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return;
    for (const Entry* entry : keys->second) visit(entry->second);
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }

  void Replace(std::vector<nlohmann::json> objects, const std::string& resource_version) override {
    ReplaceBegin();
    ReplacePage(std::move(objects));
    ReplaceEnd(resource_version);
  }
  // A relist a page at a time (the reflector's thread): each page is projected as it comes, so
  // only the projections of the whole list are held, never its documents.
  void ReplaceBegin() override { fresh_.clear(); }
  void ReplacePage(std::vector<nlohmann::json> objects) override {
    for (const nlohmann::json& object : objects) {
      std::string key = ObjectKey(object);
      if (key.empty()) continue;
      if (std::optional<T> value = projector_(object)) fresh_.emplace(key, std::move(*value));
    }
  }
  std::optional<size_t> ReplaceRawPage(std::string_view body) override {
    if (!page_projector_) return std::nullopt;
    std::optional<std::vector<std::pair<std::string, T>>> page = page_projector_(body);
    if (!page) return std::nullopt;
    for (auto& [key, value] : *page) fresh_.emplace(std::move(key), std::move(value));
    return page->size();
  }
  void ReplaceEnd(const std::string&) override {
    std::map<std::string, T> fresh = std::move(fresh_);
    fresh_.clear();
    std::vector<std::string> gone;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [key, value] : items_)
        if (!fresh.count(key)) gone.push_back(key);
    }
    for (const std::string& key : gone) Remove(key);
    for (auto& [key, value] : fresh) Upsert(key, std::move(value));
  }

  void Apply(WatchEventType type, nlohmann::json object) override {
    std::string key = ObjectKey(object);
    if (key.empty() || type == WatchEventType::kDeleted) return Take(type, key, std::nullopt);
    Take(type, key, projector_(object));
  }
  bool ApplyRaw(WatchEventType type, std::string_view event_text) override {
    if (!event_projector_) return false;
    std::optional<EventProjection<T>> event = event_projector_(event_text);
    if (!event) return false;
    Take(type, event->key, std::move(event->value));
    return true;
  }

 private:
  using Entry = std::pair<const std::string, T>;

  // `entry` is the element of items_ (its address is what the indexes hold: stable until it is
  // erased, rehashing included); `value` gives the index values (the entry's own, or its old
  // one while it is being replaced).
  void Index(const Entry* entry, const T& value, bool add) {
    for (const auto& [name, indexer] : indexers_) {
      for (const std::string& v : indexer(value)) {
        auto& entries = indexes_[name][v];
        if (add) {
          entries.insert(entry);
        } else {
          entries.erase(entry);
          if (entries.empty()) indexes_[name].erase(v);
        }
      }
    }
  }

  // One event's object, keyed and projected.
  void Take(WatchEventType type, const std::string& key, std::optional<T> value) {
    if (key.empty()) return;
    if (type != WatchEventType::kDeleted && value)
      Upsert(key, std::move(*value));
    else
      Remove(key);  // deleted, or no longer of interest (e.g. a label changed)
  }

  void Upsert(const std::string& key, T value) {
    std::optional<T> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it != items_.end()) {
        old = std::move(it->second);
        Index(&*it, *old, false);
        it->second = value;
      } else {
        it = items_.emplace(key, value).first;
      }
      Index(&*it, it->second, true);
    }
    if (old && handlers_.on_update) handlers_.on_update(key, *old, value);
    if (!old && handlers_.on_add) handlers_.on_add(key, value);
  }

  void Remove(const std::string& key) {
    std::optional<T> old;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = items_.find(key);
      if (it == items_.end()) return;
      old = std::move(it->second);
      Index(&*it, *old, false);
      items_.erase(it);
    }
    if (handlers_.on_delete) handlers_.on_delete(key, *old);
  }

  Projector projector_;
  PageProjector page_projector_;
  EventProjector event_projector_;
  std::map<std::string, T> fresh_;  // a relist in progress; the reflector's thread only
  std::map<std::string, Indexer> indexers_;
  Handlers handlers_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, T> items_;  // guarded by mu_
  // index name → value → entries of items_ (no lookup, no hashing of the key to read one);
  // guarded by mu_
  std::map<std::string, std::unordered_map<std::string, std::unordered_set<const Entry*>>> indexes_;
};

}  // namespace trainctl::kube
