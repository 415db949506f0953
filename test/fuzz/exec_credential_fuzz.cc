// Fuzz target: an exec credential plugin's stdout (kube::ParseExecCredential), both API versions.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/exec_credential.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)trainctl::kube::ParseExecCredential(text, trainctl::kube::kExecApiV1, "fuzz-plugin");
  (void)trainctl::kube::ParseExecCredential(text, trainctl::kube::kExecApiV1Beta1, "fuzz-plugin");
  return 0;
}
