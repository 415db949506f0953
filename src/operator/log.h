// Operator logging: one line per message on stderr, "<RFC 3339 time> <LEVEL> <message>".
// Thread-safe (one write per line).
#pragma once

#include <fmt/format.h>

#include <string>

namespace trainctl::op {

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
