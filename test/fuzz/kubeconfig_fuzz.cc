// Fuzz target: a kubeconfig file's text as the CLI and the operator load it — YAML parse, then
// merge and resolve of the current context (kube::ResolveKubeconfig), without touching disk.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/yaml.h"
#include "kube/config.h"

using namespace trainctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto docs = api::ParseYamlDocuments(text, "/fuzz/config");
  if (!docs.ok() || docs->size() != 1) return 0;
  std::vector<kube::KubeconfigFile> files = {{"/fuzz/config", (*docs)[0]}};
  (void)kube::ResolveKubeconfig(files, "");
  return 0;
}
