// The replica supervisor: a small process between the runner and each replica, so that a
// replica and everything it spawns die with the runner, even when the runner is SIGKILLed.
//
// The runner starts `<trainctl> __supervise <runner-pid> <grace-ms> [--cgroup PROCS]... --
// <command...>` (see SupervisorArgv) with the replica's env, working folder and log as
// stdout/stderr, and the write end of a pipe as descriptor 3. The supervisor:
//   - makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so every descendant of the
//     replica that is orphaned — also one that left the replica's process group or session —
//     becomes its child, and asks for SIGTERM when the runner dies (PR_SET_PDEATHSIG);
//   - starts the command in a new process group whose id is the replica's pid, after the child
//     joined each given cgroup (writing to its cgroup.procs file) and before it runs the
//     command, so all the replica allocates is charged to its limits; reports
//     "pid <pid>\n" (or "error <message>\n") on descriptor 3 and closes it;
//   - when the replica's main process ends, SIGKILLs every remaining descendant (a container's
//     rule), reaps them all and exits as the replica did: the same exit code, or killed by the
//     same signal (without a core dump of its own);
//   - when the runner dies (or the supervisor gets SIGTERM/SIGINT/SIGHUP), sends SIGTERM to the
//     replica's group and SIGKILLs everything after `grace-ms`.
// With `--no-subreaper` the supervisor leaves orphaned descendants to the system (a container
// runtime's monitor, which must outlive the client to clean up) and kills only the replica's
// group. With `--then ARG`... (in order) it runs that command to its end (at most 60 s, output
// to /dev/null) after the replica ended, before exiting: a runtime's `rm --force`.
// The runner signals the replica's group itself; it never signals the supervisor.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"

namespace trainctl::local {

inline constexpr char kSuperviseCommand[] = "__supervise";
// The descriptor on which the supervisor reports the replica's pid.
inline constexpr int kSupervisorReportFd = 3;

// The supervisor's argv for running `command` (command[0] an absolute path) in the cgroups whose
// cgroup.procs files are `cgroup_procs`.
std::vector<std::string> SupervisorArgv(const std::string& program, int runner_pid, Duration grace,
                                        const std::vector<std::string>& command,
                                        const std::vector<std::string>& cgroup_procs = {},
                                        const std::vector<std::string>& after = {},
                                        bool reap_descendants = true);

// What the supervisor tells the runner on descriptor 3, parsed: the replica's pid, or the reason
// it could not start.
struct SupervisorReport {
  int pid = -1;
  std::string error;  // "" when pid is set
};
SupervisorReport ParseSupervisorReport(const std::string& text);

// The `__supervise` entry point: argv as given to main (argv[1] == kSuperviseCommand). Returns
// an exit code; when the replica was killed by a signal it kills itself with that signal.
int SuperviseMain(int argc, char** argv);

}  // namespace trainctl::local
