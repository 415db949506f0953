#include "common/clock.h"

#include <cstdio>
#include <ctime>
#include <thread>

namespace trainctl {

Time RealClock::Now() const { return std::chrono::system_clock::now(); }

void RealClock::SleepFor(Duration d) const {
  if (d > Duration::zero()) std::this_thread::sleep_for(d);
}

Time TruncateToSeconds(Time t) { return std::chrono::time_point_cast<std::chrono::seconds>(t); }

std::string FormatRfc3339(Time t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<Time> ParseRfc3339(const std::string& text) {
  int y, mo, d, h, mi, s;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
          6 ||
      consumed != 19) {
    return std::nullopt;
  }
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  }
  long offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (oh * 3600L + om * 60L) * (text[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  std::time_t secs = timegm(&tm) - offset;
  // Valid text, but past what Time (nanoseconds, about 1678-2262) holds: the nearest end, so
  // "9999-12-31T00:00:00Z" (a credential that never expires) means "never" (found by fuzzing).
  constexpr std::time_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(Time::duration::max()).count();
  if (secs >= kLimit) return Time::max();
  if (secs <= -kLimit) return Time::min();
  return std::chrono::system_clock::from_time_t(secs);
}

std::string FormatAge(Duration d) {
  long long s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 0) s = 0;
  char buf[32];
  if (s < 120) {
    std::snprintf(buf, sizeof(buf), "%llds", s);
  } else if (s < 600) {
    std::snprintf(buf, sizeof(buf), "%lldm%llds", s / 60, s % 60);
  } else if (s < 3 * 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm", s / 60);
  } else if (s < 48 * 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%lldm", s / 3600, (s % 3600) / 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldd%lldh", s / 86400, (s % 86400) / 3600);
  }
  return buf;
}

}  // namespace trainctl
