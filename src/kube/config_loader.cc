#include "kube/config_loader.h"

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/yaml.h"
#include "kube/read_file.h"

namespace trainctl::kube {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

StatusOr<std::vector<KubeconfigFile>> ReadKubeconfigFiles(const KubeconfigPaths& paths) {
  std::vector<KubeconfigFile> files;
  for (const std::string& given : paths.paths) {
    std::string path = Absolute(given);
    StatusOr<std::string> text = ReadWholeFile(path);
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound && !paths.explicit_path) continue;
      return Status(text.status().code(), "kubeconfig " + text.status().message());
    }
    StatusOr<std::vector<nlohmann::json>> docs = api::ParseYamlDocuments(*text, path);
    if (!docs.ok()) return InvalidError("kubeconfig " + docs.status().message());
    if (docs->size() > 1) {
      return InvalidError("kubeconfig " + path + ": expected one YAML document, found " +
                          std::to_string(docs->size()));
    }
    files.push_back(KubeconfigFile{path, docs->empty() ? nlohmann::json() : (*docs)[0]});
  }
  if (files.empty()) {
    return NotFoundError("no kubeconfig found (looked for " + JoinList(paths.paths) +
                         "); set KUBECONFIG or pass --kubeconfig");
  }
  return files;
}

Status LoadReferencedFiles(RestConfig* config) {
  for (const FileReference& ref : config->unread_files) {
    StatusOr<std::string> bytes = ReadWholeFile(ref.path);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kNotFound) {
        return NotFoundError(ref.where + ": " + ref.path + " does not exist");
      }
      return IoError(ref.where + ": cannot read " + bytes.status().message());
    }
    switch (ref.field) {
      case FileField::kCertificateAuthority:
        config->ca_pem = std::move(*bytes);
        break;
      case FileField::kClientCertificate:
        config->client_cert_pem = std::move(*bytes);
        break;
      case FileField::kClientKey:
        config->client_key_pem = std::move(*bytes);
        break;
      case FileField::kTokenFile:
        break;  // re-read per request by the TokenSource
    }
  }
  config->unread_files.clear();
  return Status::Ok();
}

StatusOr<RestConfig> LoadKubeconfig(const std::string& explicit_path_or_empty,
                                    const std::string& context) {
  KubeconfigPaths paths =
      KubeconfigSearchPaths(explicit_path_or_empty, Env("KUBECONFIG"), Env("HOME"));
  StatusOr<std::vector<KubeconfigFile>> files = ReadKubeconfigFiles(paths);
  if (!files.ok()) return files.status();
  StatusOr<RestConfig> config = ResolveKubeconfig(*files, context);
  if (!config.ok()) return config.status();
  TRAINCTL_RETURN_IF_ERROR(LoadReferencedFiles(&*config));
  return config;
}

StatusOr<RestConfig> LoadInCluster(const InClusterPaths& paths) {
  InClusterInputs inputs;
  inputs.service_host = Env("KUBERNETES_SERVICE_HOST");
  inputs.service_port = Env("KUBERNETES_SERVICE_PORT");
  inputs.pod_namespace = Env("POD_NAMESPACE");
  inputs.token_file = paths.token;
  if (inputs.service_host.empty() || inputs.service_port.empty()) {
    return ResolveInCluster(inputs);  // the not-in-a-cluster error
  }
  StatusOr<std::string> token = ReadWholeFile(paths.token);
  if (!token.ok()) {
    return Status(token.status().code(),
                  "in-cluster service account token: " + token.status().message());
  }
  StatusOr<std::string> ca = ReadWholeFile(paths.ca);
  if (!ca.ok()) {
    return Status(ca.status().code(), "in-cluster service account CA: " + ca.status().message());
  }
  inputs.ca_pem = std::move(*ca);
  StatusOr<std::string> ns = ReadWholeFile(paths.namespace_file);
  if (ns.ok()) inputs.namespace_text = std::move(*ns);
  return ResolveInCluster(inputs);
}

StatusOr<RestConfig> LoadClientConfig(const std::string& explicit_path_or_empty) {
  if (!explicit_path_or_empty.empty() || !Env("KUBECONFIG").empty())
    return LoadKubeconfig(explicit_path_or_empty, "");
  StatusOr<RestConfig> in_cluster = LoadInCluster();
  if (in_cluster.ok() || in_cluster.status().code() != StatusCode::kFailedPrecondition)
    return in_cluster;
  return LoadKubeconfig("", "");
}

}  // namespace trainctl::kube
