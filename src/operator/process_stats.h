// A process's resource figures, read from /proc (Linux): resident and peak resident memory, CPU
// seconds. The operator's /metrics reads its own ("self"); the scale benchmark reads both
// operators' the same way (a pid). 0 when /proc cannot be read. Thread-safe.
#pragma once

#include <string>

namespace trainctl::op {

// A "<field>: <n> kB" line of /proc/<process>/status (VmRSS, VmHWM), in bytes.
double ProcStatusBytes(const std::string& field, const std::string& process = "self");

// User + system CPU time of the process, in seconds (/proc/<process>/stat).
double CpuSeconds(const std::string& process = "self");

}  // namespace trainctl::op
