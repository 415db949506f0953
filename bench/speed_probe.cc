#include "speed_probe.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

namespace trainctl::bench {

uint64_t ProbeWork(size_t keys) {
  std::mt19937_64 next(20261128);
  std::vector<uint64_t> values(keys);
  for (uint64_t& v : values) v = next();
  std::sort(values.begin(), values.end());
  uint64_t sum = 0;
  for (size_t i = 0; i < values.size(); ++i) sum = sum * 1099511628211ULL + (values[i] ^ i);
  return sum;
}

ProbeTiming TimeProbe(size_t keys, int tries) {
  ProbeTiming best;
  for (int i = 0; i < std::max(1, tries); ++i) {
    const auto start = std::chrono::steady_clock::now();
    const uint64_t checksum = ProbeWork(keys);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i == 0 || took < best.seconds) best.seconds = took;
    best.checksum = checksum;
  }
  return best;
}

}  // namespace trainctl::bench
