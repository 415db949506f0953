// Follows growing log files and hands out complete lines. Used for the interleaved view of
// `trainctl run` and for `trainctl logs -f`. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace trainctl::local {

class LogTailer {
 public:
  // Reads what `path` gained since the last call and calls `on_line` for each complete line.
  // With `flush`, a trailing partial line is delivered too (at the end of a run).
  void Poll(const std::string& key, const std::string& path,
            const std::function<void(const std::string&)>& on_line, bool flush = false);

 private:
  struct State {
    long long offset = 0;
    std::string partial;
  };
  std::map<std::string, State> files_;
};

}  // namespace trainctl::local
