// TcpProxy: a loopback TCP forwarder for tests that need to cut a client off from the API
// server: SetBlocked(true) closes every open connection and refuses new ones until it is
// unblocked. One thread; forwards bytes both ways with poll(). Test-only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace trainctl::testing {

class TcpProxy {
 public:
  // Forwards 127.0.0.1:<port()> to 127.0.0.1:<target_port>.
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd_, 64);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    thread_.join();
    for (auto& [a, b] : pairs_) {
      close(a);
      close(b);
    }
    close(listen_fd_);
  }
  int port() const { return port_; }
  // Blocking returns only once every open connection is closed, so nothing the server sends
  // afterwards reaches a client (the proxy thread would otherwise forward what arrives before
  // its next pass).
  void SetBlocked(bool blocked) {
    blocked_ = blocked;
    if (!blocked) return;
    const long seen = closing_passes_.load();
    while (closing_passes_.load() == seen && !stop_)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int connections_accepted() const { return accepted_.load(); }

 private:
  int Connect() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(target_port_);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }

  void Loop() {
    char buf[65536];
    while (!stop_) {
      if (blocked_) {
        for (auto& [a, b] : pairs_) {
          close(a);
          close(b);
        }
        pairs_.clear();
        ++closing_passes_;
      }
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      poll(fds.data(), fds.size(), 50);
      // Only the pairs just polled have revents: one accepted below waits for the next pass
      // (reading its sockets on a stale revents would block this thread on an idle socket).
      const size_t polled = pairs_.size();
      if (fds[0].revents & POLLIN) {
        int client = accept(listen_fd_, nullptr, nullptr);
        if (client >= 0) {
          int upstream = blocked_ ? -1 : Connect();
          if (upstream < 0) {
            close(client);
          } else {
            pairs_.emplace_back(client, upstream);
            ++accepted_;
          }
        }
      }
      std::vector<size_t> dead;
      for (size_t i = 0; i < polled; ++i) {
        for (int side = 0; side < 2; ++side) {
          const pollfd& p = fds[1 + 2 * i + side];
          if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          int from = side == 0 ? pairs_[i].first : pairs_[i].second;
          int to = side == 0 ? pairs_[i].second : pairs_[i].first;
          ssize_t n = read(from, buf, sizeof(buf));
          bool ok = n > 0;
          for (ssize_t off = 0; ok && off < n;) {
            ssize_t w = write(to, buf + off, n - off);
            if (w <= 0) ok = false;
            off += w;
          }
          if (!ok) {
            dead.push_back(i);
            break;
          }
        }
      }
      for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
        close(pairs_[*it].first);
        close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + *it);
      }
    }
  }

  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> blocked_{false};
  std::atomic<int> accepted_{0};
  std::atomic<long> closing_passes_{0};
  std::vector<std::pair<int, int>> pairs_;  // (client, upstream); proxy thread only
  std::thread thread_;
};

}  // namespace trainctl::testing
