// Scale benchmark of Kubernetes operators for kubeflow.org/v1 on the real control plane with kwok
// nodes, side by side with the API floor, in one run on one cluster.
//
//   trainctl: `trainctl operator`; upstream: the Kubeflow training operator built unmodified
//             (hack/upstream/build.sh). Both get the same flags (--namespace, --kube-api-qps,
//             --kube-api-burst, --controller-threads), the same CRDs and the same identity, and
//             the clock starts only once each is ready (/readyz; upstream: its PyTorchJob
//             controller's workers started). N PyTorchJobs (1 Master + R-1 Workers) are then
//             submitted at once; each operator creates R pods + R services per job.
//   floor:    the same pods and services (built by trainctl's pod builder) created by a plain
//             client at the same QPS/burst, no logic at all.
//
// For each: time from the first submission until every pod exists, is Running, has Succeeded
// (kwok runs each pod --run-seconds), and (operators) every job is Succeeded, watched through an
// informer; the operator's peak RSS (VmHWM) and CPU seconds from /proc/<pid>, read the same way
// for both; its API requests by verb and resource, and its job status writes, from the API
// server's audit log (the identity's requests only). Needs TRAINCTL_CLUSTER_DIR (kubeconfig),
// TRAINCTL_BENCH_OPERATOR_KUBECONFIG (the audited identity) and TRAINCTL_BENCH_AUDIT_LOG; run
// through bench/operator_scale.sh, which prepares all of it. Prints markdown tables.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/manifest.h"
#include "api/replica_env.h"
#include "kube/base64.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "kube/pod_summary.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "operator/pod_builder.h"
#include "operator/process_stats.h"
#include "scale_audit.h"

extern char** environ;

namespace trainctl {
namespace {

using nlohmann::json;
using Steady = std::chrono::steady_clock;

const kube::Resource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};
const kube::Resource kSecrets{"", "v1", "secrets"};
constexpr int kMetricsPort = 29990, kProbePort = 29991, kWebhookPort = 29992;
// Upstream's certificate controller waits for its Secret's files here (a mounted volume in a
// pod); the benchmark copies them out of the Secret.
constexpr const char* kUpstreamCertDir = "/tmp/k8s-webhook-server/serving-certs";

struct Args {
  int jobs = 1000, replicas = 8, threads = 4, run_seconds = 30, repeat = 1;
  double qps = 20;
  int burst = 30;
  std::string trainctl = "build/release/trainctl";
  std::string upstream;  // the upstream operator's binary (hack/upstream/build.sh --print-path)
  std::vector<std::string> impls = {"trainctl", "floor"};
};

double Since(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

std::string Env(const char* n) {
  const char* v = std::getenv(n);
  return v ? v : "";
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "operator_scale_bench: %s\n", message.c_str());
  std::exit(1);
}

std::string Number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::unique_ptr<kube::Client> MakeClient(const Clock* clock, const std::string& kubeconfig,
                                         double qps, int burst) {
  auto config = kube::LoadKubeconfig(kubeconfig, "");
  if (!config.ok()) Die(kubeconfig + ": " + config.status().message());
  kube::ClientOptions o;
  o.qps = qps;
  o.burst = burst;
  auto client = kube::Connect(*config, clock, o);
  if (!client.ok()) Die(client.status().message());
  return std::move(client).value();
}

std::string AdminKubeconfig() { return Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig"; }
std::string OperatorKubeconfig() { return Env("TRAINCTL_BENCH_OPERATOR_KUBECONFIG"); }

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
          // Pods stay after the job ends (as in the floor), so every run can see every pod finish.
          {"spec", {{"pytorchReplicaSpecs", specs}, {"runPolicy", {{"cleanPodPolicy", "None"}}}}}};
}

// Watches the namespace's pods; remembers which were seen at all, Running and Succeeded.
class PodWatch {
 public:
  PodWatch(kube::Client* client, const std::string& ns)
      : store_([this](const json& o) -> std::optional<kube::PodSummary> {
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
    created_.insert(p.name);
    if (p.phase == kube::PodPhase::kRunning || p.phase == kube::PodPhase::kSucceeded)
      running_.insert(p.name);
    if (p.phase == kube::PodPhase::kSucceeded) succeeded_.insert(p.name);
  }
  struct Counts {
    size_t created, running, succeeded;
  };
  Counts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return {created_.size(), running_.size(), succeeded_.size()};
  }

 private:
  std::mutex mu_;
  std::set<std::string> created_, running_, succeeded_;
  kube::Store<kube::PodSummary> store_;
  std::unique_ptr<kube::Reflector> reflector_;
};

struct Timing {
  double all_created = -1, all_running = -1, all_succeeded = -1, jobs_succeeded = -1;
};

std::string Seconds(double s) { return s < 0 ? "—" : Number(std::round(s * 10) / 10) + " s"; }

// Waits until every pod has Succeeded and, when `jobs_done` is given, every job too.
Timing WaitPods(PodWatch& watch, size_t expected, Steady::time_point start, double limit,
                const std::function<bool()>& jobs_done = nullptr) {
  Timing t;
  Steady::time_point last_list = Steady::now() - std::chrono::seconds(10);
  while (Since(start) < limit) {
    PodWatch::Counts c = watch.counts();
    if (t.all_created < 0 && c.created >= expected) t.all_created = Since(start);
    if (t.all_running < 0 && c.running >= expected) t.all_running = Since(start);
    if (t.all_succeeded < 0 && c.succeeded >= expected) t.all_succeeded = Since(start);
    if (jobs_done && t.jobs_succeeded < 0 && t.all_running >= 0 && Since(last_list) >= 2) {
      last_list = Steady::now();
      if (jobs_done()) t.jobs_succeeded = Since(start);
    }
    if (t.all_succeeded >= 0 && (!jobs_done || t.jobs_succeeded >= 0)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return t;
}

// Deletes the namespace and waits until it is gone: the garbage collection of thousands of pods
// would otherwise load the control plane during the next run.
void DeleteNamespace(kube::Client* admin, const std::string& ns) {
  (void)admin->Delete(kube::kNamespaces, "", ns);
  auto start = Steady::now();
  while (Since(start) < 900 &&
         admin->Get(kube::kNamespaces, "", ns).status().code() != StatusCode::kNotFound)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  std::fprintf(stderr, "namespace %s removed after %.0f s\n", ns.c_str(), Since(start));
}

void CreateNamespace(kube::Client* admin, const std::string& ns) {
  if (!admin->Create(kube::kNamespaces, "", {{"metadata", {{"name", ns}}}}).ok())
    Die("cannot create namespace " + ns);
}

std::string Fetch(const std::string& url) {
  std::string out;
  if (FILE* f = popen(("curl -s -o /dev/null -w '%{http_code}' " + url).c_str(), "r")) {
    char buf[64];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    pclose(f);
  }
  return out;
}

bool FileContains(const std::string& path, const std::vector<std::string>& all_on_one_line) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    bool all = true;
    for (const std::string& s : all_on_one_line) all = all && line.find(s) != std::string::npos;
    if (all) return true;
  }
  return false;
}

// Copies upstream's webhook certificate from its Secret to the folder its certificate controller
// waits on, once the Secret has one. True once the files are there.
bool CopyUpstreamCerts(kube::Client* admin) {
  StatusOr<json> secret = admin->Get(kSecrets, "kubeflow", "training-operator-webhook-cert");
  if (!secret.ok() || !secret->contains("data")) return false;
  const json& data = (*secret)["data"];
  for (const char* key : {"tls.crt", "tls.key"})
    if (!data.contains(key)) return false;
  std::string dir = kUpstreamCertDir;
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0700);
  for (const char* key : {"ca.crt", "tls.crt", "tls.key"}) {
    std::optional<std::string> bytes = kube::Base64Decode(data.value(key, ""));
    if (!bytes) return false;
    std::ofstream(dir + "/" + key, std::ios::binary | std::ios::trunc) << *bytes;
  }
  return true;
}

struct Spawned {
  pid_t pid = 0;
  std::string log;
};

Spawned StartOperator(const Args& a, const std::string& impl, const std::string& ns) {
  std::vector<std::string> argv_s = {impl == "upstream" ? a.upstream : a.trainctl};
  if (impl == "trainctl") argv_s.push_back("operator");
  const std::string common[] = {"--kubeconfig",
                                OperatorKubeconfig(),
                                "--namespace",
                                ns,
                                "--kube-api-qps",
                                Number(a.qps),
                                "--kube-api-burst",
                                std::to_string(a.burst),
                                "--controller-threads",
                                std::to_string(a.threads),
                                "--metrics-bind-address",
                                "127.0.0.1:" + std::to_string(kMetricsPort),
                                "--health-probe-bind-address",
                                "127.0.0.1:" + std::to_string(kProbePort)};
  argv_s.insert(argv_s.end(), std::begin(common), std::end(common));
  if (impl == "upstream")
    argv_s.insert(argv_s.end(), {"--webhook-server-port", std::to_string(kWebhookPort)});
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  Spawned out;
  out.log = Env("TRAINCTL_CLUSTER_DIR") + "/scale-" + impl + ".log";
  posix_spawn_file_actions_addopen(&actions, 1, out.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawn(&out.pid, argv[0], &actions, nullptr, argv.data(), environ) != 0)
    Die("cannot start " + argv_s[0]);
  posix_spawn_file_actions_destroy(&actions);
  return out;
}

// Ready: /readyz answers 200 (trainctl: its informers synced; upstream: its certificates are in
// place and its webhook server listens) and, for upstream, its PyTorchJob workers started.
void WaitReady(const std::string& impl, const Spawned& op, kube::Client* admin) {
  auto start = Steady::now();
  bool certs = impl != "upstream";
  while (Since(start) < 180) {
    int status = 0;
    if (waitpid(op.pid, &status, WNOHANG) == op.pid) Die(impl + " exited; see " + op.log);
    if (!certs) certs = CopyUpstreamCerts(admin);
    bool ready = Fetch("http://127.0.0.1:" + std::to_string(kProbePort) + "/readyz") == "200";
    if (ready && impl == "upstream")
      ready = FileContains(op.log, {"Starting workers", "pytorchjob-controller"});
    if (ready) {
      std::fprintf(stderr, "%s ready after %.1f s\n", impl.c_str(), Since(start));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  kill(op.pid, SIGKILL);
  Die(impl + " not ready after 180 s; see " + op.log);
}

struct RunResult {
  std::string impl;
  Timing t;
  double rss_mib = -1, cpu = -1;
  bench::AuditCounts api;
};

RunResult RunOperator(const Args& a, const std::string& impl, kube::Client* admin,
                      const Clock* clock) {
  std::string ns = "scale-" + impl + "-" + std::to_string(getpid());
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.replicas;
  auto watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  PodWatch watch(watch_client.get(), ns);

  // Requests are counted from the operator's start (its initial lists included); the clock
  // starts once it is ready.
  const std::string audit_log = Env("TRAINCTL_BENCH_AUDIT_LOG");
  const uint64_t audit_from = bench::AuditLogSize(audit_log);
  Spawned op = StartOperator(a, impl, ns);
  WaitReady(impl, op, admin);

  auto start = Steady::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> submitters;
  for (int w = 0; w < 8; ++w)
    submitters.emplace_back([&] {
      for (int i; (i = next++) < a.jobs;)
        if (!admin
                 ->Create(kPyTorchJobs, ns,
                          JobDoc("job-" + std::to_string(i), ns, a.replicas, a.run_seconds))
                 .ok())
          ++failed;
    });
  for (auto& t : submitters) t.join();
  if (failed) std::fprintf(stderr, "%s: %d job creates failed\n", impl.c_str(), failed.load());

  auto jobs_done = [&] {
    auto list = admin->ListAll(kPyTorchJobs, ns, {});
    if (!list.ok()) return false;
    int done = 0;
    for (const json& j : (*list)["items"])
      for (const json& c : j.value("status", json::object()).value("conditions", json::array()))
        if (c.value("type", "") == "Succeeded" && c.value("status", "") == "True") ++done;
    return done >= a.jobs;
  };
  RunResult r;
  r.impl = impl;
  r.t = WaitPods(watch, expected, start, 3600, jobs_done);
  const std::string pid = std::to_string(op.pid);
  r.rss_mib = op::ProcStatusBytes("VmHWM", pid) / 1048576.0;
  r.cpu = op::CpuSeconds(pid);
  kill(op.pid, SIGTERM);
  int status = 0;
  waitpid(op.pid, &status, 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the audit log's last lines
  r.api = bench::CountAudit(audit_log, audit_from, Env("TRAINCTL_BENCH_AUDIT_USER"));
  DeleteNamespace(admin, ns);
  return r;
}

RunResult RunFloor(const Args& a, kube::Client* admin, const Clock* clock) {
  std::string ns = "scale-floor-" + std::to_string(getpid());
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.replicas;
  auto watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  PodWatch watch(watch_client.get(), ns);
  auto client = MakeClient(clock, OperatorKubeconfig(), a.qps, a.burst);

  // Every object built beforehand by the operator's own builder: the floor has no logic.
  std::vector<std::pair<const kube::Resource*, json>> objects;
  for (int i = 0; i < a.jobs; ++i) {
    json doc = JobDoc("job-" + std::to_string(i), ns, a.replicas, a.run_seconds);
    doc["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000";
    auto prepared = api::PrepareJob(doc);
    if (!prepared.ok()) Die(prepared.status().message());
    const api::Job& job = prepared->job;
    api::ServiceEndpoints endpoints(job.name, ns);
    for (const auto& [type, spec] : job.replica_specs)
      for (int r = 0; r < spec.replicas.value_or(1); ++r) {
        json service = *op::BuildService(job, type, r);
        service["metadata"].erase("ownerReferences");  // no job object to own them
        objects.push_back({&kube::kServices, std::move(service)});
        json pod = op::BuildPod(job, type, r, endpoints, {})->pod;
        pod["metadata"].erase("ownerReferences");
        objects.push_back({&kube::kPods, std::move(pod)});
      }
  }
  const std::string audit_log = Env("TRAINCTL_BENCH_AUDIT_LOG");
  const uint64_t audit_from = bench::AuditLogSize(audit_log);

  auto start = Steady::now();
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
  if (failed) std::fprintf(stderr, "floor: %d creates failed\n", failed.load());
  RunResult r;
  r.impl = "floor";
  r.t = WaitPods(watch, expected, start, 3600);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  r.api = bench::CountAudit(audit_log, audit_from, Env("TRAINCTL_BENCH_AUDIT_USER"));
  DeleteNamespace(admin, ns);
  return r;
}

std::string Ratio(double v, double floor) {
  if (v < 0 || floor <= 0) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v / floor);
  return buf;
}

void PrintTables(const Args& a, const std::vector<RunResult>& runs) {
  const RunResult* floor = nullptr;
  for (const RunResult& r : runs)
    if (r.impl == "floor") floor = &r;
  std::printf("\n%d jobs × %d replicas, QPS %s, burst %d, %d threads, pods run %d s\n\n", a.jobs,
              a.replicas, Number(a.qps).c_str(), a.burst, a.threads, a.run_seconds);
  std::printf(
      "| run | all pods created | all Running | vs floor | all Succeeded | all jobs Succeeded | "
      "peak RSS | CPU s | API requests | job status writes (per job) | 409s |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : runs) {
    bool op = r.impl != "floor";
    char rss[32] = "—", cpu[32] = "—", writes[64] = "—";
    if (op) {
      std::snprintf(rss, sizeof rss, "%.1f MiB", r.rss_mib);
      std::snprintf(cpu, sizeof cpu, "%.1f", r.cpu);
      std::snprintf(writes, sizeof writes, "%ld (%.2f)", r.api.job_status_writes,
                    static_cast<double>(r.api.job_status_writes) / a.jobs);
    }
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %ld | %s | %ld |\n", r.impl.c_str(),
                Seconds(r.t.all_created).c_str(), Seconds(r.t.all_running).c_str(),
                floor ? Ratio(r.t.all_running, floor->t.all_running).c_str() : "—",
                Seconds(r.t.all_succeeded).c_str(), Seconds(r.t.jobs_succeeded).c_str(), rss, cpu,
                r.api.total, writes, r.api.conflicts);
  }
  std::set<std::string> keys;
  for (const RunResult& r : runs)
    for (const auto& [k, n] : r.api.by_request) keys.insert(k);
  std::printf("\nAPI requests by verb and resource (audit log)\n\n| request |");
  for (const RunResult& r : runs) std::printf(" %s |", r.impl.c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < runs.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const std::string& k : keys) {
    std::printf("| %s |", k.c_str());
    for (const RunResult& r : runs) {
      auto it = r.api.by_request.find(k);
      std::printf(" %ld |", it == r.api.by_request.end() ? 0L : it->second);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace
}  // namespace trainctl

int main(int argc, char** argv) {
  using trainctl::Die;
  trainctl::Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (i + 1 >= argc) Die("flag " + k + " needs a value");
    std::string v = argv[i + 1];
    if (k == "--jobs")
      a.jobs = std::atoi(v.c_str());
    else if (k == "--replicas")
      a.replicas = std::atoi(v.c_str());
    else if (k == "--qps")
      a.qps = std::atof(v.c_str());
    else if (k == "--burst")
      a.burst = std::atoi(v.c_str());
    else if (k == "--threads")
      a.threads = std::atoi(v.c_str());
    else if (k == "--run-seconds")
      a.run_seconds = std::atoi(v.c_str());
    else if (k == "--repeat")
      a.repeat = std::atoi(v.c_str());
    else if (k == "--trainctl")
      a.trainctl = v;
    else if (k == "--upstream")
      a.upstream = v;
    else if (k == "--impl")
      a.impls = trainctl::Split(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  for (const std::string& impl : a.impls)
    if (impl != "trainctl" && impl != "upstream" && impl != "floor") {
      std::fprintf(stderr, "--impl: unknown side \"%s\"; expected trainctl, upstream, floor\n",
                   impl.c_str());
      return 2;
    }
  if (std::find(a.impls.begin(), a.impls.end(), "upstream") != a.impls.end() &&
      access(a.upstream.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "--upstream: \"%s\" is not an executable (hack/upstream/build.sh)\n",
                 a.upstream.c_str());
    return 2;
  }
  for (const char* env : {"TRAINCTL_CLUSTER_DIR", "TRAINCTL_BENCH_OPERATOR_KUBECONFIG",
                          "TRAINCTL_BENCH_AUDIT_LOG", "TRAINCTL_BENCH_AUDIT_USER"})
    if (trainctl::Env(env).empty()) {
      std::fprintf(stderr, "%s is not set; run through bench/operator_scale.sh\n", env);
      return 2;
    }
  signal(SIGPIPE, SIG_IGN);
  trainctl::RealClock clock;
  auto admin = trainctl::MakeClient(&clock, trainctl::AdminKubeconfig(), -1, 0);
  std::vector<trainctl::RunResult> runs;
  for (int round = 0; round < a.repeat; ++round) {
    std::vector<std::string> order = a.impls;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());  // alternate when repeated
    for (const std::string& impl : order) {
      std::fprintf(stderr, "run %d: %s\n", round + 1, impl.c_str());
      runs.push_back(impl == "floor" ? trainctl::RunFloor(a, admin.get(), &clock)
                                     : trainctl::RunOperator(a, impl, admin.get(), &clock));
    }
  }
  trainctl::PrintTables(a, runs);
  return 0;
}
