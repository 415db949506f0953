#include "server/connection_deadlines.h"

#include <sys/socket.h>

namespace trainctl::server {

ConnectionDeadlines::ConnectionDeadlines(const Clock& clock, Duration tick) : clock_(clock) {
  watchdog_ = std::thread([this, tick] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      wake_.wait_for(lock, tick);
      if (stop_) break;
      lock.unlock();
      Enforce(clock_.Monotonic());
      lock.lock();
    }
  });
}

ConnectionDeadlines::~ConnectionDeadlines() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  watchdog_.join();
}

void ConnectionDeadlines::Set(int fd, MonoTime deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  deadlines_[fd] = deadline;
}

void ConnectionDeadlines::Clear(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  deadlines_.erase(fd);
}

std::vector<int> ConnectionDeadlines::Overdue(MonoTime now) {
  std::lock_guard<std::mutex> lock(mu_);
  return TakeOverdueLocked(now);
}

std::vector<int> ConnectionDeadlines::TakeOverdueLocked(MonoTime now) {
  std::vector<int> out;
  for (auto it = deadlines_.begin(); it != deadlines_.end();) {
    if (it->second <= now) {
      out.push_back(it->first);
      it = deadlines_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

int ConnectionDeadlines::Enforce(MonoTime now) {
  // Under the lock: an owner closes its descriptor only after Clear(), which waits here, so the
  // number shut down is never one already reused by a new connection.
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> overdue = TakeOverdueLocked(now);
  for (int fd : overdue) shutdown(fd, SHUT_RDWR);
  return static_cast<int>(overdue.size());
}

}  // namespace trainctl::server
