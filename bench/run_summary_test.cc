// Unit tests for the summaries of repeated benchmark runs (bench/run_summary.h).
#include "run_summary.h"

#include <gtest/gtest.h>

namespace trainctl::bench {
namespace {

TEST(RunSummary, MedianAndRangeOfTheKnownValues) {
  Spread odd = SpreadOf({104.5, 98.1, 110.5});
  EXPECT_EQ(odd.runs, 3);
  EXPECT_DOUBLE_EQ(odd.median, 104.5);
  EXPECT_DOUBLE_EQ(odd.low, 98.1);
  EXPECT_DOUBLE_EQ(odd.high, 110.5);
  Spread even = SpreadOf({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  Spread unknown = SpreadOf({-1, 7, -1});
  EXPECT_EQ(unknown.runs, 1);
  EXPECT_DOUBLE_EQ(unknown.median, 7);
  EXPECT_EQ(SpreadOf({}).runs, 0);
  EXPECT_EQ(SpreadOf({-1}).runs, 0);
}

TEST(RunSummary, Formatting) {
  EXPECT_EQ(FormatSpread(SpreadOf({104.54, 98.1, 110.5}), 1, " s"), "104.5 s (98.1–110.5)");
  EXPECT_EQ(FormatSpread(SpreadOf({1.071}), 2), "1.07");
  EXPECT_EQ(FormatSpread(SpreadOf({}), 1), "—");
}

TEST(RunSummary, SidesAlternateRoundByRound) {
  std::vector<std::string> sides = {"trainctl", "upstream", "floor"};
  EXPECT_EQ(RoundOrder(sides, 0), sides);
  EXPECT_EQ(RoundOrder(sides, 1), (std::vector<std::string>{"floor", "upstream", "trainctl"}));
  EXPECT_EQ(RoundOrder(sides, 2), sides);
  // Over an even number of rounds the first and last sides run first equally often.
  std::vector<int> first(3, 0);
  for (int round = 0; round < 4; ++round)
    for (size_t i = 0; i < sides.size(); ++i)
      if (RoundOrder(sides, round)[0] == sides[i]) first[i]++;
  EXPECT_EQ(first, (std::vector<int>{2, 0, 2}));
}

TEST(RunSummary, RatiosArePairedByRound) {
  // Round 2 was slow for both: paired, it does not count against the side.
  std::vector<double> side = {105, 130, 104}, floor = {100, 125, 100};
  std::vector<double> ratios = PairedRatios(side, floor);
  ASSERT_EQ(ratios.size(), 3u);
  EXPECT_DOUBLE_EQ(ratios[0], 1.05);
  EXPECT_DOUBLE_EQ(ratios[1], 1.04);
  EXPECT_DOUBLE_EQ(SpreadOf(ratios).median, 1.04);
  EXPECT_DOUBLE_EQ(PairedRatios({-1, 5}, {10, 0})[0], -1) << "unknown side";
  EXPECT_DOUBLE_EQ(PairedRatios({-1, 5}, {10, 0})[1], -1) << "no floor";
}

TEST(RunSummary, PercentilesByNearestRank) {
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(hundred, 0.5), 50);
  EXPECT_DOUBLE_EQ(Percentile(hundred, 0.99), 99);
  EXPECT_DOUBLE_EQ(Percentile(hundred, 1), 100);
  EXPECT_DOUBLE_EQ(Percentile({-1, 3, -1}, 0.5), 3);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), -1);
  EXPECT_DOUBLE_EQ(Percentile({7}, 0), 7);
}

TEST(RunSummary, StageLagsSplitTheWaitBetweenSchedulerAndNode) {
  // Created at 0, 1, 2; bound 0.5, 4, 2.1 s later; Running 0.2, 0.2, 3 s after binding.
  StageLags lags = SummarizeStages({{0, 0.5, 0.7}, {1, 5, 5.2}, {2, 4.1, 7.1}});
  EXPECT_DOUBLE_EQ(lags.all_bound, 5);
  EXPECT_DOUBLE_EQ(lags.bind_p50, 2.1);
  EXPECT_DOUBLE_EQ(lags.bind_max, 4);
  EXPECT_NEAR(lags.start_p50, 0.2, 1e-9);
  EXPECT_NEAR(lags.start_max, 3, 1e-9);
  // A pod never seen bound counts in no lag.
  StageLags unbound = SummarizeStages({{0, -1, -1}, {1, 2, 3}});
  EXPECT_DOUBLE_EQ(unbound.bind_max, 1);
  EXPECT_DOUBLE_EQ(unbound.all_bound, 2);
}

}  // namespace
}  // namespace trainctl::bench
