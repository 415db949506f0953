#include "kube/exec_credential.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "api/json_bounds.h"
#include "kube/base64.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

constexpr size_t kMaxStderrInMessage = 1024;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string PluginName(const std::string& command) { return "exec plugin " + Quote(command); }

Status Malformed(const std::string& command, const std::string& api_version,
                 const std::string& what) {
  return InvalidError(PluginName(command) + ": " + what + " (expected an ExecCredential of " +
                      api_version + " on stdout)");
}

StatusOr<std::string> OptionalString(const json& obj, const char* key, const std::string& command,
                                     const std::string& api_version) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return Malformed(command, api_version, std::string("status.") + key + " is not a string");
  }
  return it->get<std::string>();
}

std::string Trim(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

StatusOr<ExecCredential> ParseExecCredential(std::string_view output,
                                             const std::string& api_version,
                                             const std::string& command) {
  std::string problem;
  json doc = api::ParseJsonWithin(output, api::JsonLimits{}, &problem);
  if (doc.is_discarded()) return Malformed(command, api_version, "stdout is " + problem);
  if (!doc.is_object()) return Malformed(command, api_version, "stdout is not a JSON object");
  auto version = doc.find("apiVersion");
  if (version == doc.end() || !version->is_string()) {
    return Malformed(command, api_version, "apiVersion is missing");
  }
  if (*version != api_version) {
    return InvalidError(PluginName(command) + ": returned apiVersion " +
                        Quote(version->get<std::string>()) + " but the kubeconfig asks for " +
                        api_version);
  }
  auto kind = doc.find("kind");
  if (kind == doc.end() || !kind->is_string() || *kind != "ExecCredential") {
    return Malformed(command, api_version, "kind is not ExecCredential");
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return Malformed(command, api_version, "status is missing");
  }
  ExecCredential cred;
  StatusOr<std::string> token = OptionalString(*status, "token", command, api_version);
  if (!token.ok()) return token.status();
  StatusOr<std::string> cert =
      OptionalString(*status, "clientCertificateData", command, api_version);
  if (!cert.ok()) return cert.status();
  StatusOr<std::string> key = OptionalString(*status, "clientKeyData", command, api_version);
  if (!key.ok()) return key.status();
  StatusOr<std::string> expiry =
      OptionalString(*status, "expirationTimestamp", command, api_version);
  if (!expiry.ok()) return expiry.status();
  if (cert->empty() != key->empty()) {
    return Malformed(command, api_version,
                     "status has only one of clientCertificateData and clientKeyData");
  }
  if (token->empty() && cert->empty()) {
    return Malformed(command, api_version,
                     "status has neither a token nor clientCertificateData/clientKeyData");
  }
  if (!expiry->empty()) {
    std::optional<Time> t = ParseRfc3339(*expiry);
    if (!t) {
      return Malformed(command, api_version,
                       "status.expirationTimestamp " + Quote(*expiry) + " is not RFC 3339");
    }
    cred.expiry = *t;
  }
  cred.token = std::move(*token);
  cred.client_cert_pem = std::move(*cert);
  cred.client_key_pem = std::move(*key);
  return cred;
}

StatusOr<bool> ExecIsInteractive(const ExecConfig& exec, bool stdin_is_terminal) {
  switch (exec.interactive_mode) {
    case InteractiveMode::kNever:
      return false;
    case InteractiveMode::kIfAvailable:
      return stdin_is_terminal;
    case InteractiveMode::kAlways:
      if (!stdin_is_terminal) {
        return FailedPreconditionError(
            PluginName(exec.command) +
            " has interactiveMode Always but standard input is not a terminal");
      }
      return true;
  }
  return false;
}

std::string ExecInfoJson(const RestConfig& config, bool interactive) {
  const ExecConfig& exec = *config.exec;
  json spec = {{"interactive", interactive}};
  if (exec.provide_cluster_info) {
    json cluster = {{"server", config.server}};
    if (!config.tls_server_name.empty()) cluster["tls-server-name"] = config.tls_server_name;
    if (config.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config.ca_pem.empty()) cluster["certificate-authority-data"] = Base64Encode(config.ca_pem);
    if (!config.proxy_url.empty()) cluster["proxy-url"] = config.proxy_url;
    if (!exec.cluster_config.is_null()) cluster["config"] = exec.cluster_config;
    spec["cluster"] = std::move(cluster);
  }
  json info = {{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}};
  return info.dump();
}

std::vector<std::string> ExecEnvironment(const std::vector<std::string>& base,
                                         const ExecConfig& exec, const std::string& exec_info) {
  std::vector<std::string> env;
  auto set = [&env](const std::string& name, const std::string& value) {
    std::string prefix = name + "=";
    for (std::string& entry : env) {
      if (entry.compare(0, prefix.size(), prefix) == 0) {
        entry = prefix + value;
        return;
      }
    }
    env.push_back(prefix + value);
  };
  for (const std::string& entry : base) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const EnvVar& var : exec.env) set(var.name, var.value);
  set("KUBERNETES_EXEC_INFO", exec_info);
  return env;
}

Status ExecStartError(const ExecConfig& exec, const Status& spawn_error) {
  std::string message = PluginName(exec.command) + ": cannot run it: " + spawn_error.message();
  if (!exec.install_hint.empty()) message += "\n" + Trim(exec.install_hint);
  return Status(spawn_error.code(), message);
}

Status ExecTimeoutError(const ExecConfig& exec, Duration timeout) {
  long long ms = timeout.count();
  std::string limit = ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
  return DeadlineExceededError(PluginName(exec.command) + " did not finish within " + limit +
                               " and was killed");
}

Status ExecExitError(const ExecConfig& exec, int exit_code, int signal,
                     const std::string& stderr_text) {
  std::string how = signal != 0 ? "was killed by signal " + std::to_string(signal)
                                : "exited with status " + std::to_string(exit_code);
  std::string err = Trim(stderr_text);
  if (err.size() > kMaxStderrInMessage) {
    err = err.substr(0, kMaxStderrInMessage) + "... (truncated)";
  }
  if (err.empty()) err = "(nothing on stderr)";
  return Status(StatusCode::kUnauthorized, PluginName(exec.command) + " " + how + ": " + err);
}

}  // namespace trainctl::kube
