// Running a short-lived helper command (an exec credential plugin) to completion under a
// deadline.
//
// stdout and stderr are captured through pipes (each kept up to `max_output` bytes, the rest
// read and dropped); stdin is /dev/null unless inherited. A non-interactive child runs in its
// own process group, and at the deadline the whole group is killed (SIGKILL), so helpers
// started by a shell script die too; the child is always reaped before returning.
// I/O; thread-safe (each call has its own child and descriptors; never waitpid(-1)).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl {

struct SubprocessSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in this process's PATH
  std::vector<std::string> env;   // "NAME=value": the child's whole environment
  bool inherit_stdin = false;     // interactive: the child gets our stdin and stderr
  Duration timeout{30000};
  size_t max_output = 1 << 20;
};

struct SubprocessResult {
  bool timed_out = false;  // killed at the deadline; exit_code/signal describe the kill
  int exit_code = 0;
  int signal = 0;  // non-zero when terminated by a signal
  std::string stdout_text;
  std::string stderr_text;  // empty when stderr was inherited
};

// Errors only when the command cannot be started (NotFound when it does not exist, Io
// otherwise); a non-zero exit or a timeout is a result.
StatusOr<SubprocessResult> RunSubprocess(const SubprocessSpec& spec);

}  // namespace trainctl
