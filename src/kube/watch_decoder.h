// Decoding a watch response body: newline-delimited JSON events that arrive in arbitrary
// chunks (an event can be split across chunks, a chunk can hold several events).
//
// Pure and single-threaded: one LineSplitter per stream. ParseWatchEvent is thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
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

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for kError the API Status object
};

// One line of a watch stream. Malformed JSON, a missing or unknown type, or a missing object
// is kInternal with the reason and the start of the line.
StatusOr<WatchEvent> ParseWatchEvent(std::string_view line);

// For a kError event: the Status it carries (kGone for 410/Expired, …).
Status WatchErrorStatus(const WatchEvent& event, const std::string& what);

}  // namespace trainctl::kube
