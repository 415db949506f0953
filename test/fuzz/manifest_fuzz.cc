// Fuzz target: a manifest as `trainctl run` reads it — YAML/JSON parse, decode, validate and
// default (api::LoadJobsFromText) — then the job printed back, as `get -o json` would.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api/job.h"
#include "api/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto jobs = trainctl::api::LoadJobsFromText(text, "fuzz.yaml");
  if (jobs.ok())
    for (const trainctl::api::LoadedJob& loaded : *jobs)
      (void)trainctl::api::EncodeJob(loaded.job).dump();
  return 0;
}
