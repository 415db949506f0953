// Decoding a watch response body: newline-delimited JSON events that arrive in arbitrary
// chunks (an event can be split across chunks, a chunk can hold several events).
//
// Pure and single-threaded: one LineSplitter per stream. ParseWatchEvent is thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainctl::kube {

// Reassembles lines from chunks. A line longer than `max_line` bytes is an error (a broken or
// hostile server must not make us buffer without bound).
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = 64u << 20) : max_line_(max_line) {}

  // Calls `on_line` for every complete line in order (without the '\n'; empty lines skipped).
  // Stops early and returns the callback's status if it fails.
  Status Feed(std::string_view chunk, const std::function<Status(std::string_view)>& on_line);

  // Bytes of an incomplete line held back (non-zero at the end of a stream = cut mid-line).
  size_t pending() const { return partial_.size(); }

 private:
  size_t max_line_;
  std::string partial_;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* WatchEventTypeName(WatchEventType type);

// One event, kept as the text the server sent: a cache that reads events straight from their
// text (Store::SetEventProjector) never builds a document of it; WatchEventObject builds one.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::string resource_version;  // the object's metadata.resourceVersion; "" when it has none
  std::string text;  // the whole event, {"type":…,"object":{…}}; for kError the object is a Status
};

// One line of a watch stream, checked and read with simdjson, or with nlohmann-json where
// simdjson declines (a number beyond 64 bits), so that both accept the same events. Malformed
// JSON, nesting deeper than kMaxApiJsonDepth, a missing or unknown type, or a missing object is
// kInternal with the reason and the start of the line.
StatusOr<WatchEvent> ParseWatchEvent(std::string_view line);

// The event's object as a document; a discarded value (is_discarded()) when the text cannot be
// decoded, which ParseWatchEvent's events can.
nlohmann::json WatchEventObject(const WatchEvent& event);

// For a kError event: the Status it carries (kGone for 410/Expired, …).
Status WatchErrorStatus(const WatchEvent& event, const std::string& what);

// What a cache reads from one watch event's text (Store::SetEventProjector): the object's store
// key ("" when it has no name) and its projection (nullopt: not to be cached).
template <typename T>
struct EventProjection {
  std::string key;
  std::optional<T> value;
};

}  // namespace trainctl::kube
