// The operator process's own resource figures for /metrics, read from /proc/self (Linux):
// resident and peak resident memory, CPU seconds. 0 when /proc cannot be read. Thread-safe.
#pragma once

#include <string>

namespace trainctl::op {

// A "<field>: <n> kB" line of /proc/self/status (VmRSS, VmHWM), in bytes.
double ProcStatusBytes(const std::string& field);

// User + system CPU time of this process, in seconds (/proc/self/stat).
double CpuSeconds();

}  // namespace trainctl::op
