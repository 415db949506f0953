#include "operator/log.h"

#include <unistd.h>

#include "common/clock.h"

namespace trainctl::op {

void LogLine(const char* level, const std::string& message) {
  RealClock clock;
  std::string line = FormatRfc3339(clock.Now()) + " " + level + " " + message + "\n";
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace trainctl::op
