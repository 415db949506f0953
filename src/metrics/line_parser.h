// Metrics from a training's own output, with no SDK. ParseMetricLine reads one line of what a
// replica printed and returns the numbers it names. It is a tokenizer, not a regular
// expression, and accepts the conventions trainers already print:
//   name=value, name = value             Katib's StdOut convention: "step=12 loss=0.43 lr=1e-4"
//   name: value, name:value              Keras " - loss: 0.2345 - accuracy: 0.93",
//                                        XGBoost "[12]\ttrain-logloss:0.31\teval-logloss:0.35"
//   a JSON object or a Python dict       {"step": 3, "loss": 0.5}, Hugging Face's
//                                        {'loss': 0.43, 'learning_rate': 5e-05, 'epoch': 0.5}
// Names are [A-Za-z_][A-Za-z0-9_./-]* (or any quoted key of up to 128 bytes), read only at the
// start of a token, so "T10:00:00Z" inside a timestamp is not a metric. A value must parse in
// full as a decimal number: exponents and long digit strings are kept whole, "nan" and "inf"
// are kept but marked not finite, and empty or partial values ("0:00:12", "12abc", "") are not
// metrics. These are the cases that broke Katib's regular expression. Quoted numbers ("0.5")
// count. Nested objects are skipped.
//
// The step is the first of step, global_step, iteration, iter, epoch on the line (fractional
// allowed); else a leading "[N]"; else none (the series counts lines). These names are never
// series of their own. A leading RFC 3339 token gives the time.
//
// SplitOutputLines cuts text on "\n" and on "\r", so every redraw of a progress bar is a line.
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace trainctl::metrics {

// Lines longer than this are read up to it only.
inline constexpr size_t kMaxMetricLineBytes = 4096;
// At most this many values are taken from one line.
inline constexpr size_t kMaxValuesPerLine = 64;

struct MetricValue {
  std::string name;
  double value = 0;
  bool finite = true;  // false for nan and ±inf: recorded, never plotted
  bool operator==(const MetricValue&) const = default;
};

struct MetricLine {
  std::vector<MetricValue> values;  // in the order printed; a repeated name keeps its last
  std::optional<double> step;
  std::optional<Time> time;  // a leading RFC 3339 timestamp
};

// nullopt when the line names no metric.
std::optional<MetricLine> ParseMetricLine(std::string_view line);

// Cuts on "\n" and "\r"; empty pieces are dropped; a last piece without an end is returned too.
std::vector<std::string_view> SplitOutputLines(std::string_view text);

}  // namespace trainctl::metrics
