#include "speed_probe.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace trainctl::bench {
namespace {

// The checksum of the keys in sorted order, sorted here another way (a multiset).
uint64_t ChecksumOfSorted(size_t keys) {
  std::mt19937_64 next(20261128);
  std::multiset<uint64_t> sorted;
  for (size_t i = 0; i < keys; ++i) sorted.insert(next());
  uint64_t sum = 0;
  size_t i = 0;
  for (uint64_t v : sorted) sum = sum * 1099511628211ULL + (v ^ i++);
  return sum;
}

TEST(ProbeWork, SortsAFixedSequenceTheSameEveryTime) {
  EXPECT_EQ(ProbeWork(0), 0u);
  EXPECT_EQ(ProbeWork(5000), ChecksumOfSorted(5000));
  EXPECT_EQ(ProbeWork(5000), ProbeWork(5000));
  EXPECT_NE(ProbeWork(5000), ProbeWork(5001));
}

TEST(TimeProbe, KeepsTheWorksChecksumAndATime) {
  const ProbeTiming t = TimeProbe(5000, 0);  // at least one try
  EXPECT_EQ(t.checksum, ChecksumOfSorted(5000));
  EXPECT_GT(t.seconds, 0);
}

}  // namespace
}  // namespace trainctl::bench
