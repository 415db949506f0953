#include "run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainctl::bench {

Spread SpreadOf(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return v < 0; }),
               values.end());
  Spread out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  out.runs = static_cast<int>(n);
  out.low = values.front();
  out.high = values.back();
  out.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return out;
}

std::string FormatSpread(const Spread& spread, int digits, const std::string& unit) {
  if (spread.runs == 0) return "—";
  auto number = [&](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  std::string out = number(spread.median) + unit;
  if (spread.runs > 1) out += " (" + number(spread.low) + "–" + number(spread.high) + ")";
  return out;
}

std::vector<std::string> RoundOrder(const std::vector<std::string>& sides, int round) {
  std::vector<std::string> order = sides;
  if (round % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

std::vector<double> PairedRatios(const std::vector<double>& value,
                                 const std::vector<double>& floor) {
  std::vector<double> out;
  for (size_t i = 0; i < value.size(); ++i) {
    bool known = i < floor.size() && value[i] >= 0 && floor[i] > 0;
    out.push_back(known ? value[i] / floor[i] : -1);
  }
  return out;
}

double Percentile(std::vector<double> values, double p) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return v < 0; }),
               values.end());
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

StageLags SummarizeStages(const std::vector<PodStages>& pods) {
  std::vector<double> bound, bind, start;
  for (const PodStages& pod : pods) {
    bound.push_back(pod.bound);
    if (pod.created >= 0 && pod.bound >= 0) bind.push_back(pod.bound - pod.created);
    if (pod.bound >= 0 && pod.running >= 0) start.push_back(pod.running - pod.bound);
  }
  StageLags out;
  out.all_bound = Percentile(bound, 1);
  out.bind_p50 = Percentile(bind, 0.5);
  out.bind_p99 = Percentile(bind, 0.99);
  out.bind_max = Percentile(bind, 1);
  out.start_p50 = Percentile(start, 0.5);
  out.start_p99 = Percentile(start, 0.99);
  out.start_max = Percentile(start, 1);
  return out;
}

}  // namespace trainctl::bench
