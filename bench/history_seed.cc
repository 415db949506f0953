// Fills a job history (history/store.h) with N finished jobs shaped like real records and
// measures what writing them costs: `history_seed PATH N [TAIL_BYTES] [BATCH]`. Each record has two
// replicas, events, a first failure on every fifth job, metric series of 100 points and log
// tails of TAIL_BYTES each (default 16 KiB). Prints one JSON line: records, bytes per record,
// the write time per record (mean, p50, p99) with the default retention, and the file size.
// BATCH > 1 writes that many records per transaction (HistoryStore::PutMany, as the operator's
// recorder does); the times are then per record, each batch's time shared by its records.
// Used by bench/dashboard_bench.py (docs/benchmarks.md, "Dashboard and history").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "history/record.h"
#include "history/store.h"

using nlohmann::json;
using trainctl::Time;

namespace {

json Record(int i, size_t tail_bytes, Time now) {
  std::string name = "job-" + std::to_string(i);
  bool failed = i % 5 == 0;
  std::string tail;
  while (tail.size() < tail_bytes)
    tail += "step=" + std::to_string(tail.size()) + " loss=0.4321 lr=1e-4 samples_per_sec=812.3\n";
  json steps = json::array(), values = json::array(), times = json::array();
  for (int s = 1; s <= 100; ++s) {
    steps.push_back(s);
    values.push_back(2.0 / s);
    times.push_back(1795600800.0 + s);
  }
  std::string finished = trainctl::FormatRfc3339(now - std::chrono::seconds(10000 - i));
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "PyTorchJob"},
              {"metadata",
               {{"name", name},
                {"namespace", "default"},
                {"uid", "uid-" + std::to_string(i)},
                {"creationTimestamp", finished}}},
              {"status",
               {{"completionTime", finished},
                {"conditions",
                 json::array({{{"type", failed ? "Failed" : "Succeeded"},
                               {"status", "True"},
                               {"message", failed ? "First failure: " + name +
                                                        "-worker-0 (Worker 0) exited with code 3."
                                                  : "done"}}})}}}};
  return {
      {"uid", "uid-" + std::to_string(i)},
      {"source", "local"},
      {"namespace", "default"},
      {"kind", "PyTorchJob"},
      {"name", name},
      {"job", job},
      {"failure", failed ? json{{"name", name + "-worker-0"},
                                {"exitCode", 3},
                                {"lastLogLines", json::array({"NCCL error " + std::to_string(i)})}}
                         : json(nullptr)},
      {"replicas",
       json::array({{{"name", name + "-master-0"}, {"state", "Succeeded"}},
                    {{"name", name + "-worker-0"}, {"state", failed ? "Failed" : "Succeeded"}}})},
      {"events", json::array({{{"reason", "SuccessfulCreatePod"}, {"message", "Created pod"}}})},
      {"logs",
       {{"master-0", {{"bytes", tail.size()}, {"tail", tail}}},
        {"worker-0", {{"bytes", tail.size()}, {"tail", tail}}}}},
      {"metrics",
       {{"replica", "master-0"},
        {"series", {{"loss", {{"step", steps}, {"time", times}, {"value", values}}}}}}},
      {"recordedAt", finished}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: history_seed PATH N [TAIL_BYTES] [BATCH] [CACHE_KIB]\n");
    return 2;
  }
  std::string path = argv[1];
  int n = std::atoi(argv[2]);
  size_t tail = argc > 3 ? static_cast<size_t>(std::atol(argv[3])) : 16u << 10;
  int batch = argc > 4 ? std::max(1, std::atoi(argv[4])) : 1;
  int cache_kib = argc > 5 ? std::atoi(argv[5]) : 0;  // 0: SQLite's default page cache
  auto store = trainctl::history::HistoryStore::Open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  if (cache_kib > 0) {
    if (trainctl::Status st = (*store)->LimitCache(cache_kib); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
  }
  trainctl::history::Limits limits;
  limits.max_jobs = static_cast<size_t>(n) + 1;  // keep them all: this measures the write
  limits.max_bytes = size_t{64} << 30;
  Time now = std::chrono::system_clock::now();
  std::vector<double> ms;
  size_t bytes = 0;
  for (int i = 0; i < n; i += batch) {
    std::vector<trainctl::history::HistoryStore::Text> texts;
    for (int j = i; j < std::min(n, i + batch); ++j) {
      json r = Record(j, tail, now);
      trainctl::history::Row row = trainctl::history::RowOf(r, "why line " + std::to_string(j));
      texts.push_back({r.dump(), std::move(row)});
      bytes += texts.back().record.size();
    }
    auto t0 = std::chrono::steady_clock::now();
    auto put = (*store)->PutMany(texts, limits, now);
    double each =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        static_cast<double>(texts.size());
    for (size_t k = 0; k < texts.size(); ++k) ms.push_back(each);
    if (!put.ok()) {
      std::fprintf(stderr, "%s\n", put.status().message().c_str());
      return 1;
    }
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double v : ms) mean += v;
  mean /= std::max<size_t>(1, ms.size());
  std::error_code ec;
  auto file = std::filesystem::file_size(path, ec);
  std::printf(
      "{\"records\": %d, \"record_bytes\": %zu, \"put_ms_mean\": %.3f, \"put_ms_p50\": %.3f, "
      "\"put_ms_p99\": %.3f, \"last_1000_put_ms_mean\": %.3f, \"file_bytes\": %llu}\n",
      n, bytes / std::max(1, n), mean, sorted[sorted.size() / 2], sorted[sorted.size() * 99 / 100],
      [&] {
        double s = 0;
        size_t k = std::min<size_t>(1000, ms.size());
        for (size_t i = ms.size() - k; i < ms.size(); ++i) s += ms[i];
        return s / std::max<size_t>(1, k);
      }(),
      static_cast<unsigned long long>(file));
  return 0;
}
