// ConnectionDeadlines: a watchdog for servers that use blocking socket I/O (the webhook and the
// probe/metrics server). A connection thread sets a deadline for what it is doing — a TLS
// handshake, reading one request and answering it — and once that passes the watchdog shuts the
// socket down (shutdown(2)), which ends any blocked read or write on it with an error. So a
// client that trickles a byte every few seconds holds a thread and a connection slot for at most
// the deadline, not for as long as each single read stays under the socket timeout.
//
// Overdue() decides (which sockets are past their deadline at `now`); Enforce() also shuts them
// down; the watchdog thread calls Enforce() every `tick` with the clock's monotonic time. A
// thread must Clear() its descriptor before closing it, so a reused number is never shut down.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace trainctl::server {

class ConnectionDeadlines {
 public:
  explicit ConnectionDeadlines(const Clock& clock, Duration tick = Duration(200));
  ~ConnectionDeadlines();
  ConnectionDeadlines(const ConnectionDeadlines&) = delete;
  ConnectionDeadlines& operator=(const ConnectionDeadlines&) = delete;

  // `fd` must be done with its current step by `deadline`.
  void Set(int fd, MonoTime deadline);
  void Clear(int fd);
  // The descriptors past their deadline at `now` (each reported once).
  std::vector<int> Overdue(MonoTime now);
  // Overdue(now), each shut down; returns how many.
  int Enforce(MonoTime now);

 private:
  std::vector<int> TakeOverdueLocked(MonoTime now);

  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;                  // guarded by mu_
  std::map<int, MonoTime> deadlines_;  // guarded by mu_
  std::thread watchdog_;
};

// Clears `fd` from `deadlines` when it goes out of scope: declare it after the socket that owns
// `fd`, so it runs before the socket is closed.
class DeadlineScope {
 public:
  DeadlineScope(ConnectionDeadlines& deadlines, int fd) : deadlines_(deadlines), fd_(fd) {}
  ~DeadlineScope() { deadlines_.Clear(fd_); }
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  ConnectionDeadlines& deadlines_;
  int fd_;
};

}  // namespace trainctl::server
