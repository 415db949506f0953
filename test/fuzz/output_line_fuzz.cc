// Fuzz target: what trainctl reads from a training's own output — every piece the metrics
// tokenizer sees (metrics/line_parser.h, cut on \n, \r and \b), torchrun's failed-worker report
// (api/torchrun_report.h) and the end of a log kept from a line start (common/text.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/torchrun_report.h"
#include "common/text.h"
#include "metrics/line_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::string_view piece : trainctl::metrics::SplitOutputLines(text))
    (void)trainctl::metrics::ParseMetricLine(piece);
  (void)trainctl::api::ParseTorchrunWorkerExit(text);
  (void)trainctl::LastLines(text, 64);
  return 0;
}
