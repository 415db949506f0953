#include "local/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

extern char** environ;

namespace trainctl::local {
namespace {

long long MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void Report(const std::string& line) {
  std::string text = line + "\n";
  (void)!write(kSupervisorReportFd, text.data(), text.size());
  close(kSupervisorReportFd);
}

// The supervisor's direct children: from /proc/<pid>/task/<pid>/children where the kernel has
// it, else by scanning every process's parent.
std::vector<pid_t> Children() {
  std::vector<pid_t> out;
  pid_t self = getpid();
  std::ifstream in("/proc/" + std::to_string(self) + "/task/" + std::to_string(self) + "/children");
  if (in) {
    long pid;
    while (in >> pid) out.push_back(static_cast<pid_t>(pid));
    return out;
  }
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    size_t paren = line.rfind(')');  // the command name may hold spaces and parentheses
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == self) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

// SIGKILLs the replica's group and every descendant left, and reaps them all. Orphans of killed
// processes become the supervisor's children (it is their subreaper), so the loop ends only
// when no child is left.
void KillTreeAndReap(pid_t group) {
  for (;;) {
    kill(-group, SIGKILL);
    for (pid_t child : Children()) kill(child, SIGKILL);
    pid_t reaped = waitpid(-1, nullptr, WNOHANG);
    if (reaped < 0 && errno == ECHILD) return;
    if (reaped == 0) usleep(2000);
  }
}

// Ends the supervisor the way the replica ended.
int ExitLike(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (!WIFSIGNALED(status)) return 255;
  int sig = WTERMSIG(status);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  kill(getpid(), sig);
  return 128 + sig;  // only for a signal that does not end a process by default
}

bool ParseInt(const char* text, long long* out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoll(text, &end, 10);
  return errno == 0 && *end == '\0';
}

struct StartResult {
  pid_t pid = -1;
  std::string error;
};

// Forks the replica: in the child, join `cgroups`, take a process group of its own, unblock and
// default every signal, and exec. The supervisor is single-threaded, so fork is safe here. An
// error before or at exec comes back through a close-on-exec pipe.
StartResult StartReplica(char** argv, const std::vector<std::string>& cgroups) {
  int failed[2];
  if (pipe2(failed, O_CLOEXEC) != 0)
    return {-1, std::string("cannot create a pipe: ") + std::strerror(errno)};
  pid_t pid = fork();
  if (pid < 0) {
    close(failed[0]);
    close(failed[1]);
    return {-1, std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    close(failed[0]);
    auto fail = [&](const std::string& message) {
      (void)!write(failed[1], message.data(), message.size());
      _exit(127);
    };
    for (const std::string& procs : cgroups) {
      int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0", 1) != 1)
        fail("cannot join the cgroup " + procs + ": " + std::strerror(errno));
      close(fd);
    }
    setpgid(0, 0);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // The report pipe is the runner's; descriptors above it close at exec (the failure pipe
    // too). Before Linux 5.11 close_range cannot mark them, so each is marked by hand.
    close(kSupervisorReportFd);
    if (close_range(kSupervisorReportFd + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      if (DIR* fds = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(fds)) {
          int fd = std::atoi(e->d_name);
          if (fd > kSupervisorReportFd) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        closedir(fds);
      }
    }
    execve(argv[0], argv, environ);
    fail(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
  }
  close(failed[1]);
  setpgid(pid, pid);  // also here, so the group exists whichever runs first
  std::string error;
  char buf[512];
  ssize_t n;
  while ((n = read(failed[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    error.append(buf, static_cast<size_t>(n));
  }
  close(failed[0]);
  if (error.empty()) return {pid, ""};
  waitpid(pid, nullptr, 0);
  return {-1, error};
}

// Runs `after` (if any) to its end, at most 60 s, its output discarded.
void RunAfter(const std::vector<std::string>& after) {
  if (after.empty()) return;
  std::vector<char*> args;
  for (const std::string& a : after) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    close(kSupervisorReportFd);
    // Its output would read as the replica's (a clean-up of something already gone is
    // normal: docker says "No such container"); the runner checks for leftovers itself.
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      dup2(null_fd, 1);
      dup2(null_fd, 2);
    }
    execve(args[0], args.data(), environ);
    _exit(127);
  }
  long long deadline = MonotonicMs() + 60000;
  while (waitpid(pid, nullptr, WNOHANG) == 0) {
    if (MonotonicMs() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return;
    }
    usleep(10000);
  }
}

}  // namespace

std::vector<std::string> SupervisorArgv(const std::string& program, int runner_pid, Duration grace,
                                        const std::vector<std::string>& command,
                                        const std::vector<std::string>& cgroup_procs,
                                        const std::vector<std::string>& after,
                                        bool reap_descendants) {
  // argv[0] is what `ps` shows; the program is usually /proc/self/exe.
  std::vector<std::string> argv = {"trainctl", kSuperviseCommand, std::to_string(runner_pid),
                                   std::to_string(grace.count())};
  for (const std::string& procs : cgroup_procs) argv.insert(argv.end(), {"--cgroup", procs});
  if (!reap_descendants) argv.push_back("--no-subreaper");
  for (const std::string& a : after) argv.insert(argv.end(), {"--then", a});
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

SupervisorReport ParseSupervisorReport(const std::string& text) {
  SupervisorReport report;
  std::string line = text.substr(0, text.find('\n'));
  long long pid = 0;
  if (line.rfind("pid ", 0) == 0 && ParseInt(line.c_str() + 4, &pid) && pid > 0) {
    report.pid = static_cast<int>(pid);
  } else if (line.rfind("error ", 0) == 0) {
    report.error = line.substr(6);
  } else {
    report.error = text.empty() ? "the replica supervisor exited before starting the command"
                                : "unexpected report from the replica supervisor: " + line;
  }
  return report;
}

int SuperviseMain(int argc, char** argv) {
  long long runner = 0, grace_ms = 0;
  std::vector<std::string> cgroups, after;
  bool subreaper = true;
  int command = 4;
  for (;;) {
    if (command + 1 < argc && std::strcmp(argv[command], "--cgroup") == 0) {
      cgroups.push_back(argv[command + 1]);
      command += 2;
    } else if (command + 1 < argc && std::strcmp(argv[command], "--then") == 0) {
      after.push_back(argv[command + 1]);
      command += 2;
    } else if (command < argc && std::strcmp(argv[command], "--no-subreaper") == 0) {
      subreaper = false;
      command += 1;
    } else {
      break;
    }
  }
  if (argc < command + 2 || std::strcmp(argv[command], "--") != 0 || !ParseInt(argv[2], &runner) ||
      !ParseInt(argv[3], &grace_ms)) {
    std::fprintf(stderr,
                 "usage: trainctl %s RUNNER_PID GRACE_MS [--cgroup PROCS_FILE]... "
                 "[--no-subreaper] [--then ARG]... -- COMMAND [ARG...]\n",
                 kSuperviseCommand);
    return 2;
  }
  char** replica_argv = argv + command + 1;
  // Every signal is taken synchronously below; the replica gets them back unblocked.
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
  if (subreaper) prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != static_cast<pid_t>(runner)) {  // the runner died before we could watch it
    Report("error the runner exited before the replica started");
    return 1;
  }

  StartResult started = StartReplica(replica_argv, cgroups);
  pid_t replica = started.pid;
  if (replica < 0) {
    std::fprintf(stderr, "trainctl: %s\n", started.error.c_str());
    Report("error " + started.error);
    return 127;
  }
  Report("pid " + std::to_string(replica));

  long long kill_at = -1;  // monotonic ms; set once a stop was asked for
  for (;;) {
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid(-1, &status, WNOHANG)) > 0) {
      if (reaped != replica) continue;  // an orphan that ended on its own
      KillTreeAndReap(replica);
      RunAfter(after);
      return ExitLike(status);
    }
    bool stop = getppid() != static_cast<pid_t>(runner);
    long long now = MonotonicMs();
    if (kill_at >= 0 && now >= kill_at) {
      kill(-replica, SIGKILL);  // the replica's end is seen above, next round
      kill_at = now + 1000;
    }
    long long wait_ms = kill_at >= 0 ? std::max(0LL, kill_at - now) : 1000;
    timespec timeout{static_cast<time_t>(wait_ms / 1000),
                     static_cast<long>(wait_ms % 1000) * 1000000};
    siginfo_t info{};
    int sig = sigtimedwait(&all, &info, &timeout);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) stop = true;
    if (stop && kill_at < 0) {
      kill(-replica, SIGTERM);
      kill_at = MonotonicMs() + grace_ms;
    }
  }
}

}  // namespace trainctl::local
