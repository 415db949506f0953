// kube_cache_bench: how fast pods get into an informer cache, and what they cost there.
//
//   1. offline: N pod watch events (JSON lines, as an API server sends them) through the line
//      splitter, the event decoder and the store of compact projections: events per second
//      and bytes per cached pod (heap growth, mallinfo2), against keeping the JSON documents;
//   2. live (when TRAINCTL_APISERVER_URL is set): M pods created in parallel on the real API
//      server while a reflector watches them; creations per second, and watch events handled
//      per second until the cache holds all M.
//
// Usage: kube_cache_bench [N] [M]   (bench/kube_cache_bench.sh starts a cluster and runs it)
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "bench_client.h"
#include "kube/client.h"
#include "kube/pod_summary.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "kube/watch_decoder.h"

using namespace trainctl;
using namespace trainctl::kube;
using nlohmann::json;

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

json BenchPod(int i) {
  std::string job = "job-" + std::to_string(i / 8);
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"] = {{"name", job + "-worker-" + std::to_string(i % 8)},
                     {"namespace", "bench"},
                     {"uid", "6f1c2d3e-4b5a-4c6d-8e7f-" + std::to_string(100000000000 + i)},
                     {"resourceVersion", std::to_string(1000 + i)},
                     {"labels",
                      {{"training.kubeflow.org/job-name", job},
                       {"training.kubeflow.org/replica-type", "worker"},
                       {"training.kubeflow.org/replica-index", std::to_string(i % 8)}}}};
  pod["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "kubeflow.org/v1"},
                    {"kind", "PyTorchJob"},
                    {"name", job},
                    {"uid", "aaaaaaaa-0000-4000-8000-" + std::to_string(100000000000 + i / 8)},
                    {"controller", true}}});
  json env = json::array();
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_NNODES"})
    env.push_back({{"name", name}, {"value", "value-of-" + std::string(name)}});
  pod["spec"] = {{"nodeName", "kwok-node-1"}, {"restartPolicy", "OnFailure"}};
  pod["spec"]["containers"] = json::array(
      {{{"name", "pytorch"}, {"image", "docker.io/pytorch/pytorch:2.3.0"}, {"env", env}}});
  pod["status"] = {{"phase", "Running"}};
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "pytorch"}, {"restartCount", 0}, {"ready", true}}});
  return pod;
}

const std::vector<std::string> kKeep = {"training.kubeflow.org/job-name",
                                        "training.kubeflow.org/replica-type",
                                        "training.kubeflow.org/replica-index"};

// `from_text`: the operator's way, each event's pod projected straight from its text
// (ProjectPodEvent); otherwise decoded into a document and projected from it.
void Offline(int n, bool from_text) {
  std::string stream;
  for (int i = 0; i < n; ++i)
    stream += json{{"type", "ADDED"}, {"object", BenchPod(i)}}.dump() + "\n";
  Store<PodSummary> store([](const json& j) { return ProjectPod(j, kKeep); });
  if (from_text)
    store.SetEventProjector([](std::string_view event) { return ProjectPodEvent(event, kKeep); });
  store.AddIndexer("owner", [](const PodSummary& p) {
    return std::vector<std::string>{FormatUid(p.owner_uid)};
  });
  malloc_trim(0);
  size_t before = mallinfo2().uordblks;
  LineSplitter splitter;
  auto start = std::chrono::steady_clock::now();
  for (size_t off = 0; off < stream.size(); off += 16384) {  // arrives in 16 KiB chunks
    Status st =
        splitter.Feed(std::string_view(stream).substr(off, 16384), [&](std::string_view line) {
          StatusOr<WatchEvent> e = ParseWatchEvent(line);
          if (!e.ok()) return e.status();
          if (!store.ApplyRaw(e->type, e->text)) store.Apply(e->type, WatchEventObject(*e));
          return Status::Ok();
        });
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      std::exit(1);
    }
  }
  double secs = Seconds(start);
  double per_pod = static_cast<double>(mallinfo2().uordblks - before) / n;
  std::vector<json> docs;
  size_t before_docs = mallinfo2().uordblks;
  for (int i = 0; i < 2000; ++i) docs.push_back(BenchPod(i));
  double doc_bytes = static_cast<double>(mallinfo2().uordblks - before_docs) / 2000;
  std::printf(
      "| offline decode + cache, %s (%d pods, %.1f MB of events) | %.0f events/s | %.0f B/pod "
      "cached (JSON document: %.0f B) |\n",
      from_text ? "from the text" : "through a document", n, stream.size() / 1e6, n / secs, per_pod,
      doc_bytes);
}

void Live(int m) {
  RealClock clock;
  std::unique_ptr<Client> client = bench::BenchAdminClient(&clock);
  std::string ns = "bench-" + std::to_string(getpid());
  if (!client->Create(kNamespaces, "", {{"metadata", {{"name", ns}}}}).ok()) {
    std::fprintf(stderr, "cannot create namespace %s\n", ns.c_str());
    std::exit(1);
  }
  std::unique_ptr<Client> watcher = bench::BenchAdminClient(&clock);
  Store<PodSummary> store([](const json& j) { return ProjectPod(j, kKeep); });
  ReflectorOptions options;
  options.namespace_ = ns;
  Reflector reflector(watcher.get(), kPods, options, &store);
  reflector.Start();
  reflector.WaitForSync(Duration(30000));

  std::atomic<int> next{0}, failed{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < 16; ++w) {
    workers.emplace_back([&] {
      for (int i; (i = next++) < m;) {
        json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
        pod["metadata"] = {{"name", "p-" + std::to_string(i)},
                           {"labels", {{"training.kubeflow.org/job-name", "bench"}}}};
        pod["metadata"]["annotations"]["trainctl.dev/kwok-run-forever"] = "true";
        pod["spec"]["containers"] = json::array({{{"name", "main"}, {"image", "none"}}});
        if (!client->Create(kPods, ns, pod).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : workers) t.join();
  double create_secs = Seconds(start);
  while (static_cast<int>(store.size()) < m - failed && Seconds(start) < 300)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double cached_secs = Seconds(start);
  // kwok and the scheduler keep updating the pods; count the events for a few seconds more.
  long events_at = reflector.stats().events;
  auto window = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  long later = reflector.stats().events;
  std::printf(
      "| live: create %d pods (16 threads, the transport's default connections) | %.0f creates/s "
      "| all %zu in the cache "
      "after %.2f s |\n",
      m, m / create_secs, store.size(), cached_secs);
  std::printf(
      "| live: watch events handled | %.0f events/s during creation, %.0f events/s after "
      "| %ld events in all, %ld connections |\n",
      events_at / cached_secs, (later - events_at) / Seconds(window), later,
      watcher->transport().ConnectionsOpened() + client->transport().ConnectionsOpened());
  reflector.Stop();
  (void)client->Delete(kNamespaces, "", ns);
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 50000;
  int m = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::printf("| measurement | rate | notes |\n|---|---|---|\n");
  Offline(n, /*from_text=*/false);
  Offline(n, /*from_text=*/true);
  if (!bench::BenchEnv("TRAINCTL_APISERVER_URL").empty()) Live(m);
  return 0;
}
