#include "wake_probe.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace trainctl::bench {
namespace {

// The first two CPUs in the process's affinity; fewer when it has fewer.
std::vector<int> FirstTwoCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  return cpus;
}

bool Pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

struct Pipes {
  std::array<int, 2> there{-1, -1}, back{-1, -1};
  Pipes() = default;
  Pipes(const Pipes&) = delete;
  Pipes& operator=(const Pipes&) = delete;
  ~Pipes() {
    for (int fd : {there[0], there[1], back[0], back[1]})
      if (fd >= 0) close(fd);
  }
};

// One timed run between two threads of its own (the caller's thread is never pinned): a
// sender on cpus[0], an echo on cpus[1].
StatusOr<double> OneRun(int round_trips, const std::vector<int>& cpus) {
  Pipes p;
  // Close-on-exec: a process the bench spawns meanwhile must not hold a write end open.
  if (pipe2(p.there.data(), O_CLOEXEC) != 0 || pipe2(p.back.data(), O_CLOEXEC) != 0)
    return InternalError(std::string("wake probe: pipe: ") + std::strerror(errno));
  bool echo_pinned = false, sender_pinned = false, broken = false;
  double micros = -1;
  std::thread echo;
  std::thread sender;
  try {
    echo = std::thread([&] {
      echo_pinned = Pin(cpus[1]);
      char c = 0;
      for (int i = 0; i < round_trips; ++i)
        if (read(p.there[0], &c, 1) != 1 || write(p.back[1], &c, 1) != 1) break;
      // Ends the sender's read whether or not the run went through.
      close(p.back[1]);
      p.back[1] = -1;
    });
  } catch (const std::system_error& e) {
    return InternalError(std::string("wake probe: thread: ") + e.what());
  }
  try {
    sender = std::thread([&] {
      sender_pinned = Pin(cpus[0]);
      char c = 'w';
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < round_trips && !broken; ++i)
        broken = write(p.there[1], &c, 1) != 1 || read(p.back[0], &c, 1) != 1;
      micros = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count() /
               round_trips;
      // Ends the echo's read whether or not the run went through.
      close(p.there[1]);
      p.there[1] = -1;
    });
  } catch (const std::system_error& e) {
    close(p.there[1]);  // ends the echo's read
    p.there[1] = -1;
    echo.join();
    return InternalError(std::string("wake probe: thread: ") + e.what());
  }
  sender.join();
  echo.join();
  if (!sender_pinned || !echo_pinned)
    return InternalError("wake probe: cannot pin a thread to CPU " +
                         std::to_string(sender_pinned ? cpus[1] : cpus[0]));
  if (broken) return InternalError("wake probe: a pipe broke mid-run");
  return micros;
}

}  // namespace

StatusOr<double> TimeWakeRoundTrips(int round_trips, int tries) {
  if (round_trips < 1)
    return InvalidError("wake probe: round_trips is " + std::to_string(round_trips) +
                        "; expected at least 1");
  const std::vector<int> cpus = FirstTwoCpus();
  if (cpus.size() < 2)
    return FailedPreconditionError("wake probe: needs two CPUs; this process may run on " +
                                   std::to_string(cpus.size()));
  double best = -1;
  for (int i = 0; i < std::max(1, tries); ++i) {
    StatusOr<double> run = OneRun(round_trips, cpus);
    if (!run.ok()) return run.status();
    if (best < 0 || *run < best) best = *run;
  }
  return best;
}

}  // namespace trainctl::bench
