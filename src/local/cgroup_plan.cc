#include "local/cgroup_plan.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace trainctl::local {
namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 3]))) {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                               (text[i + 3] - '0'));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

// `path` as seen through a mount of `root` at `mount_point`; "" when it is outside that mount.
std::string OnDisk(const CgroupMount& mount, const std::string& path) {
  if (mount.root == "/") return path == "/" ? mount.mount_point : mount.mount_point + path;
  if (path == mount.root) return mount.mount_point;
  if (path.rfind(mount.root + "/", 0) != 0) return "";
  return mount.mount_point + path.substr(mount.root.size());
}

// The on-disk folder of the v1 hierarchy with `controller`, "" when none is mounted.
std::string V1Dir(const std::map<std::string, std::string>& self,
                  const std::vector<CgroupMount>& mounts, const std::string& controller) {
  for (const auto& [controllers, path] : self) {
    if (!Has(Split(controllers, ','), controller)) continue;
    for (const CgroupMount& m : mounts)
      if (!m.v2 && Has(m.controllers, controller))
        if (std::string dir = OnDisk(m, path); !dir.empty()) return dir;
  }
  return "";
}

}  // namespace

std::map<std::string, std::string> ParseProcCgroup(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out[line.substr(a + 1, b - a - 1)] = line.substr(b + 1);
  }
  return out;
}

std::vector<CgroupMount> ParseCgroupMounts(const std::string& mountinfo) {
  std::vector<CgroupMount> out;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = Split(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    if (dash == f.end() || f.end() - dash < 4 || dash - f.begin() < 6) continue;
    const std::string& type = *(dash + 1);
    if (type != "cgroup" && type != "cgroup2") continue;
    CgroupMount m;
    m.root = Unescape(f[3]);
    m.mount_point = Unescape(f[4]);
    m.v2 = type == "cgroup2";
    if (!m.v2) m.controllers = Split(*(dash + 3), ',');
    out.push_back(std::move(m));
  }
  return out;
}

CgroupLocation LocateCgroups(const std::map<std::string, std::string>& self,
                             const std::vector<CgroupMount>& mounts) {
  CgroupLocation loc;
  loc.memory_dir = V1Dir(self, mounts, "memory");
  if (!loc.memory_dir.empty()) {
    loc.version = 1;
    loc.cpu_dir = V1Dir(self, mounts, "cpu");
    return loc;
  }
  auto unified = self.find("");
  if (unified != self.end()) {
    for (const CgroupMount& m : mounts) {
      if (!m.v2) continue;
      if (std::string dir = OnDisk(m, unified->second); !dir.empty()) {
        loc.version = 2;
        loc.memory_dir = dir;
        loc.mount_point = m.mount_point;
        return loc;
      }
    }
  }
  loc.why_not = "no cgroup with a memory controller is mounted for this process";
  return loc;
}

int64_t CpuQuotaMicros(int64_t cpu_milli) { return std::max<int64_t>(1000, cpu_milli * 100); }

CgroupPlan PlanReplicaCgroup(const CgroupHost& host, const std::string& job,
                             const std::string& name, const ReplicaLimits& limits) {
  CgroupPlan plan;
  bool memory = limits.memory_is_limit && limits.memory_bytes && !host.memory_base.empty();
  bool cpu = limits.cpu_is_limit && limits.cpu_milli &&
             (host.version == 1 ? !host.cpu_base.empty() : host.v2_cpu);
  if (host.version == 0 || (!memory && !cpu)) return plan;
  std::string quota = cpu ? std::to_string(CpuQuotaMicros(*limits.cpu_milli)) : "";
  std::string bytes = memory ? std::to_string(*limits.memory_bytes) : "";
  if (host.version == 1) {
    if (memory) {
      std::string dir = host.memory_base + "/" + job + "/" + name;
      plan.dirs.insert(plan.dirs.end(), {host.memory_base + "/" + job, dir});
      plan.writes.push_back({dir + "/memory.limit_in_bytes", bytes, false, ""});
      plan.writes.push_back({dir + "/memory.memsw.limit_in_bytes", bytes, /*optional=*/true, ""});
      plan.procs.push_back(dir + "/cgroup.procs");
      plan.oom_file = dir + "/memory.oom_control";
      plan.remove_dirs.push_back(dir);
    }
    if (cpu) {
      std::string dir = host.cpu_base + "/" + job + "/" + name;
      plan.dirs.insert(plan.dirs.end(), {host.cpu_base + "/" + job, dir});
      plan.writes.push_back({dir + "/cpu.cfs_period_us", "100000", false, "the CPU limit"});
      plan.writes.push_back({dir + "/cpu.cfs_quota_us", quota, false, "the CPU limit"});
      plan.procs.push_back(dir + "/cgroup.procs");
      plan.remove_dirs.push_back(dir);
    }
    return plan;
  }
  std::string parent = host.memory_base + "/" + job;
  std::string dir = parent + "/" + name;
  plan.dirs = {parent, dir};
  if (memory) plan.writes.push_back({parent + "/cgroup.subtree_control", "+memory", false, ""});
  if (cpu) plan.writes.push_back({parent + "/cgroup.subtree_control", "+cpu", false, ""});
  if (memory) {
    plan.writes.push_back({dir + "/memory.max", bytes, false, ""});
    plan.writes.push_back({dir + "/memory.swap.max", "0", /*optional=*/true, ""});
    plan.writes.push_back({dir + "/memory.oom.group", "1", /*optional=*/true, ""});
    plan.oom_file = dir + "/memory.events";
  }
  if (cpu) plan.writes.push_back({dir + "/cpu.max", quota + " 100000", false, "the CPU limit"});
  plan.procs.push_back(dir + "/cgroup.procs");
  plan.remove_dirs.push_back(dir);
  return plan;
}

std::vector<std::string> JobCgroupDirs(const CgroupHost& host, const std::string& job) {
  std::vector<std::string> out;
  if (host.version == 0) return out;
  out.push_back(host.memory_base + "/" + job);
  if (host.version == 1 && !host.cpu_base.empty()) out.push_back(host.cpu_base + "/" + job);
  return out;
}

std::string CgroupParentOf(const CgroupHost& host, const CgroupPlan& plan) {
  const std::string suffix = "/memory.oom_control";
  if (host.version != 1 || host.memory_mount.empty() || plan.oom_file.size() <= suffix.size() ||
      plan.oom_file.compare(plan.oom_file.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  std::string dir = plan.oom_file.substr(0, plan.oom_file.size() - suffix.size());
  if (dir.rfind(host.memory_mount + "/", 0) != 0) return "";
  return dir.substr(host.memory_mount.size());
}

bool HasLimits(const api::Job& job) {
  for (const auto& [type, spec] : job.replica_specs) {
    if (job.ReplicasOf(type) <= 0) continue;
    StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
    if (limits.ok() && (limits->cpu_is_limit || limits->memory_is_limit)) return true;
  }
  return false;
}

std::optional<std::string> UnenforcedLimitsNote(const api::Job& job, const CgroupHost& host) {
  bool mpi = !job.MpiLauncherGroup().empty();
  bool memory_enforced = !mpi && host.version != 0 && !host.memory_base.empty();
  bool cpu_enforced =
      !mpi && (host.version == 1 ? !host.cpu_base.empty() : host.version == 2 && host.v2_cpu);
  std::string cpu_field, memory_field;
  for (const auto& [type, spec] : job.replica_specs) {
    if (job.ReplicasOf(type) <= 0) continue;
    StatusOr<ReplicaLimits> limits = LimitsOf(job, type);
    if (!limits.ok()) continue;
    if (limits->cpu_is_limit && !cpu_enforced && cpu_field.empty()) cpu_field = limits->cpu_field;
    if (limits->memory_is_limit && !memory_enforced && memory_field.empty())
      memory_field = limits->memory_field;
  }
  if (cpu_field.empty() && memory_field.empty()) return std::nullopt;
  if (mpi && host.version != 0)
    return (memory_field.empty() ? cpu_field : memory_field) +
           " (and any other CPU or memory limit of this " + job.info().name +
           ") is not enforced by trainctl run: the " + job.MpiLauncherGroup() +
           "'s mpirun starts every rank on this machine, so no replica's cgroup would hold the "
           "ranks it limits";
  std::string what = !cpu_field.empty() && !memory_field.empty() ? "CPU or memory"
                     : !cpu_field.empty()                        ? "CPU"
                                                                 : "memory";
  std::string note = (memory_field.empty() ? cpu_field : memory_field) + " (and any other " + what +
                     " limit) is not enforced by trainctl run: " + host.why_not;
  if (!cpu_field.empty())
    note += "; a CPU limit still sets OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS";
  return note;
}

int64_t ParseOomKills(const std::string& text) {
  std::istringstream in(text);
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return 0;
}

}  // namespace trainctl::local
