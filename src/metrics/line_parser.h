// Metrics from a training's own output, with no SDK. ParseMetricLine reads one piece of what a
// replica printed and returns the numbers it names. It is a tokenizer, not a regular
// expression, and accepts the conventions trainers already print:
//   name=value, name = value             Katib's StdOut convention: "step=12 loss=0.43 lr=1e-4";
//                                        Lightning's bar "…4.2it/s, v_num=0, train_loss=0.345]"
//   name: value, name:value              Keras " - loss: 0.2345 - accuracy: 0.93",
//                                        XGBoost "[12]\ttrain-logloss:0.31\teval-logloss:0.35"
//   a JSON object or a Python dict       {"step": 3, "loss": 0.5}, Hugging Face's
//                                        {'loss': 0.43, 'learning_rate': 5e-05, 'epoch': 0.5}
// A piece that holds an object ('{' then a quoted key) is read from that object alone: its
// top-level members whose values are numbers; nested values, strings and words are skipped,
// and the text before it (a progress bar: "3%|▎ | 1/30 [00:00<00:05, 4.96it/s]{…}") is not
// read. Elsewhere names are [A-Za-z_][A-Za-z0-9_./-]*, read only at the start of a token, so
// "T10:00:00Z" inside a timestamp is not a metric.
//
// A value must parse in full as a decimal number: exponents and long digit strings are kept
// whole, "nan" and "inf" are kept but marked not finite (so is a number too large for a
// double: 1e999), and empty or partial values ("0:00:12", "12abc", "") are not metrics.
// Quoted numbers ("0.5") count.
//
// Log prefixes and prose are not metrics:
//   - a source location "file.cc:123" (glog/absl "I1129 05:01:02.123456 1234 file.cc:123]",
//     TensorFlow's, torch's "[W reducer.cpp:1298]", "x.py:12");
//   - a number with thousands separators ("all params: 122,496" is not 122);
//   - a label of several words: "name: value" or "name = value" after a plain word ("Num
//     examples = 320", "Validation loss: 0.4"; "rank worker loss=42" still gives loss);
//   - "name: value" where a space comes before the colon (torchrun's aligned reports,
//     "exitcode  : 7", "rdzv_configs     : {'rank': 0}"), or where the value is followed by
//     anything but the end, a separator (, ; | - ] }) or another "name:"/"name=" ("trainer: 2
//     process(es)", "Elapsed: 0.5 seconds", "(exitcode: 7)");
//   - names that launchers and progress bars print about themselves (kNotMetrics).
//
// The step is the first of step, global_step, iteration, iter, epoch on the piece (fractional
// allowed); else a leading "[N]"; else none (the series counts pieces). The name that gives the
// step is not a series; the other step names are. A leading RFC 3339 token gives the time.
//
// SplitOutputLines cuts text on "\n", "\r" and "\b", so every redraw of a progress bar (tqdm's
// carriage returns, Keras' backspaces) is a piece. ANSI escape sequences are skipped.
//
// Bounded: a piece is read up to kMaxMetricLineBytes (a value cut there is not read), at most
// kMaxValuesPerLine values; nesting is skipped by counting, never by recursion; each byte is
// looked at a bounded number of times.
//
// Pure; thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace trainctl::metrics {

// Pieces longer than this are read up to it only.
inline constexpr size_t kMaxMetricLineBytes = 4096;
// At most this many values are taken from one piece.
inline constexpr size_t kMaxValuesPerLine = 64;
// Names printed as name=value that are not a training's metrics: torchrun's rendezvous report
// ("  master_port=29500") and Lightning's logger version in its bar ("v_num=0").
inline constexpr std::array<std::string_view, 5> kNotMetrics = {
    "restart_count", "master_port", "group_rank", "group_world_size", "v_num"};

struct MetricValue {
  std::string name;
  double value = 0;
  bool finite = true;  // false for nan and ±inf: recorded, never plotted
  bool operator==(const MetricValue&) const = default;
};

struct MetricLine {
  std::vector<MetricValue> values;  // in the order printed; a repeated name keeps its last
  std::optional<double> step;
  std::string step_name;     // the name that gave the step ("step", "epoch", …); "" for "[N]"
  std::optional<Time> time;  // a leading RFC 3339 timestamp
};

// nullopt when the piece names no metric.
std::optional<MetricLine> ParseMetricLine(std::string_view line);

// The time of a leading RFC 3339 token ("2026-11-25T10:00:00.5Z loss=1"), as the kubelet
// writes before each line of a log read with timestamps.
std::optional<Time> LeadingTime(std::string_view line);

// Cuts on "\n", "\r" and "\b"; empty pieces are dropped; a last piece without an end is returned
// too.
std::vector<std::string_view> SplitOutputLines(std::string_view text);

}  // namespace trainctl::metrics
