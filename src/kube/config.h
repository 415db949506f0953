// Client configuration: what the transport needs to reach and authenticate to one API server,
// and the pure rules that produce it from kubeconfig documents or in-cluster inputs.
//
// ResolveKubeconfig applies kubectl's rules to already parsed kubeconfig files: several files
// merge first-wins (for each named cluster, user and context, and for current-context);
// relative paths resolve against the directory of the file that defined the entry; `*-data`
// fields are base64-decoded; `*-data` wins over the file form of the same field;
// insecure-skip-tls-verify drops any CA. Files a kubeconfig refers to (certificate-authority,
// client-certificate, client-key, tokenFile) are *not* read here: they are listed in
// `RestConfig::unread_files` for LoadReferencedFiles (config_loader.h). Removed or unsupported
// kinds of authentication (auth-provider, username/password, impersonation) are errors.
//
// KubeconfigSearchPaths picks the files to read. ResolveInCluster builds the config a pod uses from
// its service account inputs.
//
// Everything here is pure (no file, environment or clock access) and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace trainctl::kube {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1Beta1[] = "client.authentication.k8s.io/v1beta1";

// When an exec plugin may talk to the user (kubeconfig `interactiveMode`).
enum class InteractiveMode { kNever, kIfAvailable, kAlways };

struct EnvVar {
  std::string name;
  std::string value;
};

// A kubeconfig user's `exec` credential plugin.
struct ExecConfig {
  std::string api_version;  // kExecApiV1 or kExecApiV1Beta1
  // Resolved against the kubeconfig's directory when it contains a '/'; a bare name is looked
  // up in PATH when the plugin runs.
  std::string command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;  // added to (and overriding) the caller's environment
  InteractiveMode interactive_mode = InteractiveMode::kIfAvailable;
  bool provide_cluster_info = false;
  std::string install_hint;  // shown when the command cannot be started
  // The cluster's `client.authentication.k8s.io/exec` extension, passed to the plugin as
  // spec.cluster.config when provide_cluster_info is set; null when absent.
  nlohmann::json cluster_config;
};

// Which RestConfig field a referenced file fills.
enum class FileField { kCertificateAuthority, kClientCertificate, kClientKey, kTokenFile };

// A file the kubeconfig refers to, still to be read.
struct FileReference {
  FileField field;
  std::string path;   // resolved against the kubeconfig's directory
  std::string where;  // for errors: `kubeconfig /x/config: user "u": client-certificate`
};

struct RestConfig {
  // Scheme, host, port and an optional path prefix, without a trailing '/':
  // "https://10.96.0.1:443".
  std::string server;
  std::string ca_pem;  // PEM bytes; empty = the system trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI and the name to verify; empty = the server's host
  std::string client_cert_pem;  // PEM bytes; empty = no client certificate
  std::string client_key_pem;
  std::string bearer_token;  // a fixed token; wins over token_file
  // A token file to re-read while running (in-cluster projected tokens, kubeconfig tokenFile).
  std::string token_file;
  std::optional<ExecConfig> exec;
  std::string proxy_url;
  std::string namespace_name = "default";  // the context's namespace
  std::string user_agent = "trainctl";
  double qps = 20;  // client-side rate limit; a negative value turns the limiter off
  int burst = 30;
  // Requests on their callers' own keep-alive connections (TransportConfig::direct_connections).
  size_t direct_connections = 8;

  std::string context;  // the selected kubeconfig context (empty in-cluster)
  std::string source;   // for messages: "kubeconfig /x/config" or "in-cluster"

  // Filled by ResolveKubeconfig, emptied by LoadReferencedFiles.
  std::vector<FileReference> unread_files;
};

// One kubeconfig file as read from disk: its path (for errors and relative paths) and its
// parsed document (null for an empty file).
struct KubeconfigFile {
  std::string path;
  nlohmann::json doc;
};

// Merges `files` (in KUBECONFIG order) and resolves the context named `context_override`, or
// the current-context when that is empty. Errors name the kubeconfig file and the missing or
// bad entry, e.g. `kubeconfig /x/config: context "prod" not found (contexts: a, b)`.
StatusOr<RestConfig> ResolveKubeconfig(const std::vector<KubeconfigFile>& files,
                                       const std::string& context_override);

// Which kubeconfig files to read, in merge order.
struct KubeconfigPaths {
  std::vector<std::string> paths;
  bool explicit_path = false;  // given by the user (--kubeconfig): a missing file is an error
};

// kubectl's choice: the explicit path if given; else the non-empty, de-duplicated entries of
// $KUBECONFIG (`kubeconfig_env`, ':'-separated) when it has any; else `home`/.kube/config.
KubeconfigPaths KubeconfigSearchPaths(const std::string& explicit_path,
                                      const std::string& kubeconfig_env, const std::string& home);

// What a pod knows about its API server: the service environment and the service account
// files' contents.
struct InClusterInputs {
  std::string service_host;    // $KUBERNETES_SERVICE_HOST (an IPv6 address is bare)
  std::string service_port;    // $KUBERNETES_SERVICE_PORT
  std::string token_file;      // path of the (rotating) token
  std::string ca_pem;          // contents of ca.crt
  std::string namespace_text;  // contents of the namespace file; empty when absent
  std::string pod_namespace;   // $POD_NAMESPACE, which wins when set
};

StatusOr<RestConfig> ResolveInCluster(const InClusterInputs& inputs);

// "host:port", with an IPv6 host in brackets ("[fd00::1]:443").
std::string JoinHostPort(const std::string& host, const std::string& port);

}  // namespace trainctl::kube
