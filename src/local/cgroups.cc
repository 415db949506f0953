#include "local/cgroups.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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
  return loc.version == 1 ? V1Host(loc) : V2Host(loc);
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
  for (const std::string& base : {host.memory_base, host.cpu_base}) {
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
    for (const std::string& job : stale) {
      if (DIR* jd = opendir(job.c_str())) {
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
    }
  }
}

std::string JobCgroupName() { return "trainctl-" + std::to_string(getpid()); }

}  // namespace trainctl::local
