// Follows growing log files and hands out complete lines. Used for the interleaved view of
// `trainctl run` and for `trainctl logs -f`. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace trainctl::local {

// A line that grows past this without a newline (a progress bar redrawn with "\r" for hours)
// is handed out up to its last "\r" (or whole, when it has none): the tailer keeps at most this
// much plus what one poll read, and reads each byte once.
inline constexpr size_t kMaxPartialLineBytes = 1 << 20;

class LogTailer {
 public:
  // Reads what `path` gained since the last call and calls `on_line` for each complete line.
  // With `flush`, a trailing partial line is delivered too (at the end of a run). Returns the
  // number of bytes the file gained (progress bars write no newline, but they do write). Each
  // byte is searched for a newline once.
  size_t Poll(const std::string& key, const std::string& path,
              const std::function<void(const std::string&)>& on_line, bool flush = false);

 private:
  struct State {
    long long offset = 0;
    std::string partial;
    size_t scanned = 0;  // bytes of `partial` known to hold no newline
  };
  std::map<std::string, State> files_;
};

// The last `max_bytes` of the file at `path` at or after byte `from` (where a replica's current
// run began writing to a log it shares with its earlier runs), from a line start where there is
// one; "" when it cannot be read.
std::string ReadLogTail(const std::string& path, size_t max_bytes, long long from = 0);

}  // namespace trainctl::local
