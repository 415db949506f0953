#include "local/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainctl::local {
namespace {

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

StatusOr<std::string> ResolveExecutable(const std::string& name, const std::string& cwd,
                                        const std::string& path_env) {
  if (name.empty()) return NotFoundError("empty command");
  if (name.find('/') != std::string::npos) {
    std::string path = name[0] == '/' ? name : cwd + "/" + name;
    if (IsExecutableFile(path)) return path;
    return NotFoundError("command \"" + name + "\" not found (looked for " + path +
                         ", which is missing or not executable)");
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (dir[0] != '/') dir = cwd + "/" + dir;
    std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return NotFoundError("command \"" + name + "\" not found in PATH (" + path_env + ")");
}

StatusOr<ProcessGroup> ProcessGroup::Spawn(const LaunchSpec& spec) {
  if (spec.argv.empty()) return InvalidError("no command to run");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, spec.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, spec.argv[0].c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string message = "cannot start " + spec.argv[0] + ": " + std::strerror(rc);
    int fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string line = "trainctl: " + message + "\n";
      (void)!write(fd, line.data(), line.size());
      close(fd);
    }
    return IoError(message);
  }
  return ProcessGroup(pid, PidfdOpen(pid));
}

ProcessGroup::ProcessGroup(ProcessGroup&& other) noexcept
    : pid_(other.pid_), pidfd_(other.pidfd_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
}

ProcessGroup& ProcessGroup::operator=(ProcessGroup&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
    other.pidfd_ = -1;
  }
  return *this;
}

ProcessGroup::~ProcessGroup() {
  if (pidfd_ >= 0) close(pidfd_);
  // Never leave a zombie or an orphan group behind.
  if (pid_ > 0) {
    if (GroupAlive()) kill(-pid_, SIGKILL);
    if (!exit_code_) waitpid(pid_, nullptr, 0);
  }
}

void ProcessGroup::Signal(int sig) const {
  if (pid_ > 0) kill(-pid_, sig);
}

bool ProcessGroup::GroupAlive() const {
  if (pid_ <= 0) return false;
  if (kill(-pid_, 0) == 0) return true;
  return errno == EPERM;
}

std::optional<int> ProcessGroup::Poll() {
  if (exit_code_ || pid_ <= 0) return exit_code_;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    if (WIFEXITED(status))
      exit_code_ = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      exit_code_ = 128 + WTERMSIG(status);
    else
      exit_code_ = 255;
  } else if (r < 0 && errno == ECHILD) {
    exit_code_ = 255;
  }
  return exit_code_;
}

}  // namespace trainctl::local
