#include "cli/detach.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace trainctl::cli {
namespace {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void Redirect(int target_fd, const char* path, int flags) {
  int fd = open(path, flags | O_CLOEXEC, 0600);
  if (fd < 0) return;
  dup2(fd, target_fd);
  close(fd);
}

}  // namespace

void SetupReporter::Report(const Status& status, const std::string& log_path) {
  if (fd_ < 0) return;
  std::cout.flush();
  std::fflush(nullptr);
  if (status.ok()) {
    const char* path = log_path.empty() ? "/dev/null" : log_path.c_str();
    Redirect(STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_APPEND);
    Redirect(STDERR_FILENO, path, O_WRONLY | O_CREAT | O_APPEND);
  }
  WriteAll(fd_, std::to_string(static_cast<int>(status.code())) + "\n" + status.message());
  close(fd_);
  fd_ = -1;
}

StatusOr<int> RunDetached(const std::function<int(SetupReporter&)>& child_main) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return IoError(std::string("cannot start the background runner: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    setsid();
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    Redirect(STDIN_FILENO, "/dev/null", O_RDONLY);
    SetupReporter reporter(fds[1]);
    int code = child_main(reporter);
    reporter.Report(InternalError("the background runner ended during set-up"), "");
    std::fflush(nullptr);
    _exit(code);
  }
  close(fds[1]);
  std::string report;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  size_t newline = report.find('\n');
  if (newline == std::string::npos) {
    int wstatus = 0;
    waitpid(pid, &wstatus, WNOHANG);
    return InternalError("the background runner (pid " + std::to_string(pid) +
                         ") ended before it reported its set-up");
  }
  int code = std::atoi(report.substr(0, newline).c_str());
  if (code == 0) return static_cast<int>(pid);
  return Status(static_cast<StatusCode>(code), report.substr(newline + 1));
}

}  // namespace trainctl::cli
