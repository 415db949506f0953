// Table tests of metrics from output: the line tokenizer over what trainers print (and the
// lines that broke Katib's regular expression), series from records, and which replica's
// output is read (api/metrics_policy.h).
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>

#include "api/metrics_policy.h"
#include "api/test_manifest.h"
#include "metrics/line_parser.h"
#include "metrics/series.h"

namespace trainctl::metrics {
namespace {

using nlohmann::json;

// "name=value name=value …" with nan/inf spelled out and numbers in their shortest exact form;
// "" for no metrics; " @step" appended.
std::string Number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string Render(const std::optional<MetricLine>& line) {
  if (!line) return "";
  std::string out;
  for (const MetricValue& v : line->values) {
    std::string value =
        v.finite ? Number(v.value) : (std::isnan(v.value) ? "nan" : (v.value > 0 ? "inf" : "-inf"));
    out += (out.empty() ? "" : " ") + v.name + "=" + value;
  }
  if (line->step) out += " @" + Number(*line->step);
  return out;
}

struct Case {
  const char* line;
  const char* expected;
};

void ExpectTable(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(Render(ParseMetricLine(c.line)), c.expected) << c.line;
}

TEST(ParseMetricLineTest, Conventions) {
  ExpectTable({
      // Katib's StdOut convention, with spaces around '=' and an RFC 3339 first token. The
      // name that gives the step is not a series; the other step names are.
      {"step=120 epoch=0.5 loss=0.4321 lr=1e-4 samples_per_sec=812.3",
       "epoch=0.5 loss=0.4321 lr=1e-04 samples_per_sec=812.3 @120"},
      {"loss = 0.25, accuracy = 0.9", "loss=0.25 accuracy=0.9"},
      {"2026-11-25T10:00:00Z loss=0.5", "loss=0.5"},
      // JSON: quoted numbers count; true, strings and nested objects do not.
      {R"({"step": 3, "loss": "0.5", "done": true, "name": "x", "eval": {"loss": 0.7}})",
       "loss=0.5 @3"},
      {R"({"a": [1, {"b": 2}], "c": tensor(0.5), "d": np.float64(1.0), "e": 4})", "e=4"},
      // A tqdm redraw and torchrun's rank prefix.
      {" 10%|#         | 10/100 [00:01<00:09, loss=0.123]", "loss=0.123"},
      {"[rank0]: iter=7 loss=2", "loss=2 @7"},
      {"[rank0]: {'loss': 1.5, 'epoch': 2.0}", "loss=1.5 @2"},
      // Katib's failures: exponents (katib#1702), digit strings (katib#1754), nan (PR#2724).
      {"loss=1.5e-3", "loss=0.0015"},
      {"count=888 big=12345678901234567890", "count=888 big=12345678901234567168"},
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
      // A repeated name keeps the last; the first step name present gives the step.
      {"loss=1 loss=2 global_step=9 step=4", "loss=2 global_step=9 @4"},
      {"epoch=2 iteration=5 val_loss=0.1", "epoch=2 val_loss=0.1 @5"},
      // Labels of several words are prose; a word that is a value is not a label.
      {"Training loss: 0.5, Validation loss: 0.4", ""},
      {"Test set: Average loss: 0.0479, Accuracy: 9846/10000 (98%)", ""},
      {"Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.300000", "Loss=2.3"},
      {"mode=train loss: 1, step 3 acc: 0.5", "loss=1 acc=0.5"},
      {"rank worker loss=42 train acc = 0.5", "loss=42"},
      // Colours are not part of a name or a value.
      {"\x1b[32mloss=0.5\x1b[0m acc: 0.9\x1b[0m", "loss=0.5 acc=0.9"},
  });
}

// Lines as the frameworks print them, captured from real runs on 2026-11-29 (transformers
// 4.40.2 with tqdm under torchrun, torch 1.13 and 2.x, TensorFlow/Keras 2.15, XGBoost 1.7.4,
// PyTorch Lightning 1.9.5), each piece as SplitOutputLines cuts it.
TEST(ParseMetricLineTest, HuggingFaceTrainerUnderTorchrun) {
  ExpectTable({
      // train()'s trainer prints its JSON line right after tqdm's bar, on the bar's line.
      {"  3%|▎ | 1/30 [00:00<00:05, 4.96it/s]{\"step\": 1, \"loss\": 4.18, \"learning_rate\": "
       "5e-05}",
       "loss=4.18 learning_rate=5e-05 @1"},
      {" 67%|██████▋   | 4/6 [00:00<00:00, 34.10it/s]{\"step\": 4, \"loss\": 5.6861, "
       "\"grad_norm\": 0.16408434510231018, \"learning_rate\": 1.6666666666666667e-05, "
       "\"epoch\": 0.1}",
       "loss=5.6861 grad_norm=0.16408434510231018 learning_rate=1.6666666666666667e-05 "
       "epoch=0.1 @4"},
      {"100%|██████████| 6/6 [00:00<00:00, 34.10it/s]{\"step\": 6, \"train_runtime\": 0.2312, "
       "\"train_samples_per_second\": 207.617, \"train_steps_per_second\": 25.952, "
       "\"total_flos\": 640155648.0, \"train_loss\": 5.702567100524902, \"epoch\": 0.15}",
       "train_runtime=0.2312 train_samples_per_second=207.617 train_steps_per_second=25.952 "
       "total_flos=640155648 train_loss=5.702567100524902 epoch=0.15 @6"},
      // Then the Trainer's own dict (after "\r<spaces>\r"): its epoch is the step.
      {"{'loss': 5.6861, 'grad_norm': 0.16408434510231018, 'learning_rate': "
       "1.6666666666666667e-05, 'epoch': 0.1}",
       "loss=5.6861 grad_norm=0.16408434510231018 learning_rate=1.6666666666666667e-05 @0.1"},
      {" 33%|███▎      | 2/6 [00:00<00:00, 26.56it/s]", ""},
      {"Map: 100%|██████████| 320/320 [00:00<00:00, 7105.23 examples/s]", ""},
      // What else rank 0 printed: peft, the trainer, DDP's glog line, a Python warning.
      {"trainable params: 4,096 || all params: 125,440 || trainable%: 3.2653061224489797", ""},
      {"trainer: 2 process(es), device cpu, process group gloo, output /tmp/cap/ws/out2", ""},
      {"W20261129 05:33:14.015846 16122 reducer.cpp:1298] Warning: find_unused_parameters=True "
       "was specified in DDP constructor, but did not find any unused parameters in the forward "
       "pass.",
       ""},
      {"/work/main/.venv/lib/python3.11/site-packages/peft/tuners/lora/layer.py:1059: "
       "UserWarning: fan_in_fan_out is set to False but the target module is `Conv1D`. Setting "
       "fan_in_fan_out to True.",
       ""},
      {"max_steps is given, it will override any value given in num_train_epochs", ""},
      {"trainer: saved the final adapter to /tmp/cap/ws/out2 (step 6)", ""},
      // The Trainer at log_level "info" (as Hugging Face's example scripts run it).
      {"  Num examples = 320", ""},
      {"  Num Epochs = 1", ""},
      {"  Instantaneous batch size per device = 4", ""},
      {"  Total train batch size (w. parallel, distributed & accumulation) = 4", ""},
      {"  Gradient Accumulation steps = 1", ""},
      {"  Number of trainable parameters = 4,096", ""},
  });
}

TEST(ParseMetricLineTest, TorchrunsOwnLines) {
  ExpectTable({
      {"Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
       "avoid your system being overloaded, please further tune the variable for optimal "
       "performance in your application as needed. ",
       ""},
      // A failed rank (torch 1.13, then 2.x's glog-style prefix).
      {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7) local_rank: 1 "
       "(pid: 18643) of binary: /work/main/.venv/bin/python3",
       ""},
      {"E1129 05:38:44.438000 22840 torch/distributed/elastic/multiprocessing/api.py:1002] "
       "failed (exitcode: 7) local_rank: 1 (pid: 22845) of binary: /tmp/plvenv/bin/python",
       ""},
      {"W1129 05:38:44.402000 22840 torch/distributed/elastic/multiprocessing/api.py:1028] "
       "Sending process 22844 closing signal SIGTERM",
       ""},
      {"  rank      : 1 (local_rank: 1)", ""},
      {"  exitcode  : 7 (pid: 18643)", ""},
      {"  exitcode  : -15 (pid: 22844)  (SIGTERM)", ""},
      {"  time      : 2026-11-29_05:35:02", ""},
      {"[0]:", ""},
      // LOGLEVEL=INFO: the launch configuration and the rendezvous result.
      {"  min_nodes        : 1", ""},
      {"  monitor_interval : 5", ""},
      {"  rdzv_configs     : {'rank': 0, 'timeout': 900}", ""},
      {"  restart_count=0", ""},
      {"  master_addr=127.0.0.1", ""},
      {"  master_port=29612", ""},
      {"  group_world_size=1", ""},
      {"  local_ranks=[0, 1]", ""},
      {"INFO:torch.distributed.elastic.agent.server.api:Done waiting for other agents. Elapsed: "
       "0.00579833984375 seconds",
       ""},
      {"  File \"/usr/lib/python3/dist-packages/torch/distributed/run.py\", line 766, in <module>",
       ""},
  });
}

TEST(ParseMetricLineTest, GlogAndAbslPrefixes) {
  ExpectTable({
      {"I1129 05:01:02.123456 1234 reducer.cpp:1298] Reducer buckets have been rebuilt in this "
       "iteration.",
       ""},
      {"I1129 05:01:02.123456 1234 train.cc:50] step=10 loss=0.5", "loss=0.5 @10"},
      {"[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname", ""},
      {"2026-11-29 05:35:53.265709: I tensorflow/core/util/port.cc:113] oneDNN custom operations "
       "are on. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
       ""},
      {"2026-11-29 05:35:53.321508: I tensorflow/core/platform/cpu_feature_guard.cc:182] This "
       "TensorFlow binary is optimized to use available CPU instructions in performance-critical "
       "operations.",
       ""},
  });
}

TEST(ParseMetricLineTest, KerasXgboostLightning) {
  ExpectTable({
      // Keras, verbose=1 (redraws end with backspaces) and verbose=2.
      {"1/6 [====>.........................] - ETA: 2s - loss: 1.1216 - accuracy: 0.3750",
       "loss=1.1216 accuracy=0.375"},
      {"6/6 [==============================] - 1s 30ms/step - loss: 1.2492 - accuracy: 0.3073 - "
       "val_loss: 1.5606 - val_accuracy: 0.3125",
       "loss=1.2492 accuracy=0.3073 val_loss=1.5606 val_accuracy=0.3125"},
      {"6/6 - 1s - loss: 0.8603 - accuracy: 0.5521 - val_loss: 0.9162 - val_accuracy: 0.5625 - "
       "775ms/epoch - 129ms/step",
       "loss=0.8603 accuracy=0.5521 val_loss=0.9162 val_accuracy=0.5625"},
      {"Epoch 1/2", ""},
      // XGBoost.
      {"[2]\ttrain-logloss:0.22112\ttrain-error:0.00000\teval-logloss:0.22108\teval-error:0.00000",
       "train-logloss=0.22112 train-error=0 eval-logloss=0.22108 eval-error=0 @2"},
      {"[05:36:19] WARNING: ./src/learner.cc:767: ", ""},
      {"Parameters: { \"not_a_param\" } are not used.", ""},
      // Lightning's bar: v_num is its logger's version.
      {"Epoch 1: 100%|██████████| 15/15 [00:00<00:00, 370.38it/s, loss=1.08, v_num=0, "
       "train_loss=0.000589, val_loss=0.00055]",
       "loss=1.08 train_loss=0.000589 val_loss=0.00055"},
      {"Epoch 0:  50%|█████     | 5/10 [00:01<00:01, 4.2it/s, v_num=0, train_loss=0.345]",
       "train_loss=0.345"},
      {"Validation DataLoader 0:  20%|██        | 1/5 [00:00<00:00, 1067.80it/s]\x1b[A", ""},
      {"TPU available: False, using: 0 TPU cores", ""},
      {"5         Trainable params", ""},
  });
}

TEST(ParseMetricLineTest, HostileLinesAreBounded) {
  // Too large for a double: recorded as infinite; too small: 0.
  EXPECT_EQ(Render(ParseMetricLine("a=1e999 b=-1e999 c=1e-999")), "a=inf b=-inf c=0");
  EXPECT_EQ(Render(ParseMetricLine("loss=" + std::string(400, '9'))), "loss=inf");
  EXPECT_EQ(Render(ParseMetricLine(R"({"loss": )" + std::string(400, '7') + "}")), "loss=inf");
  EXPECT_EQ(Render(ParseMetricLine("loss=" + std::string(600, '1'))), "") << "longer than a value";
  // JSON nested 10,000 deep: skipped by counting; the members around it are read.
  std::string deep = R"({"a": 1, "n": )" + std::string(10000, '[') + std::string(10000, ']');
  EXPECT_EQ(Render(ParseMetricLine(deep + R"(, "b": 2})")), "a=1") << "cut at the bound";
  std::string nested;
  for (int i = 0; i < 10000; ++i) nested += R"({"k": )";
  EXPECT_EQ(Render(ParseMetricLine(nested)), "");
  // A 1 MB piece is read up to the bound; a value cut there is not read.
  std::string mb =
      std::string(kMaxMetricLineBytes - 9, ' ') + "loss=0.123456" + std::string(1 << 20, 'x');
  EXPECT_EQ(Render(ParseMetricLine(mb)), "") << "0.1234 is a cut value";
  std::string object = R"({"step": 1, "loss": 0.5, "pad": ")" + std::string(1 << 20, 'x') + "\"}";
  EXPECT_EQ(Render(ParseMetricLine(object)), "loss=0.5 @1");
  // Many values: at most kMaxValuesPerLine; long names: not read.
  std::string many;
  for (int i = 0; i < 100; ++i) many += "m" + std::to_string(i) + "=1 ";
  EXPECT_EQ(ParseMetricLine(many)->values.size(), kMaxValuesPerLine);
  EXPECT_FALSE(ParseMetricLine(std::string(kMaxMetricLineBytes, 'x') + " loss=1"));
  EXPECT_FALSE(ParseMetricLine(std::string(200, 'n') + "=1")) << "names are bounded";
  // Text that makes every byte a token start, 1 MB of it cut into pieces: each piece is read
  // in time linear in its bound (a quadratic reader takes minutes here).
  for (std::string unit : {"a:b:c:d:e:f:1:x ", "{\"x\": [\"y\", {\"", "a: 1 (b: 2) c  : 3 "}) {
    std::string piece;
    while (piece.size() + unit.size() <= kMaxMetricLineBytes) piece += unit;
    size_t read = 0;
    for (size_t bytes = 0; bytes < (1 << 20); bytes += piece.size())
      read += ParseMetricLine(piece) ? 1 : 0;
    EXPECT_EQ(read, 0u) << unit;
  }
  std::vector<json> records = RecordsFromOutput(std::string(1 << 20, '\r') + "loss=1\n", Time{});
  EXPECT_EQ(records.size(), 1u);
}

TEST(ParseMetricLineTest, TimeFromTheFirstToken) {
  std::optional<MetricLine> line = ParseMetricLine("2026-11-25T10:00:01.5Z loss=1");
  ASSERT_TRUE(line);
  ASSERT_TRUE(line->time);
  EXPECT_EQ(FormatRfc3339(*line->time).substr(0, 19), "2026-11-25T10:00:01");
  EXPECT_EQ(ParseMetricLine(R"({"loss": 1, "epoch": 0.5})")->step_name, "epoch");
  EXPECT_EQ(ParseMetricLine("[3] a:1")->step_name, "");
}

TEST(SplitOutputLinesTest, CarriageReturnsAndBackspacesEndPiecesToo) {
  std::vector<std::string_view> lines = SplitOutputLines("a\r\nb\rc\n\nd\b\b\be");
  EXPECT_EQ(lines, (std::vector<std::string_view>{"a", "b", "c", "d", "e"}));
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

// Hugging Face's Trainer prints its dict right after train()'s JSON line with the same values
// (this is the log of a real run, tqdm on); each logged step is one record, at its step.
TEST(SeriesTest, OneLogPrintedTwiceCountsOnce) {
  const char* log =
      "  0%|          | 0/6 [00:00<?, ?it/s]{\"step\": 2, \"loss\": 5.7126, \"grad_norm\": "
      "0.1719646006822586, \"learning_rate\": 3.3333333333333335e-05, \"epoch\": 0.05}\n"
      "\r                                     \r{'loss': 5.7126, 'grad_norm': 0.1719646006822586, "
      "'learning_rate': 3.3333333333333335e-05, 'epoch': 0.05}\n"
      "\r 33%|███▎      | 2/6 [00:00<00:00, 26.56it/s]\r 67%|██████▋   | 4/6 [00:00<00:00, "
      "34.10it/s]{\"step\": 4, \"loss\": 5.6861, \"grad_norm\": 0.16408434510231018, "
      "\"learning_rate\": 1.6666666666666667e-05, \"epoch\": 0.1}\n"
      "\r                                             \r{'loss': 5.6861, 'grad_norm': "
      "0.16408434510231018, 'learning_rate': 1.6666666666666667e-05, 'epoch': 0.1}\n"
      "\r100%|██████████| 6/6 [00:00<00:00, 34.10it/s]{\"step\": 6, \"train_runtime\": 0.2312, "
      "\"train_samples_per_second\": 207.617, \"train_steps_per_second\": 25.952, "
      "\"total_flos\": 640155648.0, \"train_loss\": 5.702567100524902, \"epoch\": 0.15}\n"
      "\r                                             \r{'train_runtime': 0.2312, "
      "'train_samples_per_second': 207.617, 'train_steps_per_second': 25.952, 'train_loss': "
      "5.702567100524902, 'epoch': 0.15}\n";
  std::vector<json> records = RecordsFromOutput(log, Time{});
  ASSERT_EQ(records.size(), 6u) << "every piece is recorded as printed";
  EXPECT_EQ(records[1]["step_from"], "epoch");
  EXPECT_FALSE(records[0].contains("step_from"));
  json s = SeriesFromRecords(records, "master-0", false);
  EXPECT_EQ(s["records"], 3);
  EXPECT_EQ(s["series"]["loss"]["step"], json::array({2.0, 4.0}));
  EXPECT_EQ(s["series"]["epoch"]["value"], json::array({0.05, 0.1, 0.15}));
  EXPECT_EQ(s["series"]["train_loss"]["step"], json::array({6.0}));

  auto counted = [](const std::string& text) {
    return SeriesFromRecords(RecordsFromOutput(text, Time{}), "w", false)["records"];
  };
  // The other order, and a loss that is not finite (the JSON line writes null).
  EXPECT_EQ(counted("{'loss': 1.5, 'epoch': 0.5}\n{\"step\": 9, \"loss\": 1.5}\n"), 1);
  EXPECT_EQ(counted("{\"step\": 9, \"loss\": null, \"lr\": 1}\n{'loss': nan, 'lr': 1, "
                    "'epoch': 0.5}\n"),
            1);
  // Not one log printed twice: two steps with the same values, epochs alone, other values.
  EXPECT_EQ(counted("step=5 acc=1\nstep=6 acc=1\n"), 2);
  EXPECT_EQ(counted("{'loss': 1.0, 'epoch': 0.5}\n{'loss': 1.0, 'epoch': 1.0}\n"), 2);
  EXPECT_EQ(counted("{\"step\": 9, \"loss\": 1.5}\n{'loss': 1.4, 'epoch': 0.5}\n"), 2);
  EXPECT_EQ(counted("loss=1.5\n{'loss': 1.5, 'epoch': 0.5}\n"), 2) << "no step of its own";
}

// On a cluster the kubelet's timestamp begins the line; the redraws after its "\r" are read at
// that time too.
TEST(SeriesTest, PiecesAfterACarriageReturnKeepTheLinesTime) {
  Time read_at = *ParseRfc3339("2026-11-25T11:00:00Z");
  std::vector<json> records = RecordsFromOutput(
      "2026-11-25T10:00:00.250Z   0%|          | 0/30 [00:00<?, ?it/s]\r  3%|▎ | 1/30 "
      "[00:00<00:05, 4.96it/s]{\"step\": 1, \"loss\": 4.18}\nloss=2\n",
      read_at);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["time"], "2026-11-25T10:00:00Z");
  EXPECT_EQ(records[0]["step"], 1.0);
  EXPECT_EQ(records[1]["time"], FormatRfc3339(read_at));
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
