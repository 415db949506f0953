// Where `trainctl run` can make cgroups for its replicas, and what it writes into them — the pure
// half of local/cgroups.h.
//
// A replica with `resources.limits.cpu` or `.memory` gets a cgroup of its own below a job cgroup
// `trainctl-<runner pid>`, which sits below the runner's own cgroup:
//   - cgroup v1 (a `memory` and a `cpu` hierarchy mounted): in each hierarchy, below the runner's
//     cgroup in it. Memory: memory.limit_in_bytes (and memory.memsw.limit_in_bytes, the same, so
//     the limit cannot be dodged by swapping). CPU: cpu.cfs_period_us 100000 and
//     cpu.cfs_quota_us = limit × 100 (at least 1000), as the kubelet sets them.
//   - cgroup v2 (unified): below the nearest cgroup at or above the runner's that already hands
//     the memory controller to its children (cgroup.subtree_control) and that the runner may
//     write; the job cgroup hands memory (and cpu where offered) on. memory.max, memory.swap.max
//     0, cpu.max "<quota> 100000".
// An OOM kill shows in the replica cgroup's oom_kill count (memory.oom_control in v1,
// memory.events in v2); the runner reports such an exit as OOMKilled.
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "local/replica_limits.h"

namespace trainctl::local {

// /proc/self/cgroup: hierarchy controllers ("memory", "cpu,cpuacct"; "" for the unified one) →
// the process's cgroup path in it.
std::map<std::string, std::string> ParseProcCgroup(const std::string& text);

struct CgroupMount {
  std::string mount_point;  // e.g. /sys/fs/cgroup/memory
  std::string root;         // the cgroup path mounted there (not "/" inside some containers)
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the super options
};
// The cgroup and cgroup2 mounts in /proc/self/mountinfo.
std::vector<CgroupMount> ParseCgroupMounts(const std::string& mountinfo);

// Where the runner's own cgroups are on disk.
struct CgroupLocation {
  int version = 0;          // 1, 2, or 0: no memory cgroup found
  std::string memory_dir;   // v1: the runner's cgroup in the memory hierarchy; v2: its cgroup
  std::string cpu_dir;      // v1 only: in the cpu hierarchy ("" when there is none)
  std::string mount_point;  // v2 only: where the unified tree is mounted (bounds the walk up)
  std::string why_not;      // when version is 0
};
// A mounted v1 memory hierarchy wins (the v2 tree then has no memory controller).
CgroupLocation LocateCgroups(const std::map<std::string, std::string>& self,
                             const std::vector<CgroupMount>& mounts);

// The folders below which job cgroups are made, as found usable by local/cgroups.cc.
struct CgroupHost {
  int version = 0;          // 0: limits are not enforced, see why_not
  std::string memory_base;  // v1: in the memory hierarchy; v2: the delegated cgroup
  std::string cpu_base;     // v1: in the cpu hierarchy; "" when CPU quotas cannot be set
  bool v2_cpu = false;      // v2: the cpu controller is offered too
  std::string why_not;      // why nothing, or why CPU only is not enforced
  // v1: where the memory hierarchy is mounted, so a replica cgroup's path can be named to a
  // container runtime (--cgroup-parent, relative to the hierarchy), and memory_base's place in
  // every other v1 hierarchy, where such a runtime makes the same path.
  std::string memory_mount;
  std::vector<std::string> other_bases;
};

// A replica cgroup's path inside the memory hierarchy ("/user/trainctl-42/w-0.1"), as container
// runtimes take it for --cgroup-parent; "" when it has no memory cgroup or the host is not v1.
std::string CgroupParentOf(const CgroupHost& host, const struct CgroupPlan& plan);

struct CgroupWrite {
  std::string file;
  std::string value;
  bool optional = false;  // a missing file is not an error (swap accounting may be off)
  // A refused write leaves that limit unenforced, said once, instead of failing the replica:
  // a CPU quota above what the runner's own cgroup allows (v1 refuses it with EINVAL).
  std::string best_effort;  // what is then not enforced, e.g. "the CPU limit"
};

// What to make and write for one replica (`name`, unique within the run) of the job cgroup
// `job` (e.g. "trainctl-4242"), for `limits`. Empty `dirs` when it has nothing to enforce.
struct CgroupPlan {
  std::vector<std::string> dirs;         // to make, parents first
  std::vector<CgroupWrite> writes;       // in order
  std::vector<std::string> procs;        // the cgroup.procs files the replica joins
  std::string oom_file;                  // where its oom_kill count is
  std::vector<std::string> remove_dirs;  // to remove once it has ended, children first
};
CgroupPlan PlanReplicaCgroup(const CgroupHost& host, const std::string& job,
                             const std::string& name, const ReplicaLimits& limits);

// The job cgroups to remove at the end of the run (after every replica's).
std::vector<std::string> JobCgroupDirs(const CgroupHost& host, const std::string& job);

// The CFS quota for a CPU limit, as the kubelet computes it (period 100 ms, at least 1 ms).
int64_t CpuQuotaMicros(int64_t cpu_milli);

// Whether a replica of `job` has a CPU or memory limit (what a cgroup would enforce).
bool HasLimits(const api::Job& job);

// Said once before a run when a replica has a CPU or memory limit that `host` cannot enforce:
// which field, why not, and that a CPU limit still sets the thread env. Nullopt when every
// limit is enforced (requests never are, as on a cluster); a limit that does not parse is left
// to LimitsOf's error.
std::optional<std::string> UnenforcedLimitsNote(const api::Job& job, const CgroupHost& host);

// The "oom_kill N" count in memory.oom_control or memory.events text (0 when absent).
int64_t ParseOomKills(const std::string& text);

}  // namespace trainctl::local
