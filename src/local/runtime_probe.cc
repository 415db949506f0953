#include "local/runtime_probe.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "common/subprocess.h"
#include "local/process.h"

namespace trainctl::local {
namespace {

std::string PathOf(const std::vector<std::string>& env) {
  std::string path = PathFromEnv(env);
  return path.empty() ? "/usr/local/bin:/usr/bin:/bin" : path;
}

StatusOr<SubprocessResult> Run(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env, Duration timeout) {
  SubprocessSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.timeout = timeout;
  return RunSubprocess(spec);
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "…" : line;
}

uint64_t Limit(rlim_t v) { return v == RLIM_INFINITY ? 0 : static_cast<uint64_t>(v); }

bool IsDir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A CDI spec on this machine that names nvidia.com/gpu devices.
bool HasGpuCdiSpec() {
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    DIR* d = opendir(dir);
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      std::ifstream in(std::string(dir) + "/" + e->d_name);
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find("nvidia.com/gpu") != std::string::npos) {
        closedir(d);
        return true;
      }
    }
    closedir(d);
  }
  return false;
}

}  // namespace

StatusOr<RuntimeHost> ProbeRuntime(RuntimeKind kind, const std::vector<std::string>& env,
                                   bool want_gpus) {
  std::string name = RuntimeName(kind);
  RuntimeFacts facts;
  facts.kind = kind;
  StatusOr<std::string> binary = ResolveExecutable(name, "/", PathOf(env));
  if (!binary.ok())
    return FailedPreconditionError("--runtime " + name + ": no `" + name +
                                   "` on PATH; install it (Debian: apt install " +
                                   (kind == RuntimeKind::kDocker ? "docker.io" : "podman") +
                                   ") or run with --runtime process");
  facts.binary = *binary;
  std::vector<std::string> info_argv = {facts.binary, "info", "--format",
                                        kind == RuntimeKind::kDocker ? "{{json .}}" : "json"};
  StatusOr<SubprocessResult> info = Run(info_argv, env, Duration(30000));
  if (!info.ok())
    return FailedPreconditionError("--runtime " + name + ": " + info.status().message());
  if (info->timed_out || info->exit_code != 0)
    return FailedPreconditionError(
        "--runtime " + name + ": `" + name + " info` " +
        (info->timed_out ? std::string("did not answer within 30 s")
                         : "failed: " + FirstLine(info->stderr_text)) +
        (kind == RuntimeKind::kDocker
             ? "; the Docker daemon must be running (trainctl does not start one)"
             : ""));
  if (Status parsed = ParseRuntimeInfo(info->stdout_text, &facts); !parsed.ok())
    return FailedPreconditionError("--runtime " + name + ": " + parsed.message());
  rlimit nofile{}, nproc{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    facts.nofile_soft = Limit(nofile.rlim_cur);
    facts.nofile_hard = Limit(nofile.rlim_max);
  }
  if (getrlimit(RLIMIT_NPROC, &nproc) == 0) {
    facts.nproc_soft = Limit(nproc.rlim_cur);
    facts.nproc_hard = Limit(nproc.rlim_max);
  }
  std::ifstream pid_max("/proc/sys/kernel/pid_max");
  pid_max >> facts.pid_max;
  facts.cgroup_hybrid = IsDir("/sys/fs/cgroup/unified") && IsDir("/sys/fs/cgroup/memory");
  if (StatusOr<std::string> runc =
          ResolveExecutable("runc", "/", PathOf(env) + ":/usr/sbin:/usr/bin:/sbin");
      runc.ok())
    facts.runc_path = *runc;
  StatusOr<RuntimeHost> host = DecideRuntimeHost(facts);
  if (!host.ok())
    return FailedPreconditionError("--runtime " + name + ": " + host.status().message());
  if (want_gpus) {
    bool ok = kind == RuntimeKind::kDocker
                  ? info->stdout_text.find("\"nvidia\"") != std::string::npos
                  : HasGpuCdiSpec();
    if (!ok)
      return FailedPreconditionError(
          "--runtime " + name + ": the job asks for GPUs and " + name +
          (kind == RuntimeKind::kDocker
               ? " has no nvidia runtime (install the NVIDIA Container Toolkit and run "
                 "`nvidia-ctk runtime configure --runtime=docker`)"
               : " has no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi (install the "
                 "NVIDIA Container Toolkit and run `nvidia-ctk cdi generate --output "
                 "/etc/cdi/nvidia.yaml`)"));
  }
  return host;
}

bool ImagePresent(const RuntimeHost& host, const std::vector<std::string>& env,
                  const std::string& image) {
  StatusOr<SubprocessResult> r = Run(ImagePresentArgv(host, image), env, Duration(30000));
  return r.ok() && !r->timed_out && r->exit_code == 0;
}

std::vector<std::string> RemoveLeftoverContainers(const RuntimeHost& host,
                                                  const std::vector<std::string>& env,
                                                  const std::string& job) {
  std::vector<std::string> removed;
  StatusOr<SubprocessResult> listed = Run(ListOwnedArgv(host), env, Duration(30000));
  if (!listed.ok() || listed->timed_out || listed->exit_code != 0) return removed;
  for (const OwnedContainer& c : ParseOwnedContainers(listed->stdout_text)) {
    bool runner_gone = c.runner_pid <= 0 || (kill(c.runner_pid, 0) != 0 && errno == ESRCH);
    if (!runner_gone && (job.empty() || c.job != job)) continue;
    StatusOr<SubprocessResult> rm = Run(RemoveArgv(host, c.name), env, Duration(60000));
    if (rm.ok() && !rm->timed_out && rm->exit_code == 0) removed.push_back(c.name);
  }
  return removed;
}

}  // namespace trainctl::local
