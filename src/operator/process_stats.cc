#include "operator/process_stats.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

namespace {

// A /proc/.../stat line's name (between the parentheses) and utime + stime in seconds.
bool ReadStat(const std::string& path, std::string* name, double* seconds) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  *name = text.substr(open + 1, close - open - 1);
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
  *seconds = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

double CpuSeconds(const std::string& process) {
  std::string name;
  double seconds = 0;
  return ReadStat("/proc/" + process + "/stat", &name, &seconds) ? seconds : 0;
}

std::map<std::string, double> CpuSecondsByThreadName(const std::string& process) {
  std::map<std::string, double> by_name;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + process + "/task", ec)) {
    std::string name;
    double seconds = 0;
    if (ReadStat(task.path().string() + "/stat", &name, &seconds)) by_name[name] += seconds;
  }
  return by_name;
}

int64_t ThreadCpuNanos() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace trainctl::op
