// Fuzz target: an AdmissionReview body as the webhook receives it, for the kind chosen by the
// first byte (admission::ReviewAdmission: bounded parse, decode, validate, update rules); the answer
// is printed as the webhook sends it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/kinds.h"
#include "admission/admission.h"

using namespace trainctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& kinds = api::AllKinds();
  api::Kind kind = kinds[data[0] % kinds.size()].kind;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  (void)admission::ReviewAdmission(kind, body).dump();
  return 0;
}
