#include "kube/config.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "kube/base64.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

constexpr char kExecExtensionName[] = "client.authentication.k8s.io/exec";

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string JsonTypeName(const json& value) {
  if (value.is_object()) return "a mapping";
  if (value.is_array()) return "a list";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  return "null";
}

// Typed access to the optional fields of one kubeconfig mapping; errors say where it is.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  const std::string& where() const { return where_; }

  // Present and not null.
  bool Has(const char* key) const {
    if (!obj_.is_object()) return false;
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }

  const json& Get(const char* key) const {
    static const json kNull;
    if (!obj_.is_object()) return kNull;
    auto it = obj_.find(key);
    return it == obj_.end() ? kNull : *it;
  }

  StatusOr<std::string> String(const char* key) const {
    const json& v = Get(key);
    if (v.is_null()) return std::string();
    if (!v.is_string()) return TypeError(key, v, "a string");
    return v.get<std::string>();
  }

  StatusOr<bool> Bool(const char* key) const {
    const json& v = Get(key);
    if (v.is_null()) return false;
    if (!v.is_boolean()) return TypeError(key, v, "true or false");
    return v.get<bool>();
  }

  // A `*-data` field: base64 text decoded to bytes.
  StatusOr<std::string> Data(const char* key) const {
    StatusOr<std::string> text = String(key);
    if (!text.ok()) return text.status();
    std::optional<std::string> bytes = Base64Decode(*text);
    if (!bytes) return InvalidError(where_ + ": " + key + ": not valid base64");
    return std::move(*bytes);
  }

  Status Error(const std::string& what) const { return InvalidError(where_ + ": " + what); }

 private:
  Status TypeError(const char* key, const json& v, const char* expected) const {
    return InvalidError(where_ + ": " + key + ": expected " + expected + ", got " +
                        JsonTypeName(v));
  }

  const json& obj_;
  std::string where_;
};

// A named cluster, user or context and the file that defined it.
struct Entry {
  const json* body;  // a mapping, or null
  const std::string* file;
};

struct MergedConfig {
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
  std::string current_context;
};

std::string Names(const std::map<std::string, Entry>& entries, const char* what) {
  if (entries.empty()) return std::string("no ") + what + " defined";
  std::string out = std::string(what) + ": ";
  bool first = true;
  for (const auto& [name, entry] : entries) {
    if (!first) out += ", ";
    out += name;
    first = false;
  }
  return out;
}

// Adds the entries of one named list (`clusters`, `users`, `contexts`) of `file`; names
// already present (from an earlier file or earlier in this one) are kept.
Status MergeList(const KubeconfigFile& file, const char* list_key, const char* body_key,
                 std::map<std::string, Entry>* out) {
  static const json kNull;
  const std::string where = "kubeconfig " + file.path;
  auto list = file.doc.find(list_key);
  if (list == file.doc.end() || list->is_null()) return Status::Ok();
  if (!list->is_array()) {
    return InvalidError(where + ": " + list_key + ": expected a list, got " + JsonTypeName(*list));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string item_where = where + ": " + list_key + "[" + std::to_string(i) + "]";
    if (!item.is_object()) {
      return InvalidError(item_where + ": expected a mapping with name and " + body_key);
    }
    auto name = item.find("name");
    if (name != item.end() && !name->is_null() && !name->is_string()) {
      return InvalidError(item_where + ": name: expected a string, got " + JsonTypeName(*name) +
                          " (quote it)");
    }
    if (name == item.end() || name->is_null() || name->get<std::string>().empty()) {
      return InvalidError(item_where + ": name is required");
    }
    auto body = item.find(body_key);
    const json* body_ptr = body == item.end() ? &kNull : &*body;
    if (!body_ptr->is_null() && !body_ptr->is_object()) {
      return InvalidError(item_where + ": " + body_key + ": expected a mapping, got " +
                          JsonTypeName(*body_ptr));
    }
    out->emplace(name->get<std::string>(), Entry{body_ptr, &file.path});
  }
  return Status::Ok();
}

Status MergeFile(const KubeconfigFile& file, MergedConfig* merged) {
  if (file.doc.is_null()) return Status::Ok();
  const std::string where = "kubeconfig " + file.path;
  if (!file.doc.is_object()) {
    return InvalidError(where + ": expected a mapping at the top level, got " +
                        JsonTypeName(file.doc));
  }
  Fields top(file.doc, where);
  StatusOr<std::string> kind = top.String("kind");
  if (!kind.ok()) return kind.status();
  if (!kind->empty() && *kind != "Config") {
    return InvalidError(where + ": kind is " + Quote(*kind) + ", expected Config");
  }
  TRAINCTL_RETURN_IF_ERROR(MergeList(file, "clusters", "cluster", &merged->clusters));
  TRAINCTL_RETURN_IF_ERROR(MergeList(file, "users", "user", &merged->users));
  TRAINCTL_RETURN_IF_ERROR(MergeList(file, "contexts", "context", &merged->contexts));
  StatusOr<std::string> current = top.String("current-context");
  if (!current.ok()) return current.status();
  if (merged->current_context.empty()) merged->current_context = *current;
  return Status::Ok();
}

// `path` as written in the kubeconfig `file`: relative paths are relative to its directory.
std::string ResolvePath(const std::string& file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  return (dir / path).lexically_normal().string();
}

// Takes `<name>-data` when set, else queues the file `<name>` to be read.
Status DataOrFile(const Fields& fields, const std::string& file, const std::string& name,
                  FileField field, std::string* data, RestConfig* config) {
  std::string data_key = name + "-data";
  StatusOr<std::string> bytes = fields.Data(data_key.c_str());
  if (!bytes.ok()) return bytes.status();
  if (!bytes->empty()) {
    *data = std::move(*bytes);
    return Status::Ok();
  }
  StatusOr<std::string> path = fields.String(name.c_str());
  if (!path.ok()) return path.status();
  if (!path->empty()) {
    config->unread_files.push_back(
        FileReference{field, ResolvePath(file, *path), fields.where() + ": " + name});
  }
  return Status::Ok();
}

bool HasFileFor(const RestConfig& config, FileField field) {
  for (const FileReference& ref : config.unread_files) {
    if (ref.field == field) return true;
  }
  return false;
}

void DropFilesFor(RestConfig* config, FileField field) {
  std::erase_if(config->unread_files, [&](const FileReference& r) { return r.field == field; });
}

StatusOr<std::string> NormalizeServer(const Fields& fields, std::string server) {
  if (server.empty()) return fields.Error("server is not set");
  if (server.find("://") == std::string::npos) server = "https://" + server;
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return fields.Error("server " + Quote(server) + " must start with https:// or http://");
  }
  while (!server.empty() && server.back() == '/') server.pop_back();
  return server;
}

// The cluster's `client.authentication.k8s.io/exec` extension, or null.
StatusOr<json> ExecExtension(const Fields& fields) {
  const json& extensions = fields.Get("extensions");
  if (extensions.is_null()) return json();
  if (!extensions.is_array()) return fields.Error("extensions: expected a list");
  for (const json& item : extensions) {
    if (!item.is_object()) return fields.Error("extensions: expected a list of mappings");
    auto name = item.find("name");
    if (name != item.end() && name->is_string() && *name == kExecExtensionName) {
      auto ext = item.find("extension");
      return ext == item.end() ? json() : *ext;
    }
  }
  return json();
}

Status ApplyCluster(const Entry& entry, const std::string& name, RestConfig* config,
                    json* exec_extension) {
  Fields fields(*entry.body, "kubeconfig " + *entry.file + ": cluster " + Quote(name));
  StatusOr<std::string> server = fields.String("server");
  if (!server.ok()) return server.status();
  StatusOr<std::string> normalized = NormalizeServer(fields, *server);
  if (!normalized.ok()) return normalized.status();
  config->server = std::move(*normalized);
  TRAINCTL_RETURN_IF_ERROR(DataOrFile(fields, *entry.file, "certificate-authority",
                                      FileField::kCertificateAuthority, &config->ca_pem, config));
  StatusOr<bool> insecure = fields.Bool("insecure-skip-tls-verify");
  if (!insecure.ok()) return insecure.status();
  config->insecure_skip_tls_verify = *insecure;
  if (*insecure) {
    // Nothing is verified, so a CA would only be misleading.
    config->ca_pem.clear();
    DropFilesFor(config, FileField::kCertificateAuthority);
  }
  StatusOr<std::string> tls_server_name = fields.String("tls-server-name");
  if (!tls_server_name.ok()) return tls_server_name.status();
  config->tls_server_name = std::move(*tls_server_name);
  StatusOr<std::string> proxy_url = fields.String("proxy-url");
  if (!proxy_url.ok()) return proxy_url.status();
  config->proxy_url = std::move(*proxy_url);
  StatusOr<json> extension = ExecExtension(fields);
  if (!extension.ok()) return extension.status();
  *exec_extension = std::move(*extension);
  return Status::Ok();
}

StatusOr<InteractiveMode> ParseInteractiveMode(const Fields& fields, const std::string& text,
                                               const std::string& api_version) {
  if (text == "Never") return InteractiveMode::kNever;
  if (text == "IfAvailable") return InteractiveMode::kIfAvailable;
  if (text == "Always") return InteractiveMode::kAlways;
  if (text.empty()) {
    if (api_version == kExecApiV1Beta1) return InteractiveMode::kIfAvailable;
    return fields.Error("exec: interactiveMode is required for " + api_version +
                        " (Never, IfAvailable or Always)");
  }
  return fields.Error("exec: interactiveMode " + Quote(text) +
                      " is not one of Never, IfAvailable, Always");
}

StatusOr<std::vector<std::string>> StringList(const Fields& fields, const char* key) {
  const json& list = fields.Get(key);
  std::vector<std::string> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return fields.Error(std::string(key) + ": expected a list of strings");
  for (const json& item : list) {
    if (!item.is_string()) return fields.Error(std::string(key) + ": expected a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

StatusOr<std::vector<EnvVar>> ExecEnv(const Fields& fields) {
  const json& list = fields.Get("env");
  std::vector<EnvVar> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return fields.Error("env: expected a list of {name, value}");
  for (size_t i = 0; i < list.size(); ++i) {
    Fields item(list[i], fields.where() + ": env[" + std::to_string(i) + "]");
    if (!list[i].is_object()) return item.Error("expected a mapping with name and value");
    StatusOr<std::string> name = item.String("name");
    if (!name.ok()) return name.status();
    if (name->empty()) return item.Error("name is required");
    StatusOr<std::string> value = item.String("value");
    if (!value.ok()) return value.status();
    out.push_back(EnvVar{std::move(*name), std::move(*value)});
  }
  return out;
}

StatusOr<ExecConfig> ParseExec(const json& body, const std::string& where,
                               const std::string& file) {
  Fields fields(body, where + ": exec");
  if (!body.is_object()) return fields.Error("expected a mapping");
  ExecConfig exec;
  StatusOr<std::string> api_version = fields.String("apiVersion");
  if (!api_version.ok()) return api_version.status();
  if (*api_version != kExecApiV1 && *api_version != kExecApiV1Beta1) {
    return fields.Error("apiVersion " + Quote(*api_version) + " is not supported (use " +
                        kExecApiV1 + " or " + kExecApiV1Beta1 + ")");
  }
  exec.api_version = std::move(*api_version);
  StatusOr<std::string> command = fields.String("command");
  if (!command.ok()) return command.status();
  if (command->empty()) return fields.Error("command is required");
  // A bare name is looked up in PATH; anything with a '/' is a path like the others.
  exec.command = command->find('/') == std::string::npos ? *command : ResolvePath(file, *command);
  StatusOr<std::vector<std::string>> args = StringList(fields, "args");
  if (!args.ok()) return args.status();
  exec.args = std::move(*args);
  StatusOr<std::vector<EnvVar>> env = ExecEnv(fields);
  if (!env.ok()) return env.status();
  exec.env = std::move(*env);
  StatusOr<std::string> mode_text = fields.String("interactiveMode");
  if (!mode_text.ok()) return mode_text.status();
  Fields user_fields(body, where);
  StatusOr<InteractiveMode> mode = ParseInteractiveMode(user_fields, *mode_text, exec.api_version);
  if (!mode.ok()) return mode.status();
  exec.interactive_mode = *mode;
  StatusOr<bool> provide = fields.Bool("provideClusterInfo");
  if (!provide.ok()) return provide.status();
  exec.provide_cluster_info = *provide;
  StatusOr<std::string> hint = fields.String("installHint");
  if (!hint.ok()) return hint.status();
  exec.install_hint = std::move(*hint);
  return exec;
}

Status RejectUnsupported(const Fields& fields) {
  if (fields.Has("auth-provider")) {
    StatusOr<std::string> provider = Fields(fields.Get("auth-provider"), "").String("name");
    std::string name = provider.ok() && !provider->empty() ? " " + Quote(*provider) : "";
    return fields.Error("auth-provider" + name +
                        " is no longer supported (it was removed from Kubernetes clients in "
                        "1.26); use an exec credential plugin instead (for example "
                        "gke-gcloud-auth-plugin or kubelogin)");
  }
  if (fields.Has("username") || fields.Has("password")) {
    return fields.Error(
        "username/password (basic) authentication is not supported; use a token, a client "
        "certificate or an exec credential plugin");
  }
  for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
    if (fields.Has(key)) {
      return fields.Error(std::string(key) + ": impersonation is not supported");
    }
  }
  return Status::Ok();
}

Status ApplyUser(const Entry& entry, const std::string& name, const json& exec_extension,
                 RestConfig* config) {
  Fields fields(*entry.body, "kubeconfig " + *entry.file + ": user " + Quote(name));
  TRAINCTL_RETURN_IF_ERROR(RejectUnsupported(fields));
  TRAINCTL_RETURN_IF_ERROR(DataOrFile(fields, *entry.file, "client-certificate",
                                      FileField::kClientCertificate, &config->client_cert_pem,
                                      config));
  TRAINCTL_RETURN_IF_ERROR(DataOrFile(fields, *entry.file, "client-key", FileField::kClientKey,
                                      &config->client_key_pem, config));
  bool has_cert =
      !config->client_cert_pem.empty() || HasFileFor(*config, FileField::kClientCertificate);
  bool has_key = !config->client_key_pem.empty() || HasFileFor(*config, FileField::kClientKey);
  if (has_cert != has_key) {
    return fields.Error(has_cert ? "client-certificate is set but client-key is not"
                                 : "client-key is set but client-certificate is not");
  }
  StatusOr<std::string> token = fields.String("token");
  if (!token.ok()) return token.status();
  config->bearer_token = std::move(*token);
  StatusOr<std::string> token_file = fields.String("tokenFile");
  if (!token_file.ok()) return token_file.status();
  if (config->bearer_token.empty() && !token_file->empty()) {
    config->token_file = ResolvePath(*entry.file, *token_file);
    config->unread_files.push_back(
        FileReference{FileField::kTokenFile, config->token_file, fields.where() + ": tokenFile"});
  }
  if (fields.Has("exec")) {
    if (!config->bearer_token.empty() || !config->token_file.empty()) {
      return fields.Error("token/tokenFile and exec are both set; use one of them");
    }
    StatusOr<ExecConfig> exec = ParseExec(fields.Get("exec"), fields.where(), *entry.file);
    if (!exec.ok()) return exec.status();
    exec->cluster_config = exec_extension;
    config->exec = std::move(*exec);
  }
  return Status::Ok();
}

std::string JoinPaths(const std::vector<KubeconfigFile>& files) {
  std::string out;
  for (const KubeconfigFile& f : files) {
    if (!out.empty()) out += ":";
    out += f.path;
  }
  return out;
}

}  // namespace

StatusOr<RestConfig> ResolveKubeconfig(const std::vector<KubeconfigFile>& files,
                                       const std::string& context_override) {
  if (files.empty()) return InvalidError("no kubeconfig file to read");
  MergedConfig merged;
  for (const KubeconfigFile& file : files) TRAINCTL_RETURN_IF_ERROR(MergeFile(file, &merged));
  const std::string all = "kubeconfig " + JoinPaths(files);

  std::string context_name = context_override.empty() ? merged.current_context : context_override;
  if (context_name.empty()) {
    return InvalidError(all + ": current-context is not set and no context was given (" +
                        Names(merged.contexts, "contexts") + ")");
  }
  auto context = merged.contexts.find(context_name);
  if (context == merged.contexts.end()) {
    return InvalidError(all + ": context " + Quote(context_name) + " not found (" +
                        Names(merged.contexts, "contexts") + ")");
  }
  const std::string& context_file = *context->second.file;
  Fields context_fields(*context->second.body,
                        "kubeconfig " + context_file + ": context " + Quote(context_name));
  StatusOr<std::string> cluster_name = context_fields.String("cluster");
  if (!cluster_name.ok()) return cluster_name.status();
  StatusOr<std::string> user_name = context_fields.String("user");
  if (!user_name.ok()) return user_name.status();
  StatusOr<std::string> namespace_name = context_fields.String("namespace");
  if (!namespace_name.ok()) return namespace_name.status();

  if (cluster_name->empty()) return context_fields.Error("no cluster is set");
  auto cluster = merged.clusters.find(*cluster_name);
  if (cluster == merged.clusters.end()) {
    return context_fields.Error("cluster " + Quote(*cluster_name) + " not found (" +
                                Names(merged.clusters, "clusters") + ")");
  }
  const Entry* user = nullptr;
  if (!user_name->empty()) {  // no user: anonymous
    auto it = merged.users.find(*user_name);
    if (it == merged.users.end()) {
      return context_fields.Error("user " + Quote(*user_name) + " not found (" +
                                  Names(merged.users, "users") + ")");
    }
    user = &it->second;
  }

  RestConfig config;
  config.context = context_name;
  config.source = "kubeconfig " + context_file;
  if (!namespace_name->empty()) config.namespace_name = std::move(*namespace_name);
  json exec_extension;
  TRAINCTL_RETURN_IF_ERROR(ApplyCluster(cluster->second, *cluster_name, &config, &exec_extension));
  if (user != nullptr) {
    TRAINCTL_RETURN_IF_ERROR(ApplyUser(*user, *user_name, exec_extension, &config));
  }
  return config;
}

KubeconfigPaths KubeconfigSearchPaths(const std::string& explicit_path,
                                      const std::string& kubeconfig_env, const std::string& home) {
  KubeconfigPaths out;
  if (!explicit_path.empty()) {
    out.paths.push_back(explicit_path);
    out.explicit_path = true;
    return out;
  }
  size_t start = 0;
  while (start <= kubeconfig_env.size()) {
    size_t end = kubeconfig_env.find(':', start);
    if (end == std::string::npos) end = kubeconfig_env.size();
    std::string path = kubeconfig_env.substr(start, end - start);
    if (!path.empty() && std::find(out.paths.begin(), out.paths.end(), path) == out.paths.end()) {
      out.paths.push_back(std::move(path));
    }
    start = end + 1;
  }
  if (out.paths.empty() && !home.empty()) out.paths.push_back(home + "/.kube/config");
  return out;
}

std::string JoinHostPort(const std::string& host, const std::string& port) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + port;
  }
  return host + ":" + port;
}

StatusOr<RestConfig> ResolveInCluster(const InClusterInputs& inputs) {
  if (inputs.service_host.empty() || inputs.service_port.empty()) {
    return FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  RestConfig config;
  config.source = "in-cluster";
  config.server = "https://" + JoinHostPort(inputs.service_host, inputs.service_port);
  config.ca_pem = inputs.ca_pem;
  config.token_file = inputs.token_file;
  std::string ns = inputs.pod_namespace;
  if (ns.empty()) {
    const char* space = " \t\r\n";
    size_t begin = inputs.namespace_text.find_first_not_of(space);
    if (begin != std::string::npos) {
      size_t end = inputs.namespace_text.find_last_not_of(space);
      ns = inputs.namespace_text.substr(begin, end - begin + 1);
    }
  }
  if (!ns.empty()) config.namespace_name = ns;
  return config;
}

}  // namespace trainctl::kube
