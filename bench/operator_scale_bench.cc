// Scale benchmark of `trainctl operator` on the real control plane with kwok nodes, and the API
// floor in the same run.
//
//   operator: N PyTorchJobs (1 Master + R-1 Workers) submitted at once; the operator (a child
//             process, --kube-api-qps Q --kube-api-burst B) creates R pods + R services per job.
//   floor:    the same pods and services (built by the same code) created by a plain client at
//             the same QPS/burst with the same parallelism, no logic at all.
//
// For both: time from the first submission until every pod was seen Running, and until every
// pod Succeeded (kwok runs each pod for --run-seconds), watched through an informer. For the
// operator also: until every job is Succeeded, its peak RSS, CPU seconds and API writes (from its
// /metrics). Needs TRAINCTL_CLUSTER_DIR (kubeconfig) with the CRDs installed; run through
// bench/operator_scale.sh, which starts a private cluster. Prints markdown rows.
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/manifest.h"
#include "api/replica_env.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "kube/reflector.h"
#include "kube/pod_summary.h"
#include "kube/store.h"
#include "operator/pod_builder.h"

extern char** environ;

namespace trainctl {
namespace {

using nlohmann::json;

struct Args {
  int jobs = 1000, replicas = 8, threads = 4, run_seconds = 30;
  double qps = 20;
  int burst = 30;
  std::string trainctl = "build/release/trainctl";
  bool floor = true, op = true;
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string Env(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

std::unique_ptr<kube::Client> MakeClient(const Clock* clock, double qps, int burst) {
  auto config = kube::LoadKubeconfig(Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig", "");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    std::exit(1);
  }
  kube::ClientOptions o;
  o.qps = qps;
  o.burst = burst;
  auto client = kube::Connect(*config, clock, o);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

json JobDoc(const std::string& name, const std::string& ns, int replicas, int run_seconds) {
  json annotations = {{"trainctl.dev/kwok-run-seconds", std::to_string(run_seconds)}};
  auto spec = [&](int n) {
    json container = {{"name", "pytorch"},
                      {"image", "example.invalid/train:1"},
                      {"command", {"python3", "train.py"}}};
    json tmpl = {{"metadata", {{"annotations", annotations}}},
                 {"spec", {{"containers", json::array({container})}}}};
    return json{{"replicas", n}, {"restartPolicy", "OnFailure"}, {"template", tmpl}};
  };
  json specs = {{"Master", spec(1)}};
  if (replicas > 1) specs["Worker"] = spec(replicas - 1);
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          // Pods stay after the job ends (as in the floor), so both runs can see every pod finish.
          {"spec", {{"pytorchReplicaSpecs", specs}, {"runPolicy", {{"cleanPodPolicy", "None"}}}}}};
}

// Watches the namespace's pods; remembers when each pod was first seen Running and Succeeded.
class PodWatch {
 public:
  PodWatch(kube::Client* client, const std::string& ns, size_t expected)
      : expected_(expected),
        store_([this](const json& o) -> std::optional<kube::PodSummary> {
          auto p = kube::ProjectPod(o, {});
          if (p) Note(*p);
          return p;
        }) {
    kube::ReflectorOptions options;
    options.namespace_ = ns;
    reflector_ = std::make_unique<kube::Reflector>(client, kube::kPods, options, &store_);
    reflector_->Start();
    reflector_->WaitForSync(Duration(30000));
  }
  ~PodWatch() { reflector_->Stop(); }
  void Note(const kube::PodSummary& p) {
    std::lock_guard<std::mutex> lock(mu_);
    if (p.phase == kube::PodPhase::kRunning || p.phase == kube::PodPhase::kSucceeded)
      running_.insert(p.name);
    if (p.phase == kube::PodPhase::kSucceeded) succeeded_.insert(p.name);
  }
  std::pair<size_t, size_t> Counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return {running_.size(), succeeded_.size()};
  }
  long events() const { return reflector_->stats().events; }

 private:
  size_t expected_;
  std::mutex mu_;
  std::set<std::string> running_, succeeded_;
  kube::Store<kube::PodSummary> store_;
  std::unique_ptr<kube::Reflector> reflector_;
};

struct Timing {
  double all_running = -1, all_succeeded = -1;
};

Timing WaitPods(PodWatch& watch, size_t expected, std::chrono::steady_clock::time_point start,
                double limit, const std::function<bool()>& extra_done = nullptr) {
  Timing t;
  while (Since(start) < limit) {
    auto [running, succeeded] = watch.Counts();
    if (t.all_running < 0 && running >= expected) t.all_running = Since(start);
    if (t.all_succeeded < 0 && succeeded >= expected) t.all_succeeded = Since(start);
    if (t.all_succeeded >= 0 && (!extra_done || extra_done())) break;
    if (t.all_running >= 0 && extra_done && extra_done()) break;  // jobs done, some pods gone
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return t;
}

// Deletes the namespace and waits until it is gone: the garbage collection of thousands of pods
// would otherwise load the control plane during the next run.
void DeleteNamespace(kube::Client* admin, const std::string& ns) {
  (void)admin->Delete(kube::kNamespaces, "", ns);
  auto start = std::chrono::steady_clock::now();
  while (Since(start) < 900 &&
         admin->Get(kube::kNamespaces, "", ns).status().code() != StatusCode::kNotFound)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  std::fprintf(stderr, "namespace %s removed after %.0f s\n", ns.c_str(), Since(start));
}

void CreateNamespace(kube::Client* admin, const std::string& ns) {
  if (!admin->Create(kube::kNamespaces, "", {{"metadata", {{"name", ns}}}}).ok()) {
    std::fprintf(stderr, "cannot create namespace %s\n", ns.c_str());
    std::exit(1);
  }
}

std::string Metric(const std::string& text, const std::string& name) {
  double total = 0;
  bool found = false;
  size_t pos = 0;
  while ((pos = text.find("\n" + name, pos)) != std::string::npos) {
    size_t end = text.find('\n', pos + 1);
    std::string line = text.substr(pos + 1, end - pos - 1);
    pos = end;
    if (line.compare(0, name.size(), name) != 0) continue;
    char after = line.size() > name.size() ? line[name.size()] : ' ';
    if (after != ' ' && after != '{') continue;
    total += std::atof(line.substr(line.rfind(' ') + 1).c_str());
    found = true;
  }
  return found ? std::to_string(total) : "?";
}

std::string Scrape(int port) {
  std::string cmd = "curl -s http://127.0.0.1:" + std::to_string(port) + "/metrics";
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    pclose(f);
  }
  return "\n" + out;
}

void RunOperator(const Args& a, kube::Client* admin, const Clock* clock) {
  std::string ns = "scale-op-" + std::to_string(getpid());
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.replicas;
  auto watch_client = MakeClient(clock, -1, 0);
  PodWatch watch(watch_client.get(), ns, expected);

  int port = 29990;
  std::string qps = std::to_string(a.qps), burst = std::to_string(a.burst),
              threads = std::to_string(a.threads), metrics = "127.0.0.1:" + std::to_string(port);
  std::string kubeconfig = Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig";
  std::vector<std::string> argv_s = {a.trainctl, "operator", "--kubeconfig", kubeconfig,
                                     "--namespace", ns, "--kube-api-qps", qps, "--kube-api-burst",
                                     burst, "--controller-threads", threads,
                                     "--metrics-bind-address", metrics,
                                     "--health-probe-bind-address", "127.0.0.1:29991"};
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string log = Env("TRAINCTL_CLUSTER_DIR") + "/scale-operator.log";
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::exit(1);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // informers synced (empty namespace)

  auto start = std::chrono::steady_clock::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> submitters;
  for (int w = 0; w < 8; ++w)
    submitters.emplace_back([&] {
      for (int i; (i = next++) < a.jobs;)
        if (!admin->Create({"kubeflow.org", "v1", "pytorchjobs"}, ns,
                           JobDoc("job-" + std::to_string(i), ns, a.replicas, a.run_seconds))
                 .ok())
          ++failed;
    });
  for (auto& t : submitters) t.join();
  double submitted = Since(start);

  auto jobs_done = [&] {
    auto list = admin->ListAll({"kubeflow.org", "v1", "pytorchjobs"}, ns, {});
    if (!list.ok()) return false;
    int done = 0;
    for (const json& j : (*list)["items"])
      for (const json& c : j.value("status", json::object()).value("conditions", json::array()))
        if (c.value("type", "") == "Succeeded" && c.value("status", "") == "True") ++done;
    return done >= a.jobs;
  };
  Timing t = WaitPods(watch, expected, start, 3600, [&] {
    static auto last = std::chrono::steady_clock::now() - std::chrono::seconds(10);
    if (Since(last) < 2) return false;
    last = std::chrono::steady_clock::now();
    return jobs_done();
  });
  double jobs_succeeded = Since(start);
  std::string m = Scrape(port);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  double rss_mib = std::atof(Metric(m, "trainctl_process_peak_resident_memory_bytes").c_str()) / 1048576.0;
  double cpu = std::atof(Metric(m, "process_cpu_seconds_total").c_str());
  double writes = std::atof(Metric(m, "trainctl_api_requests_total").c_str());
  std::printf("| operator | %d × %d | %.1f s | %.1f s | %.1f s | %.1f s | %.1f MiB | %.1f | %.0f |\n",
              a.jobs, a.replicas, submitted, t.all_running, t.all_succeeded, jobs_succeeded,
              rss_mib, cpu, writes);
  DeleteNamespace(admin, ns);
}

void RunFloor(const Args& a, kube::Client* admin, const Clock* clock) {
  std::string ns = "scale-floor-" + std::to_string(getpid());
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.replicas;
  auto watch_client = MakeClient(clock, -1, 0);
  PodWatch watch(watch_client.get(), ns, expected);
  auto client = MakeClient(clock, a.qps, a.burst);

  // Every object built beforehand by the operator's own builder: the floor has no logic.
  std::vector<std::pair<const kube::Resource*, json>> objects;
  for (int i = 0; i < a.jobs; ++i) {
    json doc = JobDoc("job-" + std::to_string(i), ns, a.replicas, a.run_seconds);
    doc["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000";
    auto prepared = api::PrepareJob(doc);
    if (!prepared.ok()) {
      std::fprintf(stderr, "%s\n", prepared.status().message().c_str());
      std::exit(1);
    }
    const api::Job& job = prepared->job;
    api::ServiceEndpoints endpoints(job.name, ns);
    for (const auto& [type, spec] : job.replica_specs)
      for (int r = 0; r < spec.replicas.value_or(1); ++r) {
        objects.push_back({&kube::kServices, *op::BuildService(job, type, r)});
        json pod = op::BuildPod(job, type, r, endpoints, {})->pod;
        pod["metadata"].erase("ownerReferences");  // no job object to own them
        objects.push_back({&kube::kPods, std::move(pod)});
      }
  }
  for (auto& [r, o] : objects)
    if (r == &kube::kServices) o["metadata"].erase("ownerReferences");

  auto start = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> workers;
  int parallel = std::max(16, a.threads * 8);
  for (int w = 0; w < parallel; ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < objects.size();)
        if (!client->Create(*objects[i].first, ns, objects[i].second).ok()) ++failed;
    });
  for (auto& t : workers) t.join();
  double created = Since(start);
  Timing t = WaitPods(watch, expected, start, 3600);
  std::printf("| floor (plain client) | %d × %d | %.1f s (all created) | %.1f s | %.1f s | — | — | — | %zu |\n",
              a.jobs, a.replicas, created, t.all_running, t.all_succeeded, objects.size());
  if (failed) std::fprintf(stderr, "floor: %d creates failed\n", failed.load());
  DeleteNamespace(admin, ns);
}

}  // namespace
}  // namespace trainctl

int main(int argc, char** argv) {
  trainctl::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--jobs") a.jobs = std::atoi(v.c_str());
    else if (k == "--replicas") a.replicas = std::atoi(v.c_str());
    else if (k == "--qps") a.qps = std::atof(v.c_str());
    else if (k == "--burst") a.burst = std::atoi(v.c_str());
    else if (k == "--threads") a.threads = std::atoi(v.c_str());
    else if (k == "--run-seconds") a.run_seconds = std::atoi(v.c_str());
    else if (k == "--trainctl") a.trainctl = v;
    else if (k == "--only") { a.op = v == "operator"; a.floor = v == "floor"; }
    else { std::fprintf(stderr, "unknown flag %s\n", k.c_str()); return 2; }
  }
  signal(SIGPIPE, SIG_IGN);
  trainctl::RealClock clock;
  auto admin = trainctl::MakeClient(&clock, -1, 0);
  std::printf("| run | jobs × replicas | submitted | all pods Running | all pods Succeeded | all jobs Succeeded | peak RSS | CPU s | API writes |\n|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  if (a.op) trainctl::RunOperator(a, admin.get(), &clock);
  std::fflush(stdout);
  if (a.floor) trainctl::RunFloor(a, admin.get(), &clock);
  return 0;
}
