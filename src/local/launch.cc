#include "local/launch.h"

#include <sys/stat.h>

#include <optional>

#include "api/json_fields.h"
#include "local/mpi_local.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

std::string EnvName(const std::string& entry) { return entry.substr(0, entry.find('=')); }

StatusOr<std::string> ResolveFieldRef(const json& field_ref, const api::Job& job,
                                      const std::string& pod_name, const LaunchContext& context,
                                      const std::string& path) {
  std::string field = api::StringAt(field_ref, "fieldPath");
  if (field == "metadata.name") return pod_name;
  if (field == "metadata.namespace") return job.namespace_;
  if (field == "status.podIP" || field == "status.hostIP") return context.pod_ip;
  if (field == "spec.nodeName") return std::string("localhost");
  if (field == "spec.serviceAccountName") return std::string("default");
  const std::string label_prefix = "metadata.labels['";
  if (field.rfind(label_prefix, 0) == 0 && field.size() > label_prefix.size() + 2) {
    std::string key = field.substr(label_prefix.size(), field.size() - label_prefix.size() - 2);
    auto it = context.labels.find(key);
    return it == context.labels.end() ? std::string() : it->second;
  }
  return InvalidError(path + ".valueFrom.fieldRef.fieldPath: Unsupported value: \"" + field +
                      "\": trainctl run resolves metadata.name, metadata.namespace, "
                      "metadata.labels['…'], status.podIP, status.hostIP, spec.nodeName");
}

// The keys of the ConfigMap (or Secret) `name` given on this machine; null when not given.
const KeyValues* GivenKeys(const LaunchContext& context, bool secret, const std::string& name) {
  if (!context.config) return nullptr;
  const std::map<std::string, KeyValues>& all =
      secret ? context.config->secrets : context.config->config_maps;
  auto it = all.find(name);
  return it == all.end() ? nullptr : &it->second;
}

// A configMapKeyRef / secretKeyRef: the value, nullopt for a missing optional one.
StatusOr<std::optional<std::string>> ResolveKeyRef(const json& ref, const LaunchContext& context,
                                                   bool secret, const std::string& path) {
  const char* flag = secret ? "--secret" : "--configmap";
  std::string name = api::StringAt(ref, "name"), key = api::StringAt(ref, "key");
  bool optional = api::BoolAt(ref, "optional", false);
  const KeyValues* data = GivenKeys(context, secret, name);
  std::string field = path + (secret ? ".secretKeyRef" : ".configMapKeyRef");
  if (!data) {
    if (optional) return std::optional<std::string>();
    return InvalidError(field + ".name: \"" + name + "\": not on this machine; give it with " +
                        flag + " " + name + "=FOLDER (a file per key)");
  }
  auto it = data->find(key);
  if (it == data->end()) {
    if (optional) return std::optional<std::string>();
    return InvalidError(field + ".key: \"" + key + "\": " + name + " (" + flag +
                        ") has no such key");
  }
  return std::optional<std::string>(it->second);
}

}  // namespace

std::string ExpandReferences(const std::string& text,
                             const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size()) {
      if (text[i + 1] == '$') {
        out += '$';
        ++i;
        continue;
      }
      if (text[i + 1] == '(') {
        size_t close = text.find(')', i + 2);
        if (close != std::string::npos) {
          std::string name = text.substr(i + 2, close - i - 2);
          auto it = vars.find(name);
          if (it != vars.end()) {
            out += it->second;
            i = close;
            continue;
          }
        }
      }
    }
    out += text[i];
  }
  return out;
}

StatusOr<PreparedLaunch> PrepareLaunch(const api::Job& job, const std::string& type, int index,
                                       const api::ReplicaEnv& injected,
                                       const LaunchContext& context) {
  const api::KindInfo& info = job.info();
  const api::ReplicaSpec& spec = job.replica_specs.at(type);
  std::string base = std::string("spec.") + info.spec_map_field + "[" + type + "].template.spec";
  const json* containers = api::Containers(spec.pod_template);
  if (!containers || containers->empty())
    return InvalidError(base + ".containers: Required value: must be specified");
  size_t ci = api::DefaultContainerIndex(spec.pod_template, info.default_container).value_or(0);
  const json& c = context.container ? *context.container->container : (*containers)[ci];
  std::string cpath = context.container ? context.container->path
                                        : base + ".containers[" + std::to_string(ci) + "]";
  PreparedLaunch out;

  std::vector<std::string> argv, command, args;
  if (c.contains("command") && c["command"].is_array())
    for (const json& a : c["command"]) command.push_back(a.get<std::string>());
  if (command.empty() && !context.in_container)
    return InvalidError(cpath +
                        ".command: Required value: trainctl run starts the container's "
                        "command itself and cannot know the image's entrypoint (image " +
                        api::StringAt(c, "image") +
                        "); set command: [...], or run the image with --runtime podman|docker");
  if (c.contains("args") && c["args"].is_array())
    for (const json& a : c["args"]) args.push_back(a.get<std::string>());
  argv = command;
  argv.insert(argv.end(), args.begin(), args.end());

  // Pod env: the resources', the template's, then the framework's (appended; later
  // definitions win).
  std::string pod_name = api::ReplicaName(job, type, index);
  std::vector<std::pair<std::string, std::string>> pod_env;
  std::map<std::string, std::string> defined;
  std::map<std::string, EnvSource> source;
  for (const auto& [name, value] : context.resource_env) {
    defined[name] = value;
    source[name] = EnvSource::kResources;
    pod_env.emplace_back(name, value);
  }
  if (c.contains("envFrom") && c["envFrom"].is_array()) {
    const json& from = c["envFrom"];
    for (size_t i = 0; i < from.size(); ++i) {
      std::string fpath = cpath + ".envFrom[" + std::to_string(i) + "]";
      bool secret = from[i].is_object() && from[i].contains("secretRef");
      const json none;
      const json& ref = !from[i].is_object()               ? none
                        : secret                           ? from[i]["secretRef"]
                        : from[i].contains("configMapRef") ? from[i]["configMapRef"]
                                                           : none;
      if (!ref.is_object())
        return InvalidError(fpath + ": Required value: configMapRef or secretRef (an object)");
      std::string name = api::StringAt(ref, "name");
      const KeyValues* data = GivenKeys(context, secret, name);
      if (!data) {
        if (api::BoolAt(ref, "optional", false)) continue;
        return InvalidError(fpath + (secret ? ".secretRef" : ".configMapRef") + ".name: \"" + name +
                            "\": not on this machine; give it with " +
                            (secret ? "--secret " : "--configmap ") + name +
                            "=FOLDER (a file per key)");
      }
      std::string prefix = api::StringAt(from[i], "prefix");
      for (const auto& [key, value] : *data) {
        defined[prefix + key] = value;
        source[prefix + key] = EnvSource::kTemplate;
        pod_env.emplace_back(prefix + key, value);
      }
    }
  }
  if (c.contains("env") && c["env"].is_array()) {
    const json& env = c["env"];
    for (size_t i = 0; i < env.size(); ++i) {
      std::string epath = cpath + ".env[" + std::to_string(i) + "]";
      std::string name = api::StringAt(env[i], "name");
      std::string value;
      if (env[i].contains("valueFrom") && env[i]["valueFrom"].is_object()) {
        const json& from = env[i]["valueFrom"];
        if (from.contains("configMapKeyRef") || from.contains("secretKeyRef")) {
          bool secret = from.contains("secretKeyRef");
          StatusOr<std::optional<std::string>> v =
              ResolveKeyRef(from[secret ? "secretKeyRef" : "configMapKeyRef"], context, secret,
                            epath + ".valueFrom");
          if (!v.ok()) return v.status();
          if (!*v) continue;  // optional and absent: not set, as in a pod
          defined[name] = **v;
          source[name] = EnvSource::kTemplate;
          pod_env.emplace_back(name, **v);
          continue;
        }
        if (!from.contains("fieldRef"))
          return InvalidError(epath + ".valueFrom: Unsupported value: " + from.dump() +
                              ": trainctl run resolves fieldRef, configMapKeyRef and "
                              "secretKeyRef locally; set value instead");
        StatusOr<std::string> v = ResolveFieldRef(from["fieldRef"], job, pod_name, context, epath);
        if (!v.ok()) return v.status();
        value = *v;
      } else {
        value = ExpandReferences(api::StringAt(env[i], "value"), defined);
      }
      defined[name] = value;
      source[name] = EnvSource::kTemplate;
      pod_env.emplace_back(name, value);
    }
  }
  bool to_this_container =
      !context.container &&
      (!injected.default_container_only || api::StringAt(c, "name") == info.default_container) &&
      (!injected.first_container_only || ci == 0);
  if (to_this_container) {
    for (const api::EnvVar& e : injected.env) {
      std::string value = e.value;
      if (!e.value_from.is_null()) {
        StatusOr<std::string> v = ResolveFieldRef(e.value_from.value("fieldRef", json::object()),
                                                  job, pod_name, context, cpath + ".env");
        if (!v.ok()) return v.status();
        value = *v;
      } else {
        value = ExpandReferences(value, defined);
      }
      defined[e.name] = value;
      source[e.name] = EnvSource::kInjected;
      pod_env.emplace_back(e.name, value);
    }
  }
  if (context.in_container) {
    // The folders are mounted at the mount paths: nothing to rewrite.
    ContainerRun run;
    run.image = api::StringAt(c, "image");
    for (const std::string& a : command) run.command.push_back(ExpandReferences(a, defined));
    for (const std::string& a : args) run.args.push_back(ExpandReferences(a, defined));
    run.working_dir = api::StringAt(c, "workingDir");
    for (const LocalMount& m : context.mounts)
      run.mounts.push_back({m.local_path, m.mount_path, m.read_only});
    out.container = std::move(run);
    out.pull_policy = api::StringAt(c, "imagePullPolicy");
  }
  for (std::string& a : argv) a = RewritePaths(ExpandReferences(a, defined), context.mounts);
  if (!context.mounts.empty() && !context.in_container)
    for (auto& [name, value] : pod_env)
      if (source[name] == EnvSource::kTemplate) value = RewritePaths(value, context.mounts);

  std::map<std::string, std::string> final_env;
  std::vector<std::string> order;
  static const std::vector<std::string> kNoEnv;
  for (const std::string& entry : context.in_container ? kNoEnv : context.base_env) {
    std::string name = EnvName(entry);
    if (!final_env.count(name)) order.push_back(name);
    final_env[name] = entry.substr(std::min(entry.size(), name.size() + 1));
  }
  if (context.config) {
    // Later files and lines win; a name the pod defines is the pod's.
    std::map<std::string, std::string> from_files;
    std::vector<std::string> file_order;
    for (const auto& [name, value] : context.config->env_files) {
      if (!from_files.count(name)) file_order.push_back(name);
      from_files[name] = value;
    }
    for (const std::string& name : file_order) {
      if (!final_env.count(name)) order.push_back(name);
      final_env[name] = from_files[name];
      if (!source.count(name)) {
        source[name] = EnvSource::kEnvFile;
        pod_env.emplace_back(name, from_files[name]);  // listed below with its source
      }
    }
  }
  for (const auto& [name, value] : pod_env) {
    if (!final_env.count(name)) order.push_back(name);
    final_env[name] = value;
    bool listed = false;
    for (const auto& [n, s] : out.env_sources) listed = listed || n == name;
    if (!listed) out.env_sources.emplace_back(name, source[name]);
  }
  for (const std::string& name : order) out.spec.env.push_back(name + "=" + final_env[name]);

  std::string cwd = context.manifest_dir;
  std::string written = context.in_container ? "" : api::StringAt(c, "workingDir");
  std::string working_dir = RewritePaths(written, context.mounts);
  if (!working_dir.empty()) {
    cwd = working_dir[0] == '/' ? working_dir : context.manifest_dir + "/" + working_dir;
    // A folder inside a volume is made with the volume, when the replica starts.
    bool in_volume = working_dir != written;
    struct stat st;
    if (!in_volume && (stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
      return InvalidError(cpath + ".workingDir: Invalid value: \"" + working_dir +
                          "\": no such directory on this machine (" + cwd + ")");
  }
  out.spec.cwd = cwd;
  out.mounts = context.mounts;
  out.spec.argv = std::move(argv);
  out.command_field = cpath + ".command[0]";
  for (const std::string& a : out.spec.argv)
    out.display_command += (out.display_command.empty() ? "" : " ") + a;
  return out;
}

void ApplyContainerRun(PreparedLaunch& launch, const RuntimeHost& host,
                       const std::vector<std::string>& base_env) {
  ContainerRun& run = *launch.container;
  run.env_names.clear();
  std::map<std::string, bool> ours;
  for (const std::string& e : run.env) {
    std::string name = EnvName(e);
    if (!ours.count(name)) run.env_names.push_back(name);
    ours[name] = true;
  }
  launch.spec.env.clear();
  for (const std::string& e : base_env)
    if (!ours.count(EnvName(e))) launch.spec.env.push_back(e);
  launch.spec.env.insert(launch.spec.env.end(), run.env.begin(), run.env.end());
  launch.spec.argv = RunArgv(host, run);
  launch.display_command = ShellJoin(launch.spec.argv);
}

PreparedLaunch PrepareIdleLaunch(const LaunchContext& context) {
  PreparedLaunch out;
  out.spec.argv = IdleArgv();
  out.spec.env = context.base_env;
  out.spec.cwd = context.manifest_dir;
  for (const std::string& a : out.spec.argv)
    out.display_command += (out.display_command.empty() ? "" : " ") + a;
  out.command_field = "(idle replica) " + out.spec.argv[0];
  return out;
}

StatusOr<PreparedLaunch> ResolveIdleLaunch(const LaunchContext& context) {
  PreparedLaunch launch = PrepareIdleLaunch(context);
  StatusOr<std::string> exe =
      ResolveExecutable(launch.spec.argv[0], launch.spec.cwd, PathFromEnv(launch.spec.env));
  if (!exe.ok()) return InvalidError(launch.command_field + ": " + exe.status().message());
  launch.spec.argv[0] = *exe;
  return launch;
}

StatusOr<PreparedLaunch> ResolveLaunch(const api::Job& job, const std::string& type, int index,
                                       const api::ReplicaEnv& injected,
                                       const LaunchContext& context) {
  StatusOr<PreparedLaunch> launch = PrepareLaunch(job, type, index, injected, context);
  if (!launch.ok()) return launch;
  // A program inside a volume that is written when the replica starts cannot be checked now.
  if (InMadeMount(launch->spec.argv[0], launch->mounts)) return launch;
  StatusOr<std::string> exe =
      ResolveExecutable(launch->spec.argv[0], launch->spec.cwd, PathFromEnv(launch->spec.env));
  if (!exe.ok())
    return InvalidError(launch->command_field + ": " + exe.status().message() + " on this machine");
  launch->spec.argv[0] = *exe;
  return launch;
}

}  // namespace trainctl::local
