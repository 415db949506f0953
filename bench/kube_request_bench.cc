// kube_request_bench: what one API request costs the client (CPU, not the server's time).
//
// Sends N small creates (core/v1 Events, as the operator's event recorder does) to a real API
// server through the project's Client, from T threads, unthrottled, and prints the wall time,
// requests a second, and this process's CPU (user + system, getrusage) and context switches
// per request. A second round GETs those events back (the first 100, by name). The client's
// transport and its TLS and HTTP stack are what is measured; the process does nothing else.
//
// Usage: kube_request_bench [N] [T] [W] [D]   (W: quiet watches held open meanwhile; D: the
// transport's direct connections, requests on their callers' threads; 0 = every request through
// the I/O thread; default: the transport's default)
// (bench/kube_request_bench.sh starts a cluster and runs it)
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_client.h"
#include "kube/client.h"

using namespace trainctl;
using namespace trainctl::kube;
using nlohmann::json;

namespace {

// This process's CPU seconds (user + system) and context switches so far.
struct Usage {
  double cpu_seconds;
  long context_switches;
};

Usage UsageNow() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return {s(u.ru_utime) + s(u.ru_stime), u.ru_nvcsw + u.ru_nivcsw};
}

json BenchEvent(const std::string& ns, int i) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", "bench." + std::to_string(i)}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", "kubeflow.org/v1"},
        {"kind", "PyTorchJob"},
        {"namespace", ns},
        {"name", "job-" + std::to_string(i / 8)}}},
      {"reason", "SuccessfulCreatePod"},
      {"message", "Created pod: job-" + std::to_string(i / 8) + "-worker-" + std::to_string(i % 8)},
      {"type", "Normal"},
      {"source", {{"component", "kube_request_bench"}}},
      {"count", 1}};
}

// Runs `request(i)` for i in [0, n) from `threads` threads; prints one row.
void Round(const char* what, int n, int threads, const std::function<bool(int)>& request) {
  std::atomic<int> next{0}, failed{0};
  Usage before = UsageNow();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < n;)
        if (!request(i)) failed.fetch_add(1);
    });
  for (auto& w : workers) w.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Usage after = UsageNow();
  double cpu = after.cpu_seconds - before.cpu_seconds;
  long cs = after.context_switches - before.context_switches;
  std::printf("| %s | %d | %d | %d | %.2f s | %.0f | %.0f µs | %.1f |\n", what, n, threads,
              failed.load(), wall, n / wall, cpu / n * 1e6, static_cast<double>(cs) / n);
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  int watches = argc > 3 ? std::atoi(argv[3]) : 0;
  int direct = argc > 4 ? std::atoi(argv[4]) : -1;
  if (n < 4 || threads < 1 || watches < 0 || (argc > 4 && direct < 0)) {
    std::fprintf(stderr,
                 "usage: kube_request_bench [N] [T] [W] [D]: N requests (at least 4), T threads "
                 "(at least 1), W quiet watches (0 or more), D direct connections (0 or more)\n");
    return 2;
  }
  RealClock clock;
  std::unique_ptr<Client> client =
      bench::BenchAdminClient(&clock, direct >= 0 ? std::optional<size_t>(direct) : std::nullopt);
  std::string ns = "rq-" + std::to_string(getpid());
  if (!client->Create(kNamespaces, "", {{"metadata", {{"name", ns}}}}).ok()) {
    std::fprintf(stderr, "cannot create namespace %s\n", ns.c_str());
    return 1;
  }
  // Watches held open on the same client while the requests run, as an operator holds its
  // informers' watches: each is one more transfer on the transport (quiet: nothing changes).
  std::vector<std::shared_ptr<Stream>> streams;
  for (int w = 0; w < watches; ++w) {
    ListOptions options;
    options.resource_version = "0";
    streams.push_back(client->Watch(
        kConfigMaps, ns + "-quiet", options, [](WatchEvent) { return Status::Ok(); },
        [](Status) {}));
  }
  std::printf("%d quiet watches on the same client, direct connections: %s\n\n", watches,
              direct >= 0 ? std::to_string(direct).c_str() : "default");
  std::printf(
      "| requests | n | threads | failed | wall | per second | client CPU a request | "
      "context switches a request |\n|---|---|---|---|---|---|---|---|\n");
  Round("create event (CreateOnly)", n, threads,
        [&](int i) { return client->CreateOnly(kEvents, ns, BenchEvent(ns, i)).ok(); });
  Round("get event", n, threads,
        [&](int i) { return client->Get(kEvents, ns, "bench." + std::to_string(i % 100)).ok(); });
  Round("create event, 1 thread", n / 4, 1,
        [&](int i) { return client->CreateOnly(kEvents, ns, BenchEvent(ns, n + i)).ok(); });
  std::printf("\nconnections opened: %ld\n", client->transport().ConnectionsOpened());
  for (auto& stream : streams) stream->Cancel();
  (void)client->Delete(kNamespaces, "", ns);
  return 0;
}
