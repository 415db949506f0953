#include "local/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "local/supervisor.h"

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

std::string PathFromEnv(const std::vector<std::string>& env) {
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->rfind("PATH=", 0) == 0) return it->substr(5);
  return "";
}

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

StatusOr<ProcessGroup> ProcessGroup::Spawn(const LaunchSpec& spec, const Supervision* supervision) {
  if (spec.argv.empty()) return InvalidError("no command to run");
  int report[2] = {-1, -1};
  if (supervision && pipe2(report, O_CLOEXEC) != 0)
    return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, spec.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  if (supervision) posix_spawn_file_actions_adddup2(&actions, report[1], kSupervisorReportFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, supervision ? kSupervisorReportFd + 1 : 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<std::string> command =
      supervision ? SupervisorArgv(supervision->program, getpid(), supervision->grace, spec.argv,
                                   spec.cgroup_procs, spec.after_argv, spec.reap_descendants)
                  : spec.argv;
  std::vector<char*> argv, envp;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const std::string& program = supervision ? supervision->program : spec.argv[0];
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (supervision) close(report[1]);
  if (rc != 0) {
    if (supervision) close(report[0]);
    std::string message = "cannot start " + program + ": " + std::strerror(rc);
    int fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      std::string line = "trainctl: " + message + "\n";
      (void)!write(fd, line.data(), line.size());
      close(fd);
    }
    return IoError(message);
  }
  if (!supervision) return ProcessGroup(pid, pid, PidfdOpen(pid));

  // The supervisor reports the replica's pid (or why it could not start it) and closes the pipe.
  std::string text;
  char buf[512];
  for (;;) {
    pollfd p{report[0], POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t n = read(report[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(report[0]);
  SupervisorReport parsed = ParseSupervisorReport(text);
  if (parsed.pid <= 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return IoError(parsed.error);
  }
  return ProcessGroup(pid, parsed.pid, PidfdOpen(pid));
}

ProcessGroup::ProcessGroup(ProcessGroup&& other) noexcept
    : pid_(other.pid_), group_(other.group_), pidfd_(other.pidfd_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
  other.group_ = -1;
  other.pidfd_ = -1;
}

ProcessGroup& ProcessGroup::operator=(ProcessGroup&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    pid_ = other.pid_;
    group_ = other.group_;
    pidfd_ = other.pidfd_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
    other.group_ = -1;
    other.pidfd_ = -1;
  }
  return *this;
}

ProcessGroup::~ProcessGroup() {
  if (pidfd_ >= 0) close(pidfd_);
  // Never leave a zombie or an orphan group behind.
  // A supervisor then kills what is left of the replica's descendants and exits.
  if (pid_ > 0) {
    if (GroupAlive()) kill(-group_, SIGKILL);
    if (!exit_code_) waitpid(pid_, nullptr, 0);
  }
}

void ProcessGroup::Signal(int sig) const {
  if (group_ > 0) kill(-group_, sig);
}

bool ProcessGroup::ChildExited() const {
  if (exit_code_) return true;
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
         info.si_pid == pid_;
}

bool ProcessGroup::GroupAlive() const {
  if (pid_ <= 0) return false;
  if (kill(-group_, 0) == 0 || errno == EPERM) return true;
  // A supervisor still running is still killing the replica's descendants.
  return pid_ != group_ && !ChildExited();
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
