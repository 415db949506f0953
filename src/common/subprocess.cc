#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace trainctl {
namespace {

using SteadyClock = std::chrono::steady_clock;

class Pipe {
 public:
  Pipe() {
    if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  bool ok() const { return fds_[0] >= 0; }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  void CloseRead() { CloseFd(&fds_[0]); }
  void CloseWrite() { CloseFd(&fds_[1]); }

 private:
  static void CloseFd(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  int fds_[2];
};

// Reads what is available; returns false at end of file or on error.
bool Drain(int fd, std::string* out, size_t max_output) {
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  size_t room = out->size() < max_output ? max_output - out->size() : 0;
  out->append(buf, std::min(room, static_cast<size_t>(n)));
  return true;
}

StatusOr<pid_t> Spawn(const SubprocessSpec& spec, Pipe& out, Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!spec.inherit_stdin) posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_fd(), 1);
  if (!spec.inherit_stdin) posix_spawn_file_actions_adddup2(&actions, err.write_fd(), 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  // An interactive plugin must stay in the terminal's foreground process group.
  if (!spec.inherit_stdin) flags |= POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, spec.argv[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string message = spec.argv[0] + ": " + std::strerror(rc);
    return rc == ENOENT ? NotFoundError(message) : IoError(message);
  }
  return pid;
}

void SetExit(int wait_status, SubprocessResult* result) {
  if (WIFEXITED(wait_status)) result->exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) {
    result->signal = WTERMSIG(wait_status);
    result->exit_code = 128 + result->signal;
  }
}

// Kills the child (and its process group unless it shares ours) and returns its wait status.
int KillAndReap(pid_t pid, bool shares_our_group) {
  kill(shares_our_group ? pid : -pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return wait_status;
}

}  // namespace

StatusOr<SubprocessResult> RunSubprocess(const SubprocessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) return InvalidError("no command to run");
  Pipe out, err;
  if (!out.ok() || !err.ok()) return IoError(std::string("pipe: ") + std::strerror(errno));
  StatusOr<pid_t> spawned = Spawn(spec, out, err);
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = *spawned;
  out.CloseWrite();
  err.CloseWrite();
  if (spec.inherit_stdin) err.CloseRead();

  SubprocessResult result;
  const SteadyClock::time_point deadline = SteadyClock::now() + spec.timeout;
  bool out_open = true;
  bool err_open = !spec.inherit_stdin;
  while (true) {
    if (!out_open && !err_open) {
      int wait_status = 0;
      pid_t r = waitpid(pid, &wait_status, WNOHANG);
      if (r == pid) {
        SetExit(wait_status, &result);
        return result;
      }
    }
    auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (remaining.count() <= 0) break;
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = pollfd{out.read_fd(), POLLIN, 0};
    if (err_open) fds[n++] = pollfd{err.read_fd(), POLLIN, 0};
    if (n == 0) {
      // Both pipes closed but the child still runs: check again shortly.
      std::this_thread::sleep_for(std::min(remaining, std::chrono::milliseconds(10)));
      continue;
    }
    int ready = poll(fds, n, static_cast<int>(remaining.count()));
    if (ready < 0 && errno != EINTR) {
      std::string message = std::string("poll: ") + std::strerror(errno);
      KillAndReap(pid, spec.inherit_stdin);
      return IoError(message);
    }
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if (fds[i].revents == 0) continue;
      bool is_out = fds[i].fd == out.read_fd();
      if (!Drain(fds[i].fd, is_out ? &result.stdout_text : &result.stderr_text, spec.max_output)) {
        (is_out ? out_open : err_open) = false;
      }
    }
  }

  result.timed_out = true;
  SetExit(KillAndReap(pid, spec.inherit_stdin), &result);
  return result;
}

}  // namespace trainctl
