// Operator logging: one line per message on stderr, either "<RFC 3339 time> <LEVEL> <message>"
// or, with the JSON encoder, {"level":"info","ts":"<RFC 3339>","msg":"<message>"} as zap writes
// it. The options are set once at start-up (SetLogOptions) from upstream's --zap-* flags.
// Thread-safe (one write per line).
#pragma once

#include <fmt/format.h>

#include <string>

#include "common/status.h"

namespace trainctl::op {

struct LogOptions {
  bool json = false;  // --zap-encoder=json (the default unless --zap-devel)
  int min_level = 0;  // zap levels: -1 debug, 0 info, 1 warn, 2 error
};

// Upstream's flags: --zap-devel (console encoder, debug level), --zap-encoder json|console,
// --zap-log-level debug|info|warn|error or a number N (debug output for N > 0, as zap's
// verbosity). kInvalid names the flag and the value.
StatusOr<LogOptions> ParseLogOptions(bool devel, const std::string& encoder,
                                     const std::string& level);

void SetLogOptions(const LogOptions& options);

void LogLine(const char* level, const std::string& message);

template <typename... Args>
void LogInfo(fmt::format_string<Args...> f, Args&&... args) {
  LogLine("INFO", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void LogError(fmt::format_string<Args...> f, Args&&... args) {
  LogLine("ERROR", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace trainctl::op
