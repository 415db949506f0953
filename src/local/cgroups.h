// Replica cgroups for `trainctl run`, the I/O half: finds where this machine lets the runner make
// cgroups (once per run), and makes, reads and removes them as local/cgroup_plan.h plans.
//
// The replica's supervisor puts the replica into the planned cgroups between fork and exec
// (local/supervisor.h), so nothing it allocates escapes the limit.
//
// `TRAINCTL_CGROUPS=off` in the caller's environment turns enforcement off (limits are then only
// noted, as on a machine without cgroups).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "local/cgroup_plan.h"

namespace trainctl::local {

inline constexpr char kCgroupsEnv[] = "TRAINCTL_CGROUPS";

// Reads /proc/self/cgroup and /proc/self/mountinfo and checks what this process may write.
// Never fails: a host it cannot use has version 0 and says why.
CgroupHost FindCgroupHost(const std::vector<std::string>& env);

// Makes the planned folders and writes the limits. On error removes what it made and names the
// file and the reason. A refused best-effort write is added to `skipped` (what is not enforced
// and why) instead.
Status MakeReplicaCgroup(const CgroupPlan& plan, std::vector<std::string>* skipped = nullptr);

// The OOM kills counted in the replica's cgroup (0 without a memory limit or when unreadable).
int64_t ReadOomKills(const CgroupPlan& plan);

// Counts OOM kills anywhere below the replica's cgroup from now on (cgroup v1: an eventfd on
// its memory.oom_control, which also hears its children's, where oom_kill counts only its own
// tasks). -1 when not v1 or not possible; TakeOomEvents(-1) is 0.
int WatchOomEvents(const CgroupPlan& plan);
// The OOM events counted by `fd` since WatchOomEvents; closes it.
int64_t TakeOomEvents(int fd);

// Removes `<base>/<job>` and its child folders in every base of `host.other_bases` (what a
// container runtime made there below a job cgroup); non-empty ones stay.
void RemoveOtherJobCgroups(const CgroupHost& host, const std::string& job);

// Removes cgroup folders, in order. A cgroup that still has processes stays; the first error is
// returned.
Status RemoveCgroupDirs(const std::vector<std::string>& dirs);

// Removes the job cgroups ("trainctl-<pid>") of runners that no longer exist (and one named
// after this process, left by an earlier runner with the same pid), with their replica cgroups,
// where they are empty: what a SIGKILLed runner left behind.
void RemoveStaleJobCgroups(const CgroupHost& host);

// The job cgroup's name for this runner.
std::string JobCgroupName();

}  // namespace trainctl::local
