// A process's resource figures, read from /proc (Linux): resident and peak resident memory, CPU
// seconds. The operator's /metrics reads its own ("self"); the scale benchmark reads both
// operators' the same way (a pid). 0 when /proc cannot be read. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace trainctl::op {

// A "<field>: <n> kB" line of /proc/<process>/status (VmRSS, VmHWM), in bytes.
double ProcStatusBytes(const std::string& field, const std::string& process = "self");

// User + system CPU time of the process, in seconds (/proc/<process>/stat).
double CpuSeconds(const std::string& process = "self");

// User + system CPU seconds of each thread of the process, summed by thread name (the `comm`
// a thread sets with pthread_setname_np; unnamed threads carry the program's name). The
// scale benchmark reads it to attribute an operator's CPU (e.g. the history's "hist-" threads).
std::map<std::string, double> CpuSecondsByThreadName(const std::string& process = "self");

// CPU nanoseconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID); 0 if unavailable.
int64_t ThreadCpuNanos();

// Adds the calling thread's CPU time between its construction and its destruction to `sink`:
// how the operator attributes work done on shared threads (e.g. the history's part of a sync).
class ThreadCpuMeter {
 public:
  explicit ThreadCpuMeter(std::atomic<int64_t>* sink) : sink_(sink), began_(ThreadCpuNanos()) {}
  ~ThreadCpuMeter() { sink_->fetch_add(ThreadCpuNanos() - began_, std::memory_order_relaxed); }
  ThreadCpuMeter(const ThreadCpuMeter&) = delete;
  ThreadCpuMeter& operator=(const ThreadCpuMeter&) = delete;

 private:
  std::atomic<int64_t>* sink_;
  int64_t began_;
};

}  // namespace trainctl::op
