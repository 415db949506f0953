// Latency benchmarks of Kubernetes operators for kubeflow.org/v1, side by side (trainctl and the
// upstream binary, same flags, same identity), on the private test cluster with kwok nodes. Run
// through bench/operator_latency.sh. Each scenario prints one markdown row per operator.
//
//   replace: --jobs PyTorchJobs of one Master (restartPolicy ExitCode, pods run until told) are
//            running, and each job's status says so; --failures of their pods, spread over
//            the jobs at --rate a second, are made to exit 137 (retryable). Latency: from the
//            pod seen Failed to its replacement (same name, new uid) seen created, both
//            through the benchmark's own watch. --settle pods starts the failures as soon as
//            every pod runs, while the operator may still be writing its jobs' Running.
//   restart: --jobs jobs of --replicas pods are running; the operator is stopped, one pod is made
//            to fail, the operator is started again. Times from the start: ready (trainctl:
//            informers synced; upstream: its workers started), and the failed pod's replacement.
//            Repeated --restarts times on the same pods, a pod of another job each time, one
//            row each (trainctl's account of the lists it waited on goes to stderr).
//   backlog: --finished jobs are stored already Succeeded (status written by the benchmark, no
//            pods); the operator starts, and once it is ready a new job of --replicas pods is
//            submitted. Times from the submission: its first pod and all its pods created.
//
// Pods are started by kwok (hack/cluster/kwok/pod-stages.yaml: kwok-run-forever, then
// kwok-run-seconds 0 and kwok-exit-code 137 to fail one). Peak RSS and CPU seconds are read from
// /proc/<pid> the same way for both operators.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "operator_harness.h"

namespace trainctl::bench {
namespace {

using nlohmann::json;

struct Args {
  std::string scenario;
  int jobs = 1000, replicas = 10, finished = 5000, failures = 300, threads = 4, restarts = 1;
  double rate = 10, qps = 10000;
  int burst = 20000;
  std::string trainctl = "build/release/trainctl";
  std::string upstream;
  std::vector<std::string> impls = {"trainctl", "upstream"};
  // replace: the failures start once every job reports Running ("jobs"), or as soon as every
  // pod runs ("pods"), while the operator may still be writing those jobs' Running.
  std::string settle = "jobs";
};

const char* kRunForever = "trainctl.dev/kwok-run-forever";

JobShape RunningShape(int replicas, const std::string& restart_policy) {
  JobShape shape;
  shape.replicas = replicas;
  shape.restart_policy = restart_policy;
  shape.pod_annotations[kRunForever] = "true";
  return shape;
}

// Makes kwok end the pod now with exit code 137.
Status FailPod(kube::Client* client, const std::string& ns, const std::string& pod) {
  const std::string body = R"({"metadata":{"annotations":{"trainctl.dev/kwok-run-seconds":"0",)"
                           R"("trainctl.dev/kwok-exit-code":"137"}}})";
  return client->Patch(kube::kPods, ns, pod, kube::PatchType::kMerge, body).status();
}

// Creates `count` jobs with 16 client threads; dies when one cannot be created.
void SubmitJobs(kube::Client* admin, const std::string& ns, int count, const JobShape& shape,
                const std::string& prefix = "job-") {
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> submitters;
  for (int w = 0; w < 16; ++w)
    submitters.emplace_back([&] {
      for (int i; (i = next++) < count;)
        if (!admin->Create(kPyTorchJobs, ns, JobDoc(prefix + std::to_string(i), ns, shape)).ok())
          ++failed;
    });
  for (auto& t : submitters) t.join();
  if (failed) Die(std::to_string(failed.load()) + " job creates failed in " + ns);
}

void WaitRunning(PodWatch& watch, size_t expected, double limit) {
  auto start = Steady::now();
  while (watch.counts().running < expected) {
    if (Since(start) > limit)
      Die("only " + std::to_string(watch.counts().running) + " of " + std::to_string(expected) +
          " pods Running after " + Number(limit) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Waits until every job in `ns` reports Running=True: the operator has written what its pods
// starting changed, so the failures that follow do not queue behind those writes (at 1,000
// jobs that backlog was seconds long, and it was measured as replacement latency).
void WaitJobsRunning(kube::Client* admin, const std::string& ns, int jobs, double limit) {
  auto start = Steady::now();
  for (;;) {
    const int running = JobsWithCondition(admin, ns, "Running");
    if (running >= jobs) return;
    if (Since(start) > limit)
      Die("only " + std::to_string(running) + " of " + std::to_string(jobs) +
          " jobs Running after " + Number(limit) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// Tracks failures and replacements: a pod seen Failed, seen gone (the operator deleted it and
// kwok let it go), then a pod of the same name with another uid seen at all.
class Replacements {
 public:
  void Note(const kube::PodSummary& p, Steady::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = failed_.find(p.name);
    if (open != failed_.end() && open->second.uid != p.uid) {
      latencies_ms_.push_back(Ms(at - open->second.at));
      if (open->second.gone) after_gone_ms_.push_back(Ms(at - *open->second.gone));
      failed_.erase(open);
      replaced_at_[p.name] = at;
      return;
    }
    if (p.phase == kube::PodPhase::kFailed && open == failed_.end() && !seen_failed_.count(p.uid)) {
      seen_failed_.insert(p.uid);
      failed_[p.name] = {p.uid, at, std::nullopt};
    }
  }
  void Gone(const kube::PodSummary& p, Steady::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = failed_.find(p.name);
    if (open != failed_.end() && open->second.uid == p.uid) open->second.gone = at;
  }
  size_t replaced() {
    std::lock_guard<std::mutex> lock(mu_);
    return latencies_ms_.size();
  }
  // Seen Failed and not yet replaced.
  bool Failed(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_.count(pod) > 0;
  }
  std::optional<Steady::time_point> ReplacedAt(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = replaced_at_.find(pod);
    if (it == replaced_at_.end()) return std::nullopt;
    return it->second;
  }
  // Failed → replacement seen.
  std::vector<double> latencies_ms() {
    std::lock_guard<std::mutex> lock(mu_);
    return latencies_ms_;
  }
  // Gone → replacement seen: the operator's own part (its watch, its sync, its create).
  std::vector<double> after_gone_ms() {
    std::lock_guard<std::mutex> lock(mu_);
    return after_gone_ms_;
  }

 private:
  static double Ms(Steady::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }
  struct Open {
    kube::Uid uid;
    Steady::time_point at;
    std::optional<Steady::time_point> gone;
  };
  std::mutex mu_;
  std::map<std::string, Open> failed_;
  std::set<kube::Uid> seen_failed_;
  std::map<std::string, Steady::time_point> replaced_at_;
  std::vector<double> latencies_ms_, after_gone_ms_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

OperatorFlags Flags(const Args& a, const std::string& impl, const std::string& ns) {
  return {impl, impl == "upstream" ? a.upstream : a.trainctl, ns, a.qps, a.burst, a.threads, {}};
}

std::string Ms(double ms) {
  if (ms < 0) return "—";
  std::ostringstream out;
  out.precision(ms < 10 ? 2 : 0);
  out << std::fixed << ms << " ms";
  return out.str();
}

// A fresh namespace with a.jobs jobs of `replicas` pods that run until told (ExitCode, so a
// 137 is retried), all Running under a started operator; failures and replacements are noted
// from the start.
struct Scene {
  std::string ns;
  Replacements replacements;
  std::unique_ptr<kube::Client> watch_client;
  std::unique_ptr<PodWatch> watch;
  Operator op;
  size_t pods = 0;
};

std::unique_ptr<Scene> RunningScene(const Args& a, const std::string& impl, int replicas,
                                    kube::Client* admin, const Clock* clock) {
  auto scene = std::make_unique<Scene>();
  Scene* s = scene.get();
  s->ns = "lat-" + a.scenario + "-" + impl + "-" + std::to_string(getpid());
  CreateNamespace(admin, s->ns);
  s->watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  s->watch = std::make_unique<PodWatch>(
      s->watch_client.get(), s->ns,
      [s](const kube::PodSummary& p, Steady::time_point at) { s->replacements.Note(p, at); },
      [s](const kube::PodSummary& p, Steady::time_point at) { s->replacements.Gone(p, at); });
  s->op = StartOperator(Flags(a, impl, s->ns));
  WaitReady(s->op, admin);
  SubmitJobs(admin, s->ns, a.jobs, RunningShape(replicas, "ExitCode"));
  s->pods = static_cast<size_t>(a.jobs) * replicas;
  WaitRunning(*s->watch, s->pods, 3600);
  if (a.settle == "jobs") WaitJobsRunning(admin, s->ns, a.jobs, 600);
  return scene;
}

void Replace(const Args& a, const std::string& impl, kube::Client* admin, const Clock* clock) {
  std::unique_ptr<Scene> scene = RunningScene(a, impl, 1, admin, clock);
  const std::string& ns = scene->ns;
  Replacements& replacements = scene->replacements;

  // Failures at the given rate, each on a job whose pod is not already being replaced.
  std::mt19937 random(7);
  std::vector<int> order(a.jobs);
  for (int i = 0; i < a.jobs; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), random);
  auto start = Steady::now();
  for (int i = 0; i < a.failures; ++i) {
    const std::string pod = "job-" + std::to_string(order[i % a.jobs]) + "-master-0";
    if (Status st = FailPod(admin, ns, pod); !st.ok()) Die("failing " + pod + ": " + st.message());
    auto due = start + std::chrono::duration<double>((i + 1) / a.rate);
    std::this_thread::sleep_until(due);
  }
  auto wait = Steady::now();
  while (replacements.replaced() < static_cast<size_t>(a.failures) && Since(wait) < 300)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ProcessFigures figures = StopOperator(scene->op);
  std::vector<double> ms = replacements.latencies_ms();
  std::vector<double> own = replacements.after_gone_ms();
  std::printf(
      "| %s | %d jobs, %d failures at %s/s | %zu | %s | %s | %s | %zu | %s | %s | %.1f MiB | "
      "%.1f |\n",
      impl.c_str(), a.jobs, a.failures, Number(a.rate).c_str(), ms.size(),
      Ms(Percentile(ms, 0.5)).c_str(), Ms(Percentile(ms, 0.99)).c_str(),
      Ms(Percentile(ms, 1.0)).c_str(), own.size(), Ms(Percentile(own, 0.5)).c_str(),
      Ms(Percentile(own, 0.99)).c_str(), figures.peak_rss_mib, figures.cpu_seconds);
  std::fflush(stdout);
  DeleteNamespace(admin, ns);
}

// The operator's own account of its start (trainctl logs which lists it waited on), for stderr.
std::string LastSyncLine(const Operator& op) {
  std::ifstream in(op.log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find("caches synced") != std::string::npos) last = line;
  return last;
}

void Restart(const Args& a, const std::string& impl, kube::Client* admin, const Clock* clock) {
  std::unique_ptr<Scene> scene = RunningScene(a, impl, a.replicas, admin, clock);
  const std::string& ns = scene->ns;
  Replacements& replacements = scene->replacements;
  const size_t pods = scene->pods;
  std::this_thread::sleep_for(std::chrono::seconds(5));  // the last status writes
  StopOperator(scene->op);
  // Each restart fails a pod of another job while the operator is down.
  for (int r = 0; r < a.restarts; ++r) {
    const std::string victim = "job-" + std::to_string(r % a.jobs) + "-master-0";
    if (Status st = FailPod(admin, ns, victim); !st.ok())
      Die("failing " + victim + ": " + st.message());
    auto failed = Steady::now();
    while (Since(failed) < 60 && !replacements.Failed(victim))  // kwok marks it Failed
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::seconds(2));

    auto start = Steady::now();
    Operator running = StartOperator(Flags(a, impl, ns));
    double ready = WaitReady(running, admin, 600);
    std::optional<Steady::time_point> replaced;
    while (!(replaced = replacements.ReplacedAt(victim)) && Since(start) < 600)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ProcessFigures figures = StopOperator(running);
    double first_write = replaced ? std::chrono::duration<double>(*replaced - start).count() : -1;
    std::printf(
        "| %s | %d jobs, %zu pods | %.2f s | %s | %.1f MiB | %.1f |\n", impl.c_str(), a.jobs, pods,
        ready, first_write < 0 ? "—" : (Number(std::round(first_write * 100) / 100) + " s").c_str(),
        figures.peak_rss_mib, figures.cpu_seconds);
    std::fflush(stdout);
    if (std::string line = LastSyncLine(running); !line.empty())
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  DeleteNamespace(admin, ns);
}

void Backlog(const Args& a, const std::string& impl, kube::Client* admin, const Clock* clock) {
  const std::string ns = "lat-backlog-" + impl + "-" + std::to_string(getpid());
  CreateNamespace(admin, ns);
  // Finished jobs, stored with a Succeeded status before any operator runs.
  JobShape done_shape = RunningShape(1, "OnFailure");
  SubmitJobs(admin, ns, a.finished, done_shape, "done-");
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> writers;
  const std::string t = "2026-01-01T00:00:00Z";
  for (int w = 0; w < 16; ++w)
    writers.emplace_back([&] {
      for (int i; (i = next++) < a.finished;) {
        const std::string name = "done-" + std::to_string(i);
        json status = {{"conditions", json::array({{{"type", "Created"},
                                                    {"status", "True"},
                                                    {"reason", "PyTorchJobCreated"},
                                                    {"message", "created"},
                                                    {"lastUpdateTime", t},
                                                    {"lastTransitionTime", t}},
                                                   {{"type", "Succeeded"},
                                                    {"status", "True"},
                                                    {"reason", "PyTorchJobSucceeded"},
                                                    {"message", "done"},
                                                    {"lastUpdateTime", t},
                                                    {"lastTransitionTime", t}}})},
                       {"replicaStatuses", {{"Master", {{"succeeded", 1}}}}},
                       {"startTime", t},
                       {"completionTime", t}};
        std::string body = json{{"status", status}}.dump();
        if (!admin->Patch(kPyTorchJobs, ns, name, kube::PatchType::kMerge, body, {}, "status").ok())
          ++failed;
      }
    });
  for (auto& w : writers) w.join();
  if (failed) Die(std::to_string(failed.load()) + " status writes failed");

  auto watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  PodWatch watch(watch_client.get(), ns);
  Operator op = StartOperator(Flags(a, impl, ns));
  WaitReady(op, admin, 600);
  auto start = Steady::now();
  if (!admin->Create(kPyTorchJobs, ns, JobDoc("new", ns, RunningShape(a.replicas, "OnFailure")))
           .ok())
    Die("cannot submit the new job");
  double first = -1, all = -1;
  while (Since(start) < 900 && all < 0) {
    size_t created = watch.counts().created;
    if (first < 0 && created >= 1) first = Since(start);
    if (created >= static_cast<size_t>(a.replicas)) all = Since(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ProcessFigures figures = StopOperator(op);
  auto secs = [](double s) {
    return s < 0 ? std::string("—") : Number(std::round(s * 100) / 100) + " s";
  };
  std::printf("| %s | %d finished jobs, new job of %d | %s | %s | %.1f MiB | %.1f |\n",
              impl.c_str(), a.finished, a.replicas, secs(first).c_str(), secs(all).c_str(),
              figures.peak_rss_mib, figures.cpu_seconds);
  std::fflush(stdout);
  DeleteNamespace(admin, ns);
}

}  // namespace
}  // namespace trainctl::bench

int main(int argc, char** argv) {
  using namespace trainctl::bench;
  Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (i + 1 >= argc) Die("flag " + k + " needs a value");
    std::string v = argv[i + 1];
    if (k == "--scenario")
      a.scenario = v;
    else if (k == "--jobs")
      a.jobs = std::atoi(v.c_str());
    else if (k == "--replicas")
      a.replicas = std::atoi(v.c_str());
    else if (k == "--finished")
      a.finished = std::atoi(v.c_str());
    else if (k == "--failures")
      a.failures = std::atoi(v.c_str());
    else if (k == "--rate")
      a.rate = std::atof(v.c_str());
    else if (k == "--restarts")
      a.restarts = std::atoi(v.c_str());
    else if (k == "--threads")
      a.threads = std::atoi(v.c_str());
    else if (k == "--qps")
      a.qps = std::atof(v.c_str());
    else if (k == "--burst")
      a.burst = std::atoi(v.c_str());
    else if (k == "--trainctl")
      a.trainctl = v;
    else if (k == "--upstream")
      a.upstream = v;
    else if (k == "--impl")
      a.impls = SplitList(v);
    else if (k == "--settle")
      a.settle = v;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (a.settle != "jobs" && a.settle != "pods") {
    std::fprintf(stderr, "--settle: expected jobs or pods, got \"%s\"\n", a.settle.c_str());
    return 2;
  }
  if (a.scenario != "replace" && a.scenario != "restart" && a.scenario != "backlog") {
    std::fprintf(stderr, "--scenario: expected replace, restart or backlog, got \"%s\"\n",
                 a.scenario.c_str());
    return 2;
  }
  if (a.rate <= 0 || a.jobs < 1 || a.replicas < 1 || a.restarts < 1) {
    std::fprintf(stderr, "--rate, --jobs, --replicas and --restarts must be positive\n");
    return 2;
  }
  for (const std::string& impl : a.impls)
    if ((impl != "trainctl" && impl != "upstream") ||
        access((impl == "upstream" ? a.upstream : a.trainctl).c_str(), X_OK) != 0) {
      std::fprintf(stderr, "--impl %s: no such side or its binary is not executable\n",
                   impl.c_str());
      return 2;
    }
  RequireBenchEnvironment();
  signal(SIGPIPE, SIG_IGN);
  trainctl::RealClock clock;
  auto admin = MakeClient(&clock, AdminKubeconfig(), -1, 0);
  std::printf("\nscenario %s: QPS %s, burst %d, %d threads\n\n", a.scenario.c_str(),
              Number(a.qps).c_str(), a.burst, a.threads);
  if (a.scenario == "replace")
    std::printf(
        "| operator | load | replaced | Failed → new pod p50 | p99 | max | seen gone | gone → new "
        "pod p50 | p99 | peak RSS | CPU s |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  else if (a.scenario == "restart")
    std::printf(
        "| operator | present | ready after start | failed pod replaced after start | "
        "peak RSS | CPU s |\n|---|---|---|---|---|---|\n");
  else
    std::printf(
        "| operator | present | first pod created | all pods created | peak RSS | "
        "CPU s |\n|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (const std::string& impl : a.impls) {
    std::fprintf(stderr, "%s: %s\n", a.scenario.c_str(), impl.c_str());
    if (a.scenario == "replace")
      Replace(a, impl, admin.get(), &clock);
    else if (a.scenario == "restart")
      Restart(a, impl, admin.get(), &clock);
    else
      Backlog(a, impl, admin.get(), &clock);
  }
  return 0;
}
