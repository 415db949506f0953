// The exec credential plugin protocol (client.authentication.k8s.io/v1 and v1beta1), the pure
// parts: what to give the plugin (environment, KUBERNETES_EXEC_INFO, whether it may be
// interactive), how to read its ExecCredential answer, and how to word its failures.
//
// Running the plugin is token_source.cc's job (through subprocess.h). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/config.h"

namespace trainctl::kube {

// What a plugin returned (status of an ExecCredential).
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<Time> expiry;  // none: valid until the server rejects it
};

// Parses the plugin's stdout. The apiVersion must be the configured one and the kind
// ExecCredential; status needs a token or a certificate/key pair. Errors name `command` and
// say what was expected (never quoting the output, which may hold secrets).
StatusOr<ExecCredential> ParseExecCredential(std::string_view output,
                                             const std::string& api_version,
                                             const std::string& command);

// Whether the plugin runs interactively (gets the terminal's stdin): interactiveMode Never →
// no; IfAvailable → when stdin is a terminal; Always → yes, or an error without a terminal.
StatusOr<bool> ExecIsInteractive(const ExecConfig& exec, bool stdin_is_terminal);

// The KUBERNETES_EXEC_INFO value: an ExecCredential with spec.interactive, and spec.cluster
// (server, tls-server-name, insecure-skip-tls-verify, certificate-authority-data, proxy-url,
// config) when provideClusterInfo is set.
std::string ExecInfoJson(const RestConfig& config, bool interactive);

// The plugin's environment: `base` ("NAME=value" entries) with the exec config's env added
// or overriding, and KUBERNETES_EXEC_INFO set to `exec_info`.
std::vector<std::string> ExecEnvironment(const std::vector<std::string>& base,
                                         const ExecConfig& exec, const std::string& exec_info);

// How a plugin run that did not produce credentials is reported.
Status ExecStartError(const ExecConfig& exec, const Status& spawn_error);
Status ExecTimeoutError(const ExecConfig& exec, Duration timeout);
// `signal` is non-zero when the plugin was killed by that signal. Stderr is trimmed and cut
// to 1 KiB.
Status ExecExitError(const ExecConfig& exec, int exit_code, int signal,
                     const std::string& stderr_text);

}  // namespace trainctl::kube
