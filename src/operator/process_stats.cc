#include "operator/process_stats.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace trainctl::op {

double ProcStatusBytes(const std::string& field, const std::string& process) {
  std::ifstream in("/proc/" + process + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) * 1024;
  }
  return 0;
}

double CpuSeconds(const std::string& process) {
  std::ifstream in("/proc/" + process + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) {
      stime = std::atof(f.c_str());
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace trainctl::op
