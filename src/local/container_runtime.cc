#include "local/container_runtime.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/annotations.h"
#include "api/json_fields.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

StatusOr<RuntimeKind> ParseRuntime(const std::string& text, const std::string& where) {
  if (text == "process") return RuntimeKind::kProcess;
  if (text == "podman") return RuntimeKind::kPodman;
  if (text == "docker") return RuntimeKind::kDocker;
  return InvalidError(where + ": Unsupported value: \"" + text +
                      "\": supported values: process, podman, docker");
}

// The image's tag, "" when it has none (a digest counts as a tag: it never moves).
std::string ImageTag(const std::string& image) {
  if (image.find('@') != std::string::npos) return "@digest";
  size_t slash = image.rfind('/');
  size_t colon = image.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return "";
  return image.substr(colon + 1);
}

bool NeedsQuoting(const std::string& a) {
  if (a.empty()) return true;
  for (char c : a)
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string("-_./=:,@%+").find(c) != std::string::npos))
      return true;
  return false;
}

}  // namespace

std::string RuntimeName(RuntimeKind kind) {
  switch (kind) {
    case RuntimeKind::kProcess:
      return "process";
    case RuntimeKind::kPodman:
      return "podman";
    case RuntimeKind::kDocker:
      return "docker";
  }
  return "process";
}

StatusOr<RuntimeKind> ChooseRuntime(const std::optional<std::string>& flag, const api::Job& job,
                                    const std::vector<std::string>& env) {
  if (flag) return ParseRuntime(*flag, "--runtime");
  if (const json* a = api::AnnotationOf(job, kRuntimeAnnotation)) {
    if (!a->is_string())
      return InvalidError(api::AnnotationPath(kRuntimeAnnotation) +
                          ": Invalid value: must be a string");
    return ParseRuntime(a->get<std::string>(), api::AnnotationPath(kRuntimeAnnotation));
  }
  const std::string key = std::string(kRuntimeEnv) + "=";
  for (auto it = env.rbegin(); it != env.rend(); ++it)
    if (it->rfind(key, 0) == 0 && it->size() > key.size())
      return ParseRuntime(it->substr(key.size()), std::string("$") + kRuntimeEnv);
  return RuntimeKind::kProcess;
}

Status ParseRuntimeInfo(const std::string& info_json, RuntimeFacts* facts) {
  json doc = json::parse(info_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidError("its info is not a JSON object");
  if (facts->kind == RuntimeKind::kPodman) {
    const json& host = doc.contains("host") && doc["host"].is_object() ? doc["host"] : json();
    if (!host.is_object()) return InvalidError("its info has no \"host\" object");
    if (host.contains("ociRuntime") && host["ociRuntime"].is_object())
      facts->oci_runtime = api::StringAt(host["ociRuntime"], "name");
    facts->cgroup_manager = api::StringAt(host, "cgroupManager");
    facts->cgroup_version = api::StringAt(host, "cgroupVersion") == "v2" ? 2 : 1;
    if (host.contains("security") && host["security"].is_object())
      facts->rootless = api::BoolAt(host["security"], "rootless", false);
    if (doc.contains("version") && doc["version"].is_object())
      facts->version = api::StringAt(doc["version"], "Version");
    return Status::Ok();
  }
  facts->version = api::StringAt(doc, "ServerVersion");
  facts->oci_runtime = api::StringAt(doc, "DefaultRuntime");
  facts->cgroup_manager = api::StringAt(doc, "CgroupDriver");
  facts->cgroup_version = api::StringAt(doc, "CgroupVersion") == "2" ? 2 : 1;
  if (doc.contains("SecurityOptions") && doc["SecurityOptions"].is_array())
    for (const json& o : doc["SecurityOptions"])
      if (o.is_string() && o.get<std::string>().find("rootless") != std::string::npos)
        facts->rootless = true;
  if (facts->version.empty()) return InvalidError("its info names no server version");
  return Status::Ok();
}

StatusOr<RuntimeHost> DecideRuntimeHost(const RuntimeFacts& facts) {
  RuntimeHost host;
  host.kind = facts.kind;
  host.binary = facts.binary;
  host.version = facts.version;
  std::string name = RuntimeName(facts.kind);
  // `run --pull never` and labels on `ps --format json`: podman 3, docker 20.10.
  int major = 0, minor = 0;
  std::sscanf(facts.version.c_str(), "%d.%d", &major, &minor);
  bool old =
      facts.kind == RuntimeKind::kDocker ? (major < 20 || (major == 20 && minor < 10)) : major < 3;
  if (old)
    return FailedPreconditionError(
        name + " " + (facts.version.empty() ? "(version unknown)" : facts.version) +
        " is too old: trainctl needs " +
        (facts.kind == RuntimeKind::kDocker ? "Docker 20.10" : "podman 3.0") + " or newer");
  if (facts.kind == RuntimeKind::kPodman && facts.cgroup_hybrid && facts.oci_runtime == "crun") {
    if (facts.runc_path.empty())
      return FailedPreconditionError(
          "podman's OCI runtime crun cannot start containers on this host's hybrid cgroup "
          "layout (cgroup v1 with the unified hierarchy mounted); install runc (Debian: apt "
          "install runc) and trainctl uses it, or set runtime = \"runc\" in containers.conf");
    host.run_flags.insert(host.run_flags.end(), {"--runtime", facts.runc_path});
    host.notes.push_back("podman: runc instead of crun (crun refuses this host's hybrid cgroups)");
  }
  // A container asks for rlimits; above this process's hard limits the OCI runtime is refused
  // (EPERM), and podman's defaults are above them on many hosts. The replica gets what a
  // process started here would, bounded by pid_max (the kernel refuses more for nproc here).
  auto bounded = [&](uint64_t v) {
    return facts.pid_max > 0 && (v == 0 || v > facts.pid_max) ? facts.pid_max : v;
  };
  if (facts.nofile_hard > 0) {
    uint64_t soft = facts.nofile_soft ? facts.nofile_soft : facts.nofile_hard;
    host.run_flags.insert(
        host.run_flags.end(),
        {"--ulimit", "nofile=" + std::to_string(soft) + ":" + std::to_string(facts.nofile_hard)});
  }
  uint64_t nproc_hard = bounded(facts.nproc_hard), nproc_soft = bounded(facts.nproc_soft);
  if (nproc_hard > 0) {
    if (nproc_soft == 0 || nproc_soft > nproc_hard) nproc_soft = nproc_hard;
    host.run_flags.insert(host.run_flags.end(), {"--ulimit", "nproc=" + std::to_string(nproc_soft) +
                                                                 ":" + std::to_string(nproc_hard)});
  }
  host.cgroup_parent =
      !facts.rootless && facts.cgroup_version == 1 && facts.cgroup_manager == "cgroupfs";
  host.own_limits = !(facts.rootless && facts.cgroup_version == 1);
  std::string what = name + " (" + (facts.rootless ? "rootless, " : "") + "cgroup v" +
                     std::to_string(facts.cgroup_version) + ", " + facts.cgroup_manager + ")";
  if (!host.own_limits)
    host.notes.push_back(what +
                         ": containers get no memory or CPU limits (a rootless runtime cannot "
                         "set them on cgroup v1); a CPU limit still sets the thread env");
  else if (!host.cgroup_parent)
    host.notes.push_back(what +
                         ": memory and CPU limits are the runtime's own; an OOM kill shows as "
                         "exit 137 without the OOMKilled reason");
  return host;
}

std::vector<std::string> RunArgv(const RuntimeHost& host, const ContainerRun& run) {
  std::vector<std::string> argv = {host.binary, "run",  "--rm",   "--name", run.name,
                                   "--network", "host", "--pull", "never"};
  argv.insert(argv.end(), host.run_flags.begin(), host.run_flags.end());
  if (host.kind == RuntimeKind::kPodman) argv.push_back("--sig-proxy=true");
  if (!run.hostname.empty()) argv.insert(argv.end(), {"--hostname", run.hostname});
  for (const auto& [key, value] : run.labels)
    argv.insert(argv.end(), {"--label", key + "=" + value});
  if (!run.cgroup_parent.empty()) {
    argv.insert(argv.end(), {"--cgroup-parent", run.cgroup_parent});
    // conmon's own cgroup would be made inside the replica's and outlive the container.
    if (host.kind == RuntimeKind::kPodman) argv.push_back("--cgroups=no-conmon");
  }
  if (run.memory_bytes)
    argv.insert(argv.end(), {"--memory", std::to_string(*run.memory_bytes), "--memory-swap",
                             std::to_string(*run.memory_bytes)});
  if (run.cpus) {
    std::ostringstream cpus;
    cpus << *run.cpus;
    argv.insert(argv.end(), {"--cpus", cpus.str()});
  }
  if (!run.gpus.empty()) {
    if (host.kind == RuntimeKind::kDocker) {
      std::string ids;
      for (const std::string& g : run.gpus) ids += (ids.empty() ? "" : ",") + g;
      argv.insert(argv.end(), {"--gpus", "\"device=" + ids + "\""});
    } else {
      for (const std::string& g : run.gpus)
        argv.insert(argv.end(), {"--device", "nvidia.com/gpu=" + g});
    }
  }
  for (const ContainerRun::Mount& m : run.mounts)
    argv.insert(argv.end(),
                {"--volume", m.host_path + ":" + m.container_path + (m.read_only ? ":ro" : "")});
  for (const std::string& name : run.env_names) argv.insert(argv.end(), {"--env", name});
  if (!run.working_dir.empty()) argv.insert(argv.end(), {"--workdir", run.working_dir});
  if (!run.command.empty()) argv.insert(argv.end(), {"--entrypoint", run.command[0]});
  argv.push_back(run.image);
  if (!run.command.empty()) argv.insert(argv.end(), run.command.begin() + 1, run.command.end());
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  return argv;
}

std::vector<std::string> PullArgv(const RuntimeHost& host, const std::string& image) {
  return {host.binary, "pull", image};
}

std::vector<std::string> ImagePresentArgv(const RuntimeHost& host, const std::string& image) {
  return {host.binary, "image", "inspect", "--format", "{{.Id}}", image};
}

std::vector<std::string> RemoveArgv(const RuntimeHost& host, const std::string& name) {
  // docker's `rm --force` kills at once; podman's waits its stop timeout unless told not to.
  if (host.kind == RuntimeKind::kDocker) return {host.binary, "rm", "--force", name};
  return {host.binary, "rm", "--force", "--time", "0", name};
}

std::vector<std::string> ListOwnedArgv(const RuntimeHost& host) {
  if (host.kind == RuntimeKind::kDocker)
    return {host.binary,  "ps",        "--all",
            "--no-trunc", "--filter",  std::string("label=") + kLabelRunnerPid,
            "--format",   "{{json .}}"};
  return {host.binary, "ps",  "--all", "--filter", std::string("label=") + kLabelRunnerPid,
          "--format",  "json"};
}

std::vector<OwnedContainer> ParseOwnedContainers(const std::string& text) {
  std::vector<json> entries;
  json whole = json::parse(text, nullptr, false);
  if (whole.is_array()) {
    entries.assign(whole.begin(), whole.end());
  } else {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      json one = json::parse(line, nullptr, false);
      if (one.is_object()) entries.push_back(std::move(one));
    }
  }
  std::vector<OwnedContainer> out;
  for (const json& e : entries) {
    if (!e.is_object()) continue;
    std::map<std::string, std::string> labels;
    if (e.contains("Labels") && e["Labels"].is_object()) {
      for (const auto& [k, v] : e["Labels"].items())
        if (v.is_string()) labels[k] = v.get<std::string>();
    } else if (e.contains("Labels") && e["Labels"].is_string()) {
      std::istringstream parts(e["Labels"].get<std::string>());
      std::string kv;
      while (std::getline(parts, kv, ',')) {
        size_t eq = kv.find('=');
        if (eq != std::string::npos) labels[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
    std::string name;
    if (e.contains("Names") && e["Names"].is_array() && !e["Names"].empty() &&
        e["Names"][0].is_string())
      name = e["Names"][0].get<std::string>();
    else
      name = api::StringAt(e, "Names");
    auto pid = labels.find(kLabelRunnerPid);
    if (name.empty() || pid == labels.end()) continue;
    OwnedContainer c;
    c.name = name;
    c.runner_pid = std::atoi(pid->second.c_str());
    if (auto job = labels.find(kLabelJob); job != labels.end()) c.job = job->second;
    out.push_back(std::move(c));
  }
  return out;
}

std::string ContainerJobLabel(api::Kind kind, const std::string& ns, const std::string& name) {
  return api::ToLower(api::Info(kind).name) + "/" + ns + "/" + name;
}

std::string ContainerName(const std::string& ns, const std::string& kind,
                          const std::string& replica, int attempt, const std::string& step) {
  std::string raw = "trainctl-" + ns + "-" + api::ToLower(kind) + "-" + replica + "-" +
                    std::to_string(attempt) + (step.empty() ? "" : "-" + step);
  for (char& c : raw)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '-';
  return raw;
}

PullAction DecidePull(const std::string& image, const std::string& policy, bool present) {
  std::string tag = ImageTag(image);
  std::string p = !policy.empty()                    ? policy
                  : (tag.empty() || tag == "latest") ? "Always"
                                                     : "IfNotPresent";
  if (p == "Never") return present ? PullAction::kNone : PullAction::kNeverPullMissing;
  if (p == "IfNotPresent" && present) return PullAction::kNone;
  return PullAction::kPull;
}

std::string ContainerSummary(const ContainerRun& run) {
  std::vector<std::string> rest = run.command;
  rest.insert(rest.end(), run.args.begin(), run.args.end());
  std::string head = run.image + (run.command.empty() ? " (its entrypoint)" : ":");
  return rest.empty() ? head : head + " " + ShellJoin(rest);
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!NeedsQuoting(a)) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace trainctl::local
