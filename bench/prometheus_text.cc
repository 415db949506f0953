#include "prometheus_text.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace trainctl::bench {

double CounterSum(std::string_view exposition, std::string_view name) {
  double total = -1;
  while (!exposition.empty()) {
    const size_t end = exposition.find('\n');
    std::string_view line = exposition.substr(0, end);
    exposition = end == std::string_view::npos ? std::string_view() : exposition.substr(end + 1);
    if (name.empty() || line.substr(0, name.size()) != name || line.size() <= name.size()) continue;
    const char after = line[name.size()];
    if (after != '{' && after != ' ') continue;
    // The value follows the labels, whose quoted values may hold spaces and braces; nothing after
    // them (the value, a timestamp) may hold a brace.
    const size_t labels_end = after == '{' ? line.rfind('}') : name.size();
    if (labels_end == std::string_view::npos) continue;
    std::string_view rest = line.substr(labels_end + (after == '{' ? 1 : 0));
    rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
    const std::string value(rest.substr(0, rest.find(' ')));  // a timestamp may follow
    char* parsed_to = nullptr;
    const double v = std::strtod(value.c_str(), &parsed_to);
    if (value.empty() || parsed_to != value.c_str() + value.size()) continue;
    total = std::max(total, 0.0) + v;
  }
  return total;
}

double CpuSecondsPerGib(double cpu_seconds, double allocated_bytes) {
  if (cpu_seconds < 0 || allocated_bytes <= 0) return -1;
  return cpu_seconds / (allocated_bytes / kBytesPerGib);
}

}  // namespace trainctl::bench
