#include "prometheus_text.h"

#include <gtest/gtest.h>

namespace trainctl::bench {
namespace {

// As kube-apiserver v1.31 and the operator print them (trimmed).
constexpr std::string_view kExposition =
    "# HELP go_memstats_alloc_bytes Number of bytes allocated and still in use.\n"
    "# TYPE go_memstats_alloc_bytes gauge\n"
    "go_memstats_alloc_bytes 1.23456789e+08\n"
    "# HELP go_memstats_alloc_bytes_total Total number of bytes allocated, even if freed.\n"
    "# TYPE go_memstats_alloc_bytes_total counter\n"
    "go_memstats_alloc_bytes_total 4.294967296e+10\n"
    "controller_runtime_reconcile_total{controller=\"pytorchjob\",result=\"success\"} 8000\n"
    "controller_runtime_reconcile_total{controller=\"pytorchjob\",result=\"requeue\"} 30\n"
    "controller_runtime_reconcile_total{controller=\"tf job\",result=\"error\"} 2 1700000000000\n"
    "controller_runtime_reconcile_total_seconds 99\n";

TEST(CounterSum, ReadsAnUnlabelledCounterNotTheGaugeItsNameStartsWith) {
  EXPECT_DOUBLE_EQ(CounterSum(kExposition, kGoAllocatedBytes), 4.294967296e10);
  EXPECT_DOUBLE_EQ(CounterSum(kExposition, "go_memstats_alloc_bytes"), 1.23456789e8);
}

TEST(CounterSum, SumsEveryLabelSetPastSpacesInLabelsAndTimestamps) {
  EXPECT_DOUBLE_EQ(CounterSum(kExposition, "controller_runtime_reconcile_total"), 8032);
  EXPECT_DOUBLE_EQ(CounterSum("x_total{path=\"/a/{b}\"} 3\n", "x_total"), 3);
}

TEST(CounterSum, IsMinusOneForACounterThatIsNotThere) {
  EXPECT_EQ(CounterSum(kExposition, "process_cpu_seconds_total"), -1);
  EXPECT_EQ(CounterSum("", kGoAllocatedBytes), -1);
  EXPECT_EQ(CounterSum(kExposition, ""), -1);
  // A comment naming it is not a sample.
  EXPECT_EQ(CounterSum("# TYPE x_total counter\n", "x_total"), -1);
  // A last line without its end still counts; a broken label set does not.
  EXPECT_EQ(CounterSum("x_total 3", "x_total"), 3);
  EXPECT_EQ(CounterSum("x_total{a=\"b\" 3\n", "x_total"), -1);
  // Longer names are other counters, even where what follows would read as a number.
  EXPECT_EQ(CounterSum("x5 3\nx_total 4\n", "x"), -1);
  // A value that is not a number in full is not a sample.
  EXPECT_EQ(CounterSum("x 3abc\nx \n", "x"), -1);
}

TEST(CpuSecondsPerGib, DividesByGibAndIsMinusOneWhenEitherIsUnknown) {
  EXPECT_DOUBLE_EQ(CpuSecondsPerGib(30, 2.0 * 1024 * 1024 * 1024), 15);
  EXPECT_EQ(CpuSecondsPerGib(-1, 1e9), -1);
  EXPECT_EQ(CpuSecondsPerGib(30, -1), -1);
  EXPECT_EQ(CpuSecondsPerGib(30, 0), -1);
}

}  // namespace
}  // namespace trainctl::bench
