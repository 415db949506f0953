#include "operator/log.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace trainctl::op {
namespace {

std::atomic<bool> g_json{false};
std::atomic<int> g_min_level{0};

int LevelNumber(const char* level) {
  std::string l = level;
  if (l == "DEBUG") return -1;
  if (l == "WARN") return 1;
  if (l == "ERROR") return 2;
  return 0;
}

}  // namespace

StatusOr<LogOptions> ParseLogOptions(bool devel, const std::string& encoder,
                                     const std::string& level) {
  LogOptions o;
  o.json = !devel;
  o.min_level = devel ? -1 : 0;
  if (encoder == "json") {
    o.json = true;
  } else if (encoder == "console") {
    o.json = false;
  } else if (!encoder.empty()) {
    return InvalidError("--zap-encoder: \"" + encoder + "\" is not json or console");
  }
  if (level == "debug") {
    o.min_level = -1;
  } else if (level == "info") {
    o.min_level = 0;
  } else if (level == "warn") {
    o.min_level = 1;
  } else if (level == "error") {
    o.min_level = 2;
  } else if (!level.empty()) {
    bool number = level.size() < 4;
    for (char c : level) number = number && std::isdigit(static_cast<unsigned char>(c));
    if (!number)
      return InvalidError("--zap-log-level: \"" + level +
                          "\" is not debug, info, warn, error or a verbosity number");
    o.min_level = -std::stoi(level);
  }
  return o;
}

void SetLogOptions(const LogOptions& options) {
  g_json = options.json;
  g_min_level = options.min_level;
}

void LogLine(const char* level, const std::string& message) {
  if (LevelNumber(level) < g_min_level) return;
  RealClock clock;
  std::string line;
  if (g_json) {
    std::string lower = level;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    line = nlohmann::json({{"level", lower}, {"ts", FormatRfc3339(clock.Now())}, {"msg", message}})
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  } else {
    line = FormatRfc3339(clock.Now()) + " " + level + " " + message + "\n";
  }
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace trainctl::op
