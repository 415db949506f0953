// TokenSource: the credentials to authenticate one request with, kept current.
//
// Three kinds, picked for a RestConfig by NewTokenSource:
//  * static: the kubeconfig's token and/or client certificate;
//  * token file: the file is re-read once the last read is older than `max_age` (default
//    60 s, injected clock) or after Invalidate(), so tokens the kubelet rotates are picked up;
//    when a re-read fails the previous token is kept;
//  * exec plugin: the command runs (see exec_credential.h for the protocol, subprocess.h for
//    the running), its ExecCredential is cached until its expirationTimestamp (injected
//    clock; forever when it has none) and re-run after Invalidate() (the server said 401).
// The kubeconfig's client certificate is the base; a token or a certificate the source
// produces replaces the corresponding part.
//
// Get() may do I/O (file read, running the plugin, up to its timeout). Thread-safe: concurrent
// callers wait for one refresh instead of each running the plugin.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/config.h"

namespace trainctl::kube {

struct AuthCredentials {
  std::string bearer_token;  // empty = none
  std::string client_cert_pem;
  std::string client_key_pem;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The credentials to send now.
  virtual StatusOr<AuthCredentials> Get() = 0;
  // The server rejected the last credentials: the next Get() fetches fresh ones.
  virtual void Invalidate() = 0;
};

std::unique_ptr<TokenSource> NewStaticTokenSource(AuthCredentials credentials);

// `clock` must outlive the source.
std::unique_ptr<TokenSource> NewFileTokenSource(std::string path, AuthCredentials base,
                                                const Clock* clock,
                                                Duration max_age = std::chrono::seconds(60));

struct ExecOptions {
  Duration timeout = std::chrono::seconds(30);  // then the plugin is killed
  // Whether our stdin is a terminal; nullopt: ask isatty(0) at each run.
  std::optional<bool> stdin_is_terminal;
  // The environment the plugin's env is added to; nullopt: this process's environment.
  std::optional<std::vector<std::string>> base_env;
};

// `config.exec` must be set; `config` also provides the cluster details for
// KUBERNETES_EXEC_INFO and the base client certificate. `clock` must outlive the source.
std::unique_ptr<TokenSource> NewExecTokenSource(const RestConfig& config, const Clock* clock,
                                                ExecOptions options = {});

// The source `config` calls for: exec plugin if set; else its token file when it has no
// fixed token; else static.
std::unique_ptr<TokenSource> NewTokenSource(const RestConfig& config, const Clock* clock,
                                            ExecOptions exec_options = {});

}  // namespace trainctl::kube
