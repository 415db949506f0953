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
// --kind mpijob-v2 submits MPIJobs of kubeflow.org/v2beta1 instead (1 Launcher + --workers
// Workers; bench/mpi_bench.h), and --impl may name mpi-operator (built unmodified by
// hack/upstream/build.sh --mpi-operator; --threadiness for --controller-threads). Each side gets
// mpijobs.kubeflow.org the way it serves it, replaced between runs: mpi-operator its own CRD
// (v2beta1 only), trainctl ours (v1 stored, v2beta1 converted by its webhook, which it serves on
// 127.0.0.1 for the CRD's URL; the jobs are watched as v1, so the benchmark's watch costs no
// conversion). The floor creates what an operator makes for each job (Secret, ConfigMap,
// Service, worker pods, the launcher's batch Job, whose pod kube-controller-manager makes).
// Besides the pods' times: when every job is first seen with its Running condition, and every
// request that writes (create, update, patch, delete; Leases aside) per job.
//
// For each: time from the first submission until every pod exists, is Running, has Succeeded
// (kwok runs each pod --run-seconds), and (operators) every job is Succeeded, watched through an
// informer; then each operator runs --settle-seconds more (default 0); the operator's peak RSS
// (VmHWM) and CPU seconds from /proc/<pid>, read the same way for both; its API requests by verb
// and resource, and its job status writes, from the API server's audit log (the identity's requests
// only). Needs TRAINCTL_CLUSTER_DIR (kubeconfig), TRAINCTL_BENCH_OPERATOR_KUBECONFIG (the audited
// identity) and TRAINCTL_BENCH_AUDIT_LOG; run through bench/operator_scale.sh, which prepares all
// of it. Prints markdown tables. Before every run, etcd's history is compacted and its data file
// defragmented (bench/etcd_maintenance.h; TRAINCTL_BENCH_ETCD, --compact-etcd 0 leaves it), and
// the log says how big the file the run before left was; then the machine's speed is probed
// (bench/speed_probe.h) and shown with the run's figures. The control plane's CPU seconds are
// read from /proc, and the bytes the API server allocated from its /metrics: its CPU seconds per
// GiB allocated tell a slower machine (the same work, more CPU) from more work (more bytes) where
// the bytes repeat (bench/prometheus_text.h). Beside the sort, a wake-up round trip across two CPUs
// is timed before every run (bench/wake_probe.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/manifest.h"
#include "api/replica_env.h"
#include "etcd_maintenance.h"
#include "mpi_bench.h"
#include "operator/pod_builder.h"
#include "operator_harness.h"
#include "prometheus_text.h"
#include "run_summary.h"
#include "scale_audit.h"
#include "speed_probe.h"
#include "wake_probe.h"

namespace trainctl::bench {
namespace {

using nlohmann::json;

struct Args {
  int jobs = 1000, replicas = 8, threads = 4, run_seconds = 30, repeat = 1;
  // How long each operator keeps running after its last job succeeded, before its figures are
  // read: the work that follows a job's end (history records, TTL) is then counted.
  int settle_seconds = 0;
  // Compact and defragment etcd before every run, so that none starts from the history the
  // runs before it left (0: leave it).
  int compact_etcd = 1;
  double qps = 20;
  int burst = 30;
  std::string trainctl = "build/release/trainctl";
  std::string upstream;  // the upstream operator's binary (hack/upstream/build.sh --print-path)
  std::string baseline;  // another trainctl build (side "baseline"), e.g. the last commit's
  std::vector<std::string> impls = {"trainctl", "floor"};
  std::string kind = "pytorchjob";  // or mpijob-v2
  int workers = 4;                  // mpijob-v2: Workers per job (the Launcher besides)
  std::string mpi_operator;         // mpi-operator's binary (hack/upstream/build.sh --mpi-operator)
  bool mpi() const { return kind == "mpijob-v2"; }
  // Pods per job, and of them those that end (the Launcher; a PyTorchJob's every pod).
  int pods_per_job() const { return mpi() ? workers + 1 : replicas; }
  int ending_per_job() const { return mpi() ? 1 : replicas; }
};

// The port trainctl serves its conversion webhook on in mpijob-v2 runs, and the CRD's URL for it.
constexpr int kConversionPort = 29993;
const char* const kConversionUrl = "https://127.0.0.1:29993/convert-kubeflow-org-mpijob";

// mpijobs.kubeflow.org as `impl` serves it, from the JSON files bench/operator_scale.sh wrote.
nlohmann::json MpiCrdFor(const std::string& impl) {
  const std::string path =
      Env(impl == "mpi-operator" ? "TRAINCTL_BENCH_MPI_OPERATOR_CRD" : "TRAINCTL_BENCH_MPI_CRD");
  std::ifstream in(path);
  nlohmann::json crd = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!crd.is_object()) Die("cannot read the MPIJob CRD for " + impl + " from \"" + path + "\"");
  if (impl == "mpi-operator") return crd;
  StatusOr<nlohmann::json> pointed = PointConversionAt(std::move(crd), kConversionUrl);
  if (!pointed.ok()) Die(path + ": " + pointed.status().message());
  return *pointed;
}

JobShape Shape(const Args& a) {
  JobShape shape;
  shape.replicas = a.replicas;
  shape.pod_annotations["trainctl.dev/kwok-run-seconds"] = std::to_string(a.run_seconds);
  return shape;
}

std::string Seconds(double s) { return s < 0 ? "—" : Number(std::round(s * 10) / 10) + " s"; }

struct Timing {
  double all_created = -1, all_running = -1, all_succeeded = -1, jobs_succeeded = -1;
  double jobs_running = -1;  // mpijob-v2: every job seen with its Running condition
};

// Waits until every pod has Succeeded (`ending` of them: the rest run on) and, when `jobs_done`
// is given, every job too. `jobs_running` (optional) says when every job is Running.
Timing WaitPods(PodWatch& watch, size_t expected, size_t ending, Steady::time_point start,
                double limit, const std::function<bool()>& jobs_done = nullptr,
                const std::function<bool()>& jobs_running = nullptr) {
  Timing t;
  Steady::time_point last_list = Steady::now() - std::chrono::seconds(10);
  while (Since(start) < limit) {
    PodWatch::Counts c = watch.counts();
    if (t.all_created < 0 && c.created >= expected) t.all_created = Since(start);
    if (t.all_running < 0 && c.running >= expected) t.all_running = Since(start);
    if (jobs_running && t.jobs_running < 0 && jobs_running()) t.jobs_running = Since(start);
    if (t.all_succeeded < 0 && c.succeeded >= ending) t.all_succeeded = Since(start);
    if (jobs_done && t.jobs_succeeded < 0 && t.all_running >= 0 && Since(last_list) >= 2) {
      last_list = Steady::now();
      if (jobs_done()) t.jobs_succeeded = Since(start);
    }
    if (t.all_succeeded >= 0 && (!jobs_done || t.jobs_succeeded >= 0)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(jobs_running ? 50 : 200));
  }
  return t;
}

struct RunResult {
  std::string impl;
  int round = 0;
  Timing t;
  double rss_mib = -1, cpu = -1, reconciles = -1;
  std::map<std::string, double> cpu_by_thread;
  double history_shared_cpu = -1;
  bench::AuditCounts api;
  StageLags lags;
  std::map<std::string, double> plane_cpu;  // what the run cost each control-plane process
  double apiserver_alloc = -1;  // the bytes the API server allocated meanwhile (its /metrics)
  double probe_s = -1;          // the machine's speed probe just before the run (speed_probe.h)
  double wake_us = -1;          // a wake-up round trip across CPUs just before it (wake_probe.h)
};

// The stages the watch saw, in seconds from `start`.
StageLags LagsOf(PodWatch& watch, Steady::time_point start) {
  std::vector<PodStages> pods;
  auto at = [&](Steady::time_point t) {
    return t == Steady::time_point{} ? -1.0 : std::chrono::duration<double>(t - start).count();
  };
  for (const auto& [name, s] : watch.stages())
    pods.push_back({at(s.created), at(s.bound), at(s.running)});
  return SummarizeStages(pods);
}

std::map<std::string, double> CpuSince(const std::map<std::string, double>& before) {
  std::map<std::string, double> now = ControlPlaneCpu();
  for (auto& [program, seconds] : now) {
    auto it = before.find(program);
    if (it != before.end()) seconds -= it->second;
  }
  return now;
}

double AllocatedSince(kube::Client* admin, double before) {
  const double now = ApiServerAllocatedBytes(admin);
  return before < 0 || now < before ? -1 : now - before;
}

// The API server's CPU seconds per GiB it allocated during the run: where a side's bytes repeat
// run after run, a higher figure is a slower machine, not more work (prometheus_text.h).
double ApiServerCpuPerGib(const RunResult& r) {
  const auto plane = r.plane_cpu.find("kube-apiserver");
  return CpuSecondsPerGib(plane == r.plane_cpu.end() ? -1 : plane->second, r.apiserver_alloc);
}

std::string Gib(double bytes) {
  return FormatSpread(SpreadOf({bytes < 0 ? -1 : bytes / kBytesPerGib}), 1);
}

// Each run has a namespace of its own (side, process, round), so the audit log tells them apart
// (bench/audit_writes.py).
std::string RunNamespace(const std::string& impl, int round) {
  return "scale-" + impl + "-" + std::to_string(getpid()) + "-" + std::to_string(round + 1);
}

RunResult RunOperator(const Args& a, const std::string& impl, int round, kube::Client* admin,
                      const Clock* clock) {
  std::string ns = RunNamespace(impl, round);
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.pods_per_job();
  auto watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  PodWatch watch(watch_client.get(), ns);
  // MPIJobs: the CRD as this side serves it, and the jobs watched in its storage version.
  if (a.mpi()) InstallCrd(admin, MpiCrdFor(impl));
  std::unique_ptr<JobConditionWatch> job_watch;
  if (a.mpi())
    job_watch = std::make_unique<JobConditionWatch>(
        watch_client.get(), impl == "mpi-operator" ? kMpiJobsV2 : kMpiJobsV1, ns);

  // Requests are counted from the operator's start (its initial lists included); the clock
  // starts once it is ready.
  const std::string audit_log = Env("TRAINCTL_BENCH_AUDIT_LOG");
  const uint64_t audit_from = bench::AuditLogSize(audit_log);
  const std::string& binary = impl == "upstream"       ? a.upstream
                              : impl == "mpi-operator" ? a.mpi_operator
                              : impl == "baseline"     ? a.baseline
                                                       : a.trainctl;
  OperatorFlags flags{impl, binary, ns, a.qps, a.burst, a.threads, {}};
  // trainctl reconciles MPIJobs alone, as mpi-operator does, and serves the CRD's conversion
  // webhook (its certificate in trainctl-bench; the validating configuration matches nothing).
  if (a.mpi() && impl != "mpi-operator")
    flags.extra = {"--enable-scheme",
                   "mpijob",
                   "--webhook-server-port",
                   std::to_string(kConversionPort),
                   "--webhook-bind-host",
                   "127.0.0.1",
                   "--webhook-host",
                   "127.0.0.1",
                   "--webhook-config-name",
                   "trainctl-bench-validator",
                   "--leader-election-namespace",
                   "trainctl-bench"};
  Operator op = StartOperator(flags);
  WaitReady(op, admin);
  if (a.mpi())
    std::fprintf(stderr, "v2beta1 MPIJobs creatable after %.1f s more\n",
                 WaitV2Creatable(admin, "trainctl-bench"));

  const std::map<std::string, double> plane_before = ControlPlaneCpu();
  const double alloc_before = ApiServerAllocatedBytes(admin);
  auto start = Steady::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> submitters;
  for (int w = 0; w < 8; ++w)
    submitters.emplace_back([&] {
      for (int i; (i = next++) < a.jobs;) {
        const std::string name = "job-" + std::to_string(i);
        if (!(a.mpi()
                  ? admin->Create(kMpiJobsV2, ns, MpiJobV2Doc(name, ns, a.workers, a.run_seconds))
                  : admin->Create(kPyTorchJobs, ns, JobDoc(name, ns, Shape(a))))
                 .ok())
          ++failed;
      }
    });
  for (auto& t : submitters) t.join();
  if (failed) std::fprintf(stderr, "%s: %d job creates failed\n", impl.c_str(), failed.load());

  std::function<bool()> jobs_done = [&] {
    return JobsWithCondition(admin, ns, "Succeeded") >= a.jobs;
  };
  std::function<bool()> jobs_running;
  if (a.mpi()) {
    jobs_done = [&] { return job_watch->counts().succeeded >= static_cast<size_t>(a.jobs); };
    jobs_running = [&] { return job_watch->counts().running >= static_cast<size_t>(a.jobs); };
  }
  RunResult r;
  r.impl = impl;
  r.t = WaitPods(watch, expected, static_cast<size_t>(a.jobs) * a.ending_per_job(), start, 3600,
                 jobs_done, jobs_running);
  r.lags = LagsOf(watch, start);
  r.plane_cpu = CpuSince(plane_before);
  r.apiserver_alloc = AllocatedSince(admin, alloc_before);
  std::this_thread::sleep_for(std::chrono::seconds(a.settle_seconds));
  ProcessFigures figures = StopOperator(op);
  r.rss_mib = figures.peak_rss_mib;
  r.cpu = figures.cpu_seconds;
  r.cpu_by_thread = figures.cpu_by_thread;
  r.history_shared_cpu = figures.history_shared_cpu;
  r.reconciles = figures.reconciles;
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the audit log's last lines
  r.api = bench::CountAudit(audit_log, audit_from, Env("TRAINCTL_BENCH_AUDIT_USER"));
  DeleteNamespace(admin, ns);
  return r;
}

RunResult RunFloor(const Args& a, int round, kube::Client* admin, const Clock* clock) {
  std::string ns = RunNamespace("floor", round);
  CreateNamespace(admin, ns);
  size_t expected = static_cast<size_t>(a.jobs) * a.pods_per_job();
  auto watch_client = MakeClient(clock, AdminKubeconfig(), -1, 0);
  PodWatch watch(watch_client.get(), ns);
  auto client = MakeClient(clock, OperatorKubeconfig(), a.qps, a.burst);

  // Every object built beforehand by the operator's own builder: the floor has no logic.
  std::vector<std::pair<const kube::Resource*, json>> objects;
  for (int i = 0; a.mpi() && i < a.jobs; ++i) {
    auto made =
        MpiV2FloorObjects(MpiJobV2Doc("job-" + std::to_string(i), ns, a.workers, a.run_seconds));
    if (!made.ok()) Die(made.status().message());
    for (auto& object : *made) objects.push_back(std::move(object));
  }
  for (int i = 0; !a.mpi() && i < a.jobs; ++i) {
    json doc = JobDoc("job-" + std::to_string(i), ns, Shape(a));
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

  const std::map<std::string, double> plane_before = ControlPlaneCpu();
  const double alloc_before = ApiServerAllocatedBytes(admin);
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
  r.t = WaitPods(watch, expected, static_cast<size_t>(a.jobs) * a.ending_per_job(), start, 3600);
  r.lags = LagsOf(watch, start);
  r.plane_cpu = CpuSince(plane_before);
  r.apiserver_alloc = AllocatedSince(admin, alloc_before);
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

const RunResult* FloorOf(const std::vector<RunResult>& runs, const RunResult& run) {
  for (const RunResult& r : runs)
    if (r.impl == "floor" && r.round == run.round) return &r;
  return nullptr;
}

// mpijob-v2: the pods' times, when every job was Running, and writes per job, each operator
// against the floor of its round (its pods all Running: the floor has no job to be Running).
void PrintMpiTable(const Args& a, const std::vector<RunResult>& runs) {
  std::printf(
      "\n%d MPIJobs (v2beta1) × (1 launcher + %d workers), QPS %s, burst %d, %d threads, "
      "launchers run %d s\n\n",
      a.jobs, a.workers, Number(a.qps).c_str(), a.burst, a.threads, a.run_seconds);
  std::printf(
      "| run | all pods created | all pods Running | vs floor | all jobs Running | vs floor | "
      "all launchers Succeeded | all jobs Succeeded | peak RSS | CPU s | API requests | "
      "API writes (per job) | job status writes (per job) | 409s |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : runs) {
    const bool op = r.impl != "floor";
    const RunResult* floor = FloorOf(runs, r);
    const double floor_running = floor ? floor->t.all_running : -1;
    char rss[32] = "—", cpu[32] = "—", status[64] = "—", writes[64];
    if (op) {
      std::snprintf(rss, sizeof rss, "%.1f MiB", r.rss_mib);
      std::snprintf(cpu, sizeof cpu, "%.1f", r.cpu);
      std::snprintf(status, sizeof status, "%ld (%.2f)", r.api.job_status_writes,
                    static_cast<double>(r.api.job_status_writes) / a.jobs);
    }
    std::snprintf(writes, sizeof writes, "%ld (%.2f)", r.api.writes,
                  static_cast<double>(r.api.writes) / a.jobs);
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %ld | %s | %s | %ld |\n",
                r.impl.c_str(), Seconds(r.t.all_created).c_str(), Seconds(r.t.all_running).c_str(),
                Ratio(r.t.all_running, floor_running).c_str(),
                op ? Seconds(r.t.jobs_running).c_str() : "—",
                op ? Ratio(r.t.jobs_running, floor_running).c_str() : "—",
                Seconds(r.t.all_succeeded).c_str(), op ? Seconds(r.t.jobs_succeeded).c_str() : "—",
                rss, cpu, r.api.total, writes, status, r.api.conflicts);
  }
}

void PrintTables(const Args& a, const std::vector<RunResult>& runs) {
  // Each run against the floor of its own round (--repeat).
  auto floor_of = [&](const RunResult& run) { return FloorOf(runs, run); };
  if (a.mpi()) {
    PrintMpiTable(a, runs);
  } else {
    std::printf("\n%d jobs × %d replicas, QPS %s, burst %d, %d threads, pods run %d s\n\n", a.jobs,
                a.replicas, Number(a.qps).c_str(), a.burst, a.threads, a.run_seconds);
    std::printf(
        "| run | all pods created | all Running | vs floor | all Succeeded | all jobs Succeeded | "
        "peak RSS | CPU s | reconciles | API requests | job status writes (per job) | 409s |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const RunResult& r : runs) {
      bool op = r.impl != "floor";
      char rss[32] = "—", cpu[32] = "—", writes[64] = "—", reconciles[32] = "—";
      if (op) {
        std::snprintf(rss, sizeof rss, "%.1f MiB", r.rss_mib);
        std::snprintf(cpu, sizeof cpu, "%.1f", r.cpu);
        if (r.reconciles >= 0) std::snprintf(reconciles, sizeof reconciles, "%.0f", r.reconciles);
        std::snprintf(writes, sizeof writes, "%ld (%.2f)", r.api.job_status_writes,
                      static_cast<double>(r.api.job_status_writes) / a.jobs);
      }
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %ld | %s | %ld |\n",
                  r.impl.c_str(), Seconds(r.t.all_created).c_str(),
                  Seconds(r.t.all_running).c_str(),
                  floor_of(r) ? Ratio(r.t.all_running, floor_of(r)->t.all_running).c_str() : "—",
                  Seconds(r.t.all_succeeded).c_str(), Seconds(r.t.jobs_succeeded).c_str(), rss, cpu,
                  reconciles, r.api.total, writes, r.api.conflicts);
    }
  }
  // Between "all pods created" and "all Running": the scheduler's binding or the node's start,
  // and what the control plane spent meanwhile.
  std::printf(
      "\nWhere the pods waited (seen by the benchmark's watch) and the control plane's CPU seconds "
      "until all jobs Succeeded\n\n"
      "| run | all bound | created → bound p50 / p99 / max | bound → Running p50 / p99 / max | "
      "kube-apiserver | its GiB allocated | its CPU s per GiB | etcd | kube-scheduler | kwok | "
      "kube-controller-manager | speed probe before | wake round trip before |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const RunResult& r : runs) {
    auto cpu = [&](const char* program) {
      auto it = r.plane_cpu.find(program);
      char buf[32] = "—";
      if (it != r.plane_cpu.end()) std::snprintf(buf, sizeof buf, "%.1f", it->second);
      return std::string(buf);
    };
    auto three = [](double a, double b, double c) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2f / %.2f / %.2f s", a, b, c);
      return std::string(buf);
    };
    const StageLags& l = r.lags;
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.impl.c_str(),
        Seconds(l.all_bound).c_str(), three(l.bind_p50, l.bind_p99, l.bind_max).c_str(),
        three(l.start_p50, l.start_p99, l.start_max).c_str(), cpu("kube-apiserver").c_str(),
        Gib(r.apiserver_alloc).c_str(), FormatSpread(SpreadOf({ApiServerCpuPerGib(r)}), 2).c_str(),
        cpu("etcd").c_str(), cpu("kube-scheduler").c_str(), cpu("kwok").c_str(),
        cpu("kube-controller-manager").c_str(),
        FormatSpread(SpreadOf({r.probe_s}), 3, " s").c_str(),
        FormatSpread(SpreadOf({r.wake_us}), 1, " µs").c_str());
  }
  // CPU by thread name, where an operator names its threads (trainctl's history: "hist-").
  bool named = false;
  for (const RunResult& r : runs)
    for (const auto& [name, cpu] : r.cpu_by_thread) named |= name.rfind("hist-", 0) == 0;
  if (named) {
    std::printf(
        "\nCPU seconds by thread name (at stop; other threads carry the program's name)\n\n");
    for (const RunResult& r : runs) {
      if (r.cpu_by_thread.empty()) continue;
      std::printf("- %s:", r.impl.c_str());
      double history = 0;
      for (const auto& [name, cpu] : r.cpu_by_thread) {
        std::printf(" %s %.2f;", name.c_str(), cpu);
        if (name.rfind("hist-", 0) == 0) history += cpu;
      }
      if (r.history_shared_cpu >= 0) {
        // The history's part of the controller's and the event recorder's work (/metrics).
        history += r.history_shared_cpu;
        std::printf(" history on shared threads %.2f;", r.history_shared_cpu);
      }
      std::printf(" history in all %.2f s = %.1f %% of %.2f s\n", history,
                  r.cpu > 0 ? 100 * history / r.cpu : 0.0, r.cpu);
    }
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

// Per side, the median and range of every column over its --repeat runs; "vs floor" pairs each
// run with the floor of its own round.
void PrintMedians(const Args& a, const std::vector<RunResult>& runs) {
  std::vector<double> floor_running(a.repeat, -1);
  for (const RunResult& r : runs)
    if (r.impl == "floor") floor_running[r.round] = r.t.all_running;
  std::printf(
      "\nMedians of %d alternated runs per side (lowest–highest in brackets)\n\n"
      "| side | all pods created | all bound | all Running | vs floor (paired by round) | all jobs "
      "Succeeded | peak RSS | CPU s | API requests | job status writes per job | events created | "
      "kube-apiserver CPU s | its CPU s per GiB allocated | speed probe before | wake round trip "
      "before |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      a.repeat);
  for (const std::string& impl : a.impls) {
    std::vector<double> created, bound, running, paired, jobs, rss, cpu, requests, writes, events,
        apiserver, per_gib, probe, wake;
    std::vector<double> side_running(a.repeat, -1);
    for (const RunResult& r : runs) {
      if (r.impl != impl) continue;
      created.push_back(r.t.all_created);
      bound.push_back(r.lags.all_bound);
      running.push_back(r.t.all_running);
      auto plane = r.plane_cpu.find("kube-apiserver");
      apiserver.push_back(plane == r.plane_cpu.end() ? -1 : plane->second);
      per_gib.push_back(ApiServerCpuPerGib(r));
      side_running[r.round] = r.t.all_running;
      probe.push_back(r.probe_s);
      wake.push_back(r.wake_us);
      jobs.push_back(r.t.jobs_succeeded);
      rss.push_back(r.rss_mib);
      cpu.push_back(r.cpu);
      if (impl == "floor") continue;
      requests.push_back(static_cast<double>(r.api.total));
      writes.push_back(static_cast<double>(r.api.job_status_writes) / a.jobs);
      auto it = r.api.by_request.find("create events");
      events.push_back(it == r.api.by_request.end() ? 0.0 : static_cast<double>(it->second));
    }
    paired = PairedRatios(side_running, floor_running);
    std::printf(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        impl.c_str(), FormatSpread(SpreadOf(created), 1, " s").c_str(),
        FormatSpread(SpreadOf(bound), 1, " s").c_str(),
        FormatSpread(SpreadOf(running), 1, " s").c_str(),
        impl == "floor" ? "1.00" : FormatSpread(SpreadOf(paired), 2).c_str(),
        FormatSpread(SpreadOf(jobs), 1, " s").c_str(),
        FormatSpread(SpreadOf(rss), 1, " MiB").c_str(), FormatSpread(SpreadOf(cpu), 1).c_str(),
        FormatSpread(SpreadOf(requests), 0).c_str(), FormatSpread(SpreadOf(writes), 2).c_str(),
        FormatSpread(SpreadOf(events), 0).c_str(), FormatSpread(SpreadOf(apiserver), 1).c_str(),
        FormatSpread(SpreadOf(per_gib), 2).c_str(), FormatSpread(SpreadOf(probe), 3, " s").c_str(),
        FormatSpread(SpreadOf(wake), 1, " µs").c_str());
  }
  if (a.mpi()) {
    std::printf(
        "\n| side | all jobs Running | vs floor's pods Running (paired by round) | API writes per "
        "job |\n|---|---|---|---|\n");
    for (const std::string& impl : a.impls) {
      std::vector<double> jobs_running, writes, side(a.repeat, -1);
      for (const RunResult& r : runs) {
        if (r.impl != impl) continue;
        jobs_running.push_back(r.t.jobs_running);
        side[r.round] = r.t.jobs_running;
        writes.push_back(static_cast<double>(r.api.writes) / a.jobs);
      }
      const bool floor = impl == "floor";
      std::printf(
          "| %s | %s | %s | %s |\n", impl.c_str(),
          floor ? "—" : FormatSpread(SpreadOf(jobs_running), 1, " s").c_str(),
          floor ? "—" : FormatSpread(SpreadOf(PairedRatios(side, floor_running)), 2).c_str(),
          FormatSpread(SpreadOf(writes), 2).c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace trainctl::bench

int main(int argc, char** argv) {
  using trainctl::bench::Die;
  trainctl::bench::Args a;
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
    else if (k == "--settle-seconds")
      a.settle_seconds = std::atoi(v.c_str());
    else if (k == "--repeat")
      a.repeat = std::atoi(v.c_str());
    else if (k == "--compact-etcd")
      a.compact_etcd = std::atoi(v.c_str());
    else if (k == "--trainctl")
      a.trainctl = v;
    else if (k == "--upstream")
      a.upstream = v;
    else if (k == "--mpi-operator")
      a.mpi_operator = v;
    else if (k == "--kind")
      a.kind = v;
    else if (k == "--workers")
      a.workers = std::atoi(v.c_str());
    else if (k == "--baseline")
      a.baseline = v;
    else if (k == "--impl")
      a.impls = trainctl::bench::SplitList(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (a.kind != "pytorchjob" && a.kind != "mpijob-v2") {
    std::fprintf(stderr, "--kind: \"%s\"; expected pytorchjob or mpijob-v2\n", a.kind.c_str());
    return 2;
  }
  if (a.workers < 1) {
    std::fprintf(stderr, "--workers: %d; expected at least 1\n", a.workers);
    return 2;
  }
  for (const std::string& impl : a.impls) {
    if (impl != "trainctl" && impl != "baseline" && impl != "upstream" && impl != "floor" &&
        impl != "mpi-operator") {
      std::fprintf(stderr,
                   "--impl: unknown side \"%s\"; expected trainctl, baseline, upstream, "
                   "mpi-operator, floor\n",
                   impl.c_str());
      return 2;
    }
    // Each upstream operator serves its own kind.
    if ((impl == "upstream" && a.mpi()) || (impl == "mpi-operator" && !a.mpi())) {
      std::fprintf(stderr, "--impl %s does not serve --kind %s\n", impl.c_str(), a.kind.c_str());
      return 2;
    }
  }
  if (std::find(a.impls.begin(), a.impls.end(), "mpi-operator") != a.impls.end() &&
      access(a.mpi_operator.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "--mpi-operator: \"%s\" is not an executable (hack/upstream/build.sh "
                 "--mpi-operator)\n",
                 a.mpi_operator.c_str());
    return 2;
  }
  if (a.mpi())
    for (const char* env : {"TRAINCTL_BENCH_MPI_CRD", "TRAINCTL_BENCH_MPI_OPERATOR_CRD"})
      if (trainctl::bench::Env(env).empty()) {
        std::fprintf(stderr,
                     "--kind mpijob-v2: %s is not set; run through bench/operator_scale.sh\n", env);
        return 2;
      }
  if (std::find(a.impls.begin(), a.impls.end(), "baseline") != a.impls.end() &&
      access(a.baseline.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "--baseline: \"%s\" is not an executable (another trainctl build)\n",
                 a.baseline.c_str());
    return 2;
  }
  if (std::find(a.impls.begin(), a.impls.end(), "upstream") != a.impls.end() &&
      access(a.upstream.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "--upstream: \"%s\" is not an executable (hack/upstream/build.sh)\n",
                 a.upstream.c_str());
    return 2;
  }
  trainctl::bench::RequireBenchEnvironment();
  if (a.compact_etcd && trainctl::bench::Env("TRAINCTL_BENCH_ETCD").empty()) {
    std::fprintf(stderr,
                 "--compact-etcd: TRAINCTL_BENCH_ETCD (etcd's client URL) is not set; run through "
                 "bench/operator_scale.sh, or pass --compact-etcd 0\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  trainctl::RealClock clock;
  auto admin = trainctl::bench::MakeClient(&clock, trainctl::bench::AdminKubeconfig(), -1, 0);
  std::vector<trainctl::bench::RunResult> runs;
  for (int round = 0; round < a.repeat; ++round) {
    for (const std::string& impl : trainctl::bench::RoundOrder(a.impls, round)) {
      if (a.compact_etcd) {
        // The storage the runs before left, then every run from the same: a failure says so and
        // the run goes on (the figures are still the run's, the log says what it started from).
        trainctl::StatusOr<trainctl::bench::EtcdCompaction> compacted =
            trainctl::bench::CompactAndDefragment(trainctl::bench::Env("TRAINCTL_BENCH_ETCD"));
        if (compacted.ok())
          std::fprintf(stderr, "etcd compacted and defragmented: %s\n",
                       trainctl::bench::Describe(*compacted).c_str());
        else
          std::fprintf(stderr, "etcd not compacted: %s\n", compacted.status().message().c_str());
      }
      // How fast the machine is now (the probe's fixed work, timed), with the run's figures.
      const trainctl::bench::ProbeTiming probe = trainctl::bench::TimeProbe();
      // And how dear a wake-up across CPUs is, which the sort cannot see (wake_probe.h).
      const trainctl::StatusOr<double> wake = trainctl::bench::TimeWakeRoundTrips();
      if (!wake.ok()) std::fprintf(stderr, "%s\n", wake.status().message().c_str());
      std::fprintf(stderr, "run %d: %s\n", round + 1, impl.c_str());
      runs.push_back(impl == "floor"
                         ? trainctl::bench::RunFloor(a, round, admin.get(), &clock)
                         : trainctl::bench::RunOperator(a, impl, round, admin.get(), &clock));
      runs.back().round = round;
      runs.back().probe_s = probe.seconds;
      runs.back().wake_us = wake.ok() ? *wake : -1;
      // Each run's figures as soon as it ends: a bench stopped halfway keeps what it measured.
      const trainctl::bench::RunResult& r = runs.back();
      const auto events = r.api.by_request.find("create events");
      const auto apiserver = r.plane_cpu.find("kube-apiserver");
      std::fprintf(
          stderr,
          "run %d: %s done: all created %.1f s, all bound %.1f s, all Running %.1f s, "
          "all jobs Succeeded %.1f s, peak RSS %.1f MiB, CPU %.1f s, status writes %ld, "
          "events created %ld, kube-apiserver CPU %.1f s (%s GiB allocated, %.2f s per GiB), "
          "speed probe %.3f s, wake round trip %.1f µs\n",
          round + 1, impl.c_str(), r.t.all_created, r.lags.all_bound, r.t.all_running,
          r.t.jobs_succeeded, r.rss_mib, r.cpu, r.api.job_status_writes,
          events == r.api.by_request.end() ? 0L : events->second,
          apiserver == r.plane_cpu.end() ? -1.0 : apiserver->second,
          trainctl::bench::Gib(r.apiserver_alloc).c_str(), trainctl::bench::ApiServerCpuPerGib(r),
          r.probe_s, r.wake_us);
    }
  }
  trainctl::bench::PrintTables(a, runs);
  if (a.repeat > 1) trainctl::bench::PrintMedians(a, runs);
  return 0;
}
