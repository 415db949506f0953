// Reading client configuration from this machine: kubeconfig files (--kubeconfig, $KUBECONFIG
// or ~/.kube/config), the files they refer to, and a pod's service account.
//
// The rules live in config.h (pure); these functions only gather their inputs: they read
// files and the process environment. Thread-safe as long as nobody modifies the environment
// concurrently.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "kube/config.h"

namespace trainctl::kube {

// Reads and parses the files. Missing files are skipped (as kubectl does) unless the path
// was explicit; NotFound when no file at all could be read. Parse errors name the file.
StatusOr<std::vector<KubeconfigFile>> ReadKubeconfigFiles(const KubeconfigPaths& paths);

// Reads the files in `config->unread_files` into the CA / client certificate / client key
// fields and checks that a tokenFile is readable (it is re-read later by the TokenSource).
// Errors name the kubeconfig entry, the field and the path. Empties `unread_files`.
Status LoadReferencedFiles(RestConfig* config);

// kubectl's loading: the files from KubeconfigSearchPaths($KUBECONFIG, $HOME), merged,
// `context` (or the current-context) resolved, referenced files read.
StatusOr<RestConfig> LoadKubeconfig(const std::string& explicit_path_or_empty,
                                    const std::string& context);

struct InClusterPaths {
  std::string token = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// A pod's configuration from $KUBERNETES_SERVICE_HOST/PORT, $POD_NAMESPACE and the service
// account files. FailedPrecondition when not in a cluster; the token and CA must be readable;
// `token_file` is set so the token is re-read as the kubelet rotates it.
StatusOr<RestConfig> LoadInCluster(const InClusterPaths& paths = {});

// What a client uses when nothing else is said, in this order: the explicit kubeconfig or
// $KUBECONFIG when set; in a pod, the service account; else ~/.kube/config.
StatusOr<RestConfig> LoadClientConfig(const std::string& explicit_path_or_empty);

}  // namespace trainctl::kube
