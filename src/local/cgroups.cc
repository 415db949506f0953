#include "local/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace trainctl::local {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Writable(const std::string& dir) {
  return access(dir.c_str(), W_OK) == 0 && access((dir + "/cgroup.procs").c_str(), W_OK) == 0;
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.rfind('/');
  return slash == std::string::npos || slash == 0 ? "" : dir.substr(0, slash);
}

Status WriteFile(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": " + std::strerror(errno));
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return IoError("cannot write \"" + value + "\" to " + path + ": " + std::strerror(err));
  return Status::Ok();
}

CgroupHost V1Host(const CgroupLocation& loc) {
  CgroupHost host;
  if (!Writable(loc.memory_dir)) {
    host.why_not = "this user cannot make cgroups in " + loc.memory_dir + " (cgroup v1)";
    return host;
  }
  host.version = 1;
  host.memory_base = loc.memory_dir;
  if (!loc.cpu_dir.empty() && Writable(loc.cpu_dir))
    host.cpu_base = loc.cpu_dir;
  else
    host.why_not = loc.cpu_dir.empty() ? "no cgroup v1 cpu hierarchy is mounted"
                                       : "this user cannot make cgroups in " + loc.cpu_dir;
  return host;
}

// The nearest cgroup at or above the runner's that hands memory to its children and that this
// user may write; the unified mount's root bounds the walk.
CgroupHost V2Host(const CgroupLocation& loc) {
  CgroupHost host;
  for (std::string dir = loc.memory_dir; !dir.empty() && dir.size() >= loc.mount_point.size();
       dir = Parent(dir)) {
    std::string delegated = ReadText(dir + "/cgroup.subtree_control");
    if (HasWord(delegated, "memory") && Writable(dir)) {
      host.version = 2;
      host.memory_base = dir;
      host.v2_cpu = HasWord(delegated, "cpu");
      if (!host.v2_cpu) host.why_not = dir + " does not hand the cpu controller to its children";
      return host;
    }
  }
  host.why_not = "no cgroup at or above " + loc.memory_dir +
                 " hands the memory controller to its children and is writable by this user "
                 "(cgroup v2); starting trainctl under the user's service manager, e.g. "
                 "`systemd-run --user --scope trainctl run …`, usually gives one";
  return host;
}

// Removes a job cgroup's child folders, then the job cgroup (each only when empty).
void RemoveJobTree(const std::string& job) {
  DIR* jd = opendir(job.c_str());
  if (!jd) return;
  std::vector<std::string> children;
  while (dirent* e = readdir(jd)) {
    std::string name = e->d_name;
    struct stat st {};
    if (name != "." && name != ".." && lstat((job + "/" + name).c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode))
      children.push_back(job + "/" + name);
  }
  closedir(jd);
  children.push_back(job);
  RemoveCgroupDirs(children).IgnoreError();
}

}  // namespace

CgroupHost FindCgroupHost(const std::vector<std::string>& env) {
  for (const std::string& e : env) {
    if (e == std::string(kCgroupsEnv) + "=off") {
      CgroupHost host;
      host.why_not = std::string(kCgroupsEnv) + "=off";
      return host;
    }
  }
  CgroupLocation loc = LocateCgroups(ParseProcCgroup(ReadText("/proc/self/cgroup")),
                                     ParseCgroupMounts(ReadText("/proc/self/mountinfo")));
  if (loc.version == 0) {
    CgroupHost host;
    host.why_not = loc.why_not;
    return host;
  }
  if (loc.version != 1) return V2Host(loc);
  CgroupHost host = V1Host(loc);
  if (host.version != 1) return host;
  std::vector<CgroupMount> mounts = ParseCgroupMounts(ReadText("/proc/self/mountinfo"));
  for (const CgroupMount& m : mounts)
    if (!m.v2 &&
        std::find(m.controllers.begin(), m.controllers.end(), "memory") != m.controllers.end() &&
        host.memory_base.rfind(m.mount_point + "/", 0) == 0)
      host.memory_mount = m.mount_point;
  if (host.memory_mount.empty()) return host;
  std::string rel = host.memory_base.substr(host.memory_mount.size());
  for (const CgroupMount& m : mounts) {
    // The unified hierarchy of a hybrid host too: runtimes make the path there as well.
    if (m.mount_point == host.memory_mount || m.root != "/") continue;
    std::string base = m.mount_point + rel;
    if (!host.cpu_base.empty() && base == host.cpu_base) continue;
    host.other_bases.push_back(base);
  }
  return host;
}

int WatchOomEvents(const CgroupPlan& plan) {
  const std::string suffix = "/memory.oom_control";
  if (plan.oom_file.size() <= suffix.size() ||
      plan.oom_file.compare(plan.oom_file.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  std::string dir = plan.oom_file.substr(0, plan.oom_file.size() - suffix.size());
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return -1;
  int ofd = open(plan.oom_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (ofd < 0) {
    close(efd);
    return -1;
  }
  Status registered =
      WriteFile(dir + "/cgroup.event_control", std::to_string(efd) + " " + std::to_string(ofd));
  close(ofd);  // the registration holds its own reference
  if (!registered.ok()) {
    close(efd);
    return -1;
  }
  return efd;
}

int64_t TakeOomEvents(int fd) {
  if (fd < 0) return 0;
  eventfd_t count = 0;
  int64_t out = eventfd_read(fd, &count) == 0 ? static_cast<int64_t>(count) : 0;
  close(fd);
  return out;
}

void RemoveOtherJobCgroups(const CgroupHost& host, const std::string& job) {
  for (const std::string& base : host.other_bases) RemoveJobTree(base + "/" + job);
}

Status MakeReplicaCgroup(const CgroupPlan& plan, std::vector<std::string>* skipped) {
  std::vector<std::string> made;
  auto undo = [&made](Status st) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) rmdir(it->c_str());
    return st;
  };
  for (const std::string& dir : plan.dirs) {
    if (mkdir(dir.c_str(), 0755) == 0) {
      made.push_back(dir);
    } else if (errno != EEXIST) {
      return undo(IoError("cannot make the cgroup " + dir + ": " + std::strerror(errno)));
    }
  }
  for (const CgroupWrite& w : plan.writes) {
    if (w.optional && access(w.file.c_str(), F_OK) != 0) continue;
    Status st = WriteFile(w.file, w.value);
    if (st.ok() || w.optional) continue;
    if (w.best_effort.empty()) return undo(st);
    if (skipped) skipped->push_back(w.best_effort + " is not enforced: " + st.message());
    break;  // the writes after a best-effort one are its own (the CPU limit is last)
  }
  return Status::Ok();
}

int64_t ReadOomKills(const CgroupPlan& plan) {
  return plan.oom_file.empty() ? 0 : ParseOomKills(ReadText(plan.oom_file));
}

Status RemoveCgroupDirs(const std::vector<std::string>& dirs) {
  Status first = Status::Ok();
  for (const std::string& dir : dirs)
    if (rmdir(dir.c_str()) != 0 && errno != ENOENT && first.ok())
      first = IoError("cannot remove the cgroup " + dir + ": " + std::strerror(errno));
  return first;
}

void RemoveStaleJobCgroups(const CgroupHost& host) {
  std::vector<std::string> bases = {host.memory_base, host.cpu_base};
  bases.insert(bases.end(), host.other_bases.begin(), host.other_bases.end());
  for (const std::string& base : bases) {
    if (base.empty()) continue;
    DIR* d = opendir(base.c_str());
    if (!d) continue;
    std::vector<std::string> stale;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("trainctl-", 0) != 0) continue;
      char* end = nullptr;
      long pid = std::strtol(name.c_str() + 9, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      if (pid == getpid() || (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))
        stale.push_back(base + "/" + name);
    }
    closedir(d);
    for (const std::string& job : stale) RemoveJobTree(job);
  }
}

std::string JobCgroupName() { return "trainctl-" + std::to_string(getpid()); }

}  // namespace trainctl::local
