// Table tests of metrics from output: the line tokenizer over what trainers print (and the
// lines that broke Katib's regular expression), series from records, and which replica's
// output is read (api/metrics_policy.h).
#include <gtest/gtest.h>

#include <cmath>

#include "api/metrics_policy.h"
#include "api/test_manifest.h"
#include "metrics/line_parser.h"
#include "metrics/series.h"

namespace trainctl::metrics {
namespace {

using nlohmann::json;

// "name=value name=value …" with nan/inf spelled out; "" for no metrics; "@step" appended.
std::string Render(const std::optional<MetricLine>& line) {
  if (!line) return "";
  std::string out;
  for (const MetricValue& v : line->values) {
    std::string value;
    if (!v.finite)
      value = std::isnan(v.value) ? "nan" : (v.value > 0 ? "inf" : "-inf");
    else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.value);
      value = buf;
    }
    out += (out.empty() ? "" : " ") + v.name + "=" + value;
  }
  if (line->step) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *line->step);
    out += std::string(" @") + buf;
  }
  return out;
}

struct Case {
  const char* line;
  const char* expected;
};

TEST(ParseMetricLineTest, WhatTrainersPrint) {
  const Case cases[] = {
      // Katib's StdOut convention, with spaces around '=' and an RFC 3339 first token.
      {"step=120 epoch=0.5 loss=0.4321 lr=1e-4 samples_per_sec=812.3",
       "loss=0.43209999999999998 lr=0.0001 samples_per_sec=812.29999999999995 @120"},
      {"loss = 0.25, accuracy = 0.9", "loss=0.25 accuracy=0.90000000000000002"},
      {"2026-11-25T10:00:00Z loss=0.5", "loss=0.5"},
      // Keras and XGBoost.
      {"60000/60000 [==============================] - 3s 50us/step - loss: 0.2345 - accuracy: "
       "0.9300",
       "loss=0.23449999999999999 accuracy=0.93000000000000005"},
      {"[12]\ttrain-logloss:0.31\teval-logloss:0.35",
       "train-logloss=0.31 eval-logloss=0.34999999999999998 @12"},
      // Hugging Face's dict lines and JSON lines; quoted numbers count, True/None do not.
      {"{'loss': 0.43, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': 0.5}",
       "loss=0.42999999999999999 grad_norm=1.5 learning_rate=5.0000000000000002e-05 @0.5"},
      {R"({"step": 3, "loss": "0.5", "done": true, "name": "x", "eval": {"loss": 0.7}})",
       "loss=0.69999999999999996 @3"},
      // A tqdm redraw and torchrun's rank prefix.
      {" 10%|#         | 10/100 [00:01<00:09, loss=0.123]", "loss=0.123"},
      {"[rank0]: iter=7 loss=2", "loss=2 @7"},
      // Katib's failures: exponents (katib#1702), digit strings (katib#1754), nan (PR#2724).
      {"loss=1.5e-3", "loss=0.0015"},
      {"count=888 big=12345678901234567890", "count=888 big=1.2345678901234567e+19"},
      {"loss=nan acc=inf neg=-Infinity", "loss=nan acc=inf neg=-inf"},
      {"loss=", ""},
      {"loss=0.5abc", ""},
      {"loss= ", ""},
      // Not metrics: times, ratios, URLs, comparisons, words, a timestamp's parts.
      {"ETA: 0:00:12", ""},
      {"Epoch 1/10", ""},
      {"see http://example.com:8080/x", ""},
      {"if a==1: pass", ""},
      {"2026-11-25T10:00:00Z training started", ""},
      {"hex=0x10 pct=93%", ""},
      {"", ""},
      // A repeated name keeps the last; step names are never series.
      {"loss=1 loss=2 global_step=9 step=4", "loss=2 @4"},
      {"epoch=2 iteration=5 val_loss=0.1", "val_loss=0.10000000000000001 @5"},
  };
  for (const Case& c : cases) EXPECT_EQ(Render(ParseMetricLine(c.line)), c.expected) << c.line;
}

TEST(ParseMetricLineTest, TimeFromTheFirstTokenAndBoundedLines) {
  std::optional<MetricLine> line = ParseMetricLine("2026-11-25T10:00:01.5Z loss=1");
  ASSERT_TRUE(line);
  ASSERT_TRUE(line->time);
  EXPECT_EQ(FormatRfc3339(*line->time).substr(0, 19), "2026-11-25T10:00:01");
  std::string many;
  for (int i = 0; i < 100; ++i) many += "m" + std::to_string(i) + "=1 ";
  EXPECT_EQ(ParseMetricLine(many)->values.size(), kMaxValuesPerLine);
  std::string long_line = std::string(kMaxMetricLineBytes, 'x') + " loss=1";
  EXPECT_FALSE(ParseMetricLine(long_line)) << "read up to the bound only";
  EXPECT_FALSE(ParseMetricLine(std::string(200, 'n') + "=1")) << "names are bounded";
}

TEST(SplitOutputLinesTest, CarriageReturnsEndLinesToo) {
  std::vector<std::string_view> lines = SplitOutputLines("a\r\nb\rc\n\nd");
  EXPECT_EQ(lines, (std::vector<std::string_view>{"a", "b", "c", "d"}));
}

TEST(SeriesTest, RecordsBecomeColumnsPerName) {
  Time t0 = *ParseRfc3339("2026-11-25T10:00:00Z");
  std::vector<json> records =
      RecordsFromOutput("step=1 loss=2.0\nnoise\r\nstep=2 loss=nan acc=0.5\rloss=1.0\n", t0);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1]["values"]["loss"], "nan");
  EXPECT_FALSE(records[2].contains("step"));
  json s = SeriesFromRecords(records, "master-0", false);
  EXPECT_EQ(s["replica"], "master-0");
  EXPECT_EQ(s["records"], 3);
  EXPECT_EQ(s["series"]["loss"]["step"], json::array({1.0, 2.0, 3.0})) << "the ordinal";
  EXPECT_EQ(s["series"]["loss"]["value"], json::array({2.0, nullptr, 1.0}));
  EXPECT_EQ(s["series"]["loss"]["time"][0], 1795600800.0);
  EXPECT_EQ(s["series"]["acc"]["step"], json::array({2.0}));
  json last = LastValues(s);
  EXPECT_EQ(last["loss"], 1.0);
  EXPECT_EQ(last["step"], 3.0);
  EXPECT_TRUE(SeriesFromRecords({json("x"), json::object()}, "w", true)["series"].empty());
}

TEST(SeriesTest, LongSeriesAreThinnedKeepingTheLastPoint) {
  std::vector<json> records;
  for (size_t i = 0; i < kMaxPointsPerSeries * 2 + 1; ++i)
    records.push_back({{"step", i}, {"values", {{"loss", static_cast<double>(i)}}}});
  json s = SeriesFromRecords(records, "w", false)["series"]["loss"];
  EXPECT_LE(s["step"].size(), kMaxPointsPerSeries + 1);
  EXPECT_EQ(s["step"].back(), static_cast<double>(kMaxPointsPerSeries * 2));
}

TEST(MetricsPolicyTest, RankZeroByDefaultAnnotationsChooseOrTurnOff) {
  // Annotations are set after loading: the loader would refuse the invalid ones.
  auto job_with = [](const std::string& kind, const std::string& specs,
                     const std::string& annotation) {
    api::Job job = api::test::LoadJob("apiVersion: kubeflow.org/v1\nkind: " + kind +
                                      "\nmetadata:\n  name: j\nspec:\n" + specs);
    size_t colon = annotation.find(": ");
    if (colon != std::string::npos)
      job.metadata["annotations"][annotation.substr(0, colon)] = annotation.substr(colon + 2);
    return job;
  };
  std::string pytorch =
      "  pytorchReplicaSpecs:\n"
      "    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}\n"
      "    Worker: {replicas: 3, template: {spec: {containers: [{name: pytorch, image: x}]}}}\n";
  std::optional<api::MetricsPolicy> p = api::MetricsPolicyOf(job_with("PyTorchJob", pytorch, ""));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, "Master");
  api::FieldErrorList errors;
  p = api::MetricsPolicyOf(
      job_with("PyTorchJob", pytorch, "trainctl.dev/metrics-replica: worker-2"), &errors);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, "Worker");
  EXPECT_EQ(p->index, 2);
  EXPECT_TRUE(errors.empty());
  EXPECT_FALSE(api::MetricsPolicyOf(job_with("PyTorchJob", pytorch, "trainctl.dev/metrics: off")));
  EXPECT_FALSE(api::MetricsPolicyOf(
      job_with("PyTorchJob", pytorch, "trainctl.dev/metrics-replica: worker-3"), &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].path.find("trainctl.dev/metrics-replica"), std::string::npos);
  errors.clear();
  api::MetricsPolicyOf(job_with("PyTorchJob", pytorch, "trainctl.dev/metrics: sometimes"), &errors);
  EXPECT_EQ(errors.size(), 1u);
  std::string mpi =
      "  mpiReplicaSpecs:\n"
      "    Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: x}]}}}\n"
      "    Worker: {replicas: 2, template: {spec: {containers: [{name: mpi, image: x}]}}}\n";
  EXPECT_EQ(api::MetricsPolicyOf(job_with("MPIJob", mpi, ""))->type, "Launcher");
  std::string tf =
      "  tfReplicaSpecs:\n"
      "    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: x}]}}}\n";
  p = api::MetricsPolicyOf(job_with("TFJob", tf, ""));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->type, "Worker");
  EXPECT_EQ(p->index, 0);
}

}  // namespace
}  // namespace trainctl::metrics
