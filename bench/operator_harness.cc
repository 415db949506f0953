#include "operator_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/base64.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "operator/process_stats.h"
#include "prometheus_text.h"

extern char** environ;

namespace trainctl::bench {
namespace {

using nlohmann::json;

const kube::Resource kSecrets{"", "v1", "secrets"};
constexpr int kMetricsPort = 29990, kProbePort = 29991, kWebhookPort = 29992;
// Upstream's certificate controller waits for its Secret's files here (a mounted volume in a
// pod); the benchmark copies them out of the Secret.
constexpr const char* kUpstreamCertDir = "/tmp/k8s-webhook-server/serving-certs";

// What `curl -s ARGS` prints ("" when curl cannot run).
std::string Curl(const std::string& args) {
  std::string out;
  if (FILE* f = popen(("curl -s " + args).c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    pclose(f);
  }
  return out;
}

std::string HttpCode(const std::string& url) {
  return Curl("-o /dev/null -w '%{http_code}' " + url);
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

}  // namespace

double Since(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void Die(const std::string& message) {
  std::fprintf(stderr, "bench: %s\n", message.c_str());
  std::exit(1);
}

std::string Number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::vector<std::string> SplitList(const std::string& comma_separated) {
  std::vector<std::string> out;
  std::stringstream in(comma_separated);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void RequireBenchEnvironment() {
  for (const char* env : {"TRAINCTL_CLUSTER_DIR", "TRAINCTL_BENCH_OPERATOR_KUBECONFIG",
                          "TRAINCTL_BENCH_AUDIT_LOG", "TRAINCTL_BENCH_AUDIT_USER"})
    if (Env(env).empty()) {
      std::fprintf(stderr,
                   "bench: %s is not set; run through bench/operator_scale.sh or "
                   "bench/operator_latency.sh\n",
                   env);
      std::exit(2);
    }
}

std::string AdminKubeconfig() { return Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig"; }
std::string OperatorKubeconfig() { return Env("TRAINCTL_BENCH_OPERATOR_KUBECONFIG"); }

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

json JobDoc(const std::string& name, const std::string& ns, const JobShape& shape) {
  json annotations = json::object();
  for (const auto& [k, v] : shape.pod_annotations) annotations[k] = v;
  auto spec = [&](int n) {
    json container = {{"name", "pytorch"},
                      {"image", "example.invalid/train:1"},
                      {"command", {"python3", "train.py"}}};
    json tmpl = {{"metadata", {{"annotations", annotations}}},
                 {"spec", {{"containers", json::array({container})}}}};
    return json{{"replicas", n}, {"restartPolicy", shape.restart_policy}, {"template", tmpl}};
  };
  json specs = {{"Master", spec(1)}};
  if (shape.replicas > 1) specs["Worker"] = spec(shape.replicas - 1);
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          // Pods stay after the job ends (as in the floor), so every run can see every pod finish.
          {"spec", {{"pytorchReplicaSpecs", specs}, {"runPolicy", {{"cleanPodPolicy", "None"}}}}}};
}

PodWatch::PodWatch(kube::Client* client, const std::string& ns, OnPod on_pod, OnPod on_gone)
    : on_pod_(std::move(on_pod)), store_([this](const json& o) -> std::optional<kube::PodSummary> {
        auto p = kube::ProjectPod(o, {});
        if (p) Note(*p);
        return p;
      }) {
  if (on_gone)
    store_.SetHandlers({nullptr, nullptr, [on_gone](const std::string&, const kube::PodSummary& p) {
                          on_gone(p, Steady::now());
                        }});
  kube::ReflectorOptions options;
  options.namespace_ = ns;
  reflector_ = std::make_unique<kube::Reflector>(client, kube::kPods, options, &store_);
  reflector_->Start();
  if (!reflector_->WaitForSync(Duration(120000))) Die("pod watch of " + ns + " did not sync");
}

PodWatch::~PodWatch() { reflector_->Stop(); }

void PodWatch::Note(const kube::PodSummary& p) {
  const Steady::time_point now = Steady::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    created_.insert(p.name);
    Stages& stages = stages_[p.name];
    if (stages.created == Steady::time_point{}) stages.created = now;
    if (!p.node_name.empty() && stages.bound == Steady::time_point{}) stages.bound = now;
    if (p.phase == kube::PodPhase::kRunning || p.phase == kube::PodPhase::kSucceeded) {
      running_.insert(p.name);
      if (stages.running == Steady::time_point{}) stages.running = now;
    }
    if (p.phase == kube::PodPhase::kSucceeded) succeeded_.insert(p.name);
  }
  if (on_pod_) on_pod_(p, now);
}

PodWatch::Counts PodWatch::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  return {created_.size(), running_.size(), succeeded_.size()};
}

std::map<std::string, PodWatch::Stages> PodWatch::stages() {
  std::lock_guard<std::mutex> lock(mu_);
  return stages_;
}

JobConditionWatch::JobConditionWatch(kube::Client* client, const kube::Resource& resource,
                                     const std::string& ns)
    : store_([this](const json& o) -> std::optional<Seen> {
        Seen seen;
        for (const json& c : o.value("status", json::object()).value("conditions", json::array()))
          if (c.value("status", "") == "True") {
            const std::string type = c.value("type", "");
            seen.running |= type == "Running" || type == "Succeeded";
            seen.succeeded |= type == "Succeeded";
          }
        const std::string name = o["metadata"].value("name", "");
        std::lock_guard<std::mutex> lock(mu_);
        if (seen.running) running_.insert(name);
        if (seen.succeeded) succeeded_.insert(name);
        return seen;
      }) {
  kube::ReflectorOptions options;
  options.namespace_ = ns;
  reflector_ = std::make_unique<kube::Reflector>(client, resource, options, &store_);
  reflector_->Start();
  if (!reflector_->WaitForSync(Duration(120000))) Die("job watch of " + ns + " did not sync");
}

JobConditionWatch::~JobConditionWatch() { reflector_->Stop(); }

JobConditionWatch::Counts JobConditionWatch::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  return {running_.size(), succeeded_.size()};
}

std::map<std::string, double> ControlPlaneCpu() {
  std::map<std::string, double> cpu;
  const std::string cluster = Env("TRAINCTL_CLUSTER_DIR");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(cluster) == std::string::npos) continue;
    std::string program = cmdline.substr(0, cmdline.find('\0'));
    program = program.substr(program.rfind('/') + 1);
    for (const char* known :
         {"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok"})
      if (program == known) cpu[program] += op::CpuSeconds(pid);
  }
  return cpu;
}

double ApiServerAllocatedBytes(kube::Client* admin) {
  StatusOr<std::string> metrics = admin->GetRaw("/metrics");
  return metrics.ok() ? CounterSum(*metrics, kGoAllocatedBytes) : -1;
}

void CreateNamespace(kube::Client* admin, const std::string& ns) {
  if (!admin->Create(kube::kNamespaces, "", {{"metadata", {{"name", ns}}}}).ok())
    Die("cannot create namespace " + ns);
}

void DeleteNamespace(kube::Client* admin, const std::string& ns) {
  (void)admin->Delete(kube::kNamespaces, "", ns);
  auto start = Steady::now();
  while (Since(start) < 900 &&
         admin->Get(kube::kNamespaces, "", ns).status().code() != StatusCode::kNotFound)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  std::fprintf(stderr, "namespace %s removed after %.0f s\n", ns.c_str(), Since(start));
}

namespace {

// mpi-operator's spelling of the same flags.
std::vector<std::string> MpiOperatorArgs(const OperatorFlags& flags) {
  if (flags.qps != static_cast<int>(flags.qps))
    Die("mpi-operator takes a whole --kube-api-qps, not " + Number(flags.qps));
  return {flags.binary,
          "--kubeConfig",
          OperatorKubeconfig(),
          "--namespace",
          flags.namespace_,
          "--kube-api-qps",
          std::to_string(static_cast<int>(flags.qps)),
          "--kube-api-burst",
          std::to_string(flags.burst),
          "--threadiness",
          std::to_string(flags.threads),
          "--monitoring-port",
          std::to_string(kMetricsPort),
          "--lock-namespace",
          "trainctl-bench"};
}

}  // namespace

Operator StartOperator(const OperatorFlags& flags) {
  std::vector<std::string> argv_s = {flags.binary};
  if (flags.impl != "upstream") argv_s.push_back("operator");
  if (flags.impl == "mpi-operator") argv_s = MpiOperatorArgs(flags);
  const std::string common[] = {"--kubeconfig",
                                OperatorKubeconfig(),
                                "--namespace",
                                flags.namespace_,
                                "--kube-api-qps",
                                Number(flags.qps),
                                "--kube-api-burst",
                                std::to_string(flags.burst),
                                "--controller-threads",
                                std::to_string(flags.threads),
                                "--metrics-bind-address",
                                "127.0.0.1:" + std::to_string(kMetricsPort),
                                "--health-probe-bind-address",
                                "127.0.0.1:" + std::to_string(kProbePort)};
  if (flags.impl != "mpi-operator")
    argv_s.insert(argv_s.end(), std::begin(common), std::end(common));
  argv_s.insert(argv_s.end(), flags.extra.begin(), flags.extra.end());
  if (flags.impl == "upstream")
    argv_s.insert(argv_s.end(), {"--webhook-server-port", std::to_string(kWebhookPort)});
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  Operator op;
  op.impl = flags.impl;
  op.log = Env("TRAINCTL_CLUSTER_DIR") + "/scale-" + flags.impl + ".log";
  posix_spawn_file_actions_addopen(&actions, 1, op.log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // mpi-operator takes KUBECONFIG over --kubeConfig: the audited identity's, for every side.
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("KUBECONFIG=", 0) != 0) env_s.push_back(*e);
  env_s.push_back("KUBECONFIG=" + OperatorKubeconfig());
  std::vector<char*> env;
  for (auto& s : env_s) env.push_back(s.data());
  env.push_back(nullptr);
  if (posix_spawn(&op.pid, argv[0], &actions, nullptr, argv.data(), env.data()) != 0)
    Die("cannot start " + argv_s[0]);
  posix_spawn_file_actions_destroy(&actions);
  return op;
}

int JobsWithCondition(kube::Client* admin, const std::string& ns, const std::string& type,
                      const kube::Resource& resource) {
  auto list = admin->ListAll(resource, ns, {});
  if (!list.ok()) return -1;
  int n = 0;
  for (const json& j : (*list)["items"])
    for (const json& c : j.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type && c.value("status", "") == "True") ++n;
  return n;
}

double WaitReady(const Operator& op, kube::Client* admin, double limit_seconds) {
  auto start = Steady::now();
  bool certs = op.impl != "upstream";
  // The log is appended to across restarts: only lines after this offset count.
  std::ifstream before(op.log, std::ios::ate);
  const std::streamoff from = before ? static_cast<std::streamoff>(before.tellg()) : 0;
  while (Since(start) < limit_seconds) {
    int status = 0;
    if (waitpid(op.pid, &status, WNOHANG) == op.pid) Die(op.impl + " exited; see " + op.log);
    if (!certs) certs = CopyUpstreamCerts(admin);
    const bool mpi = op.impl == "mpi-operator";
    bool ready =
        mpi || HttpCode("http://127.0.0.1:" + std::to_string(kProbePort) + "/readyz") == "200";
    if (ready && (op.impl == "upstream" || mpi)) {
      std::ifstream in(op.log);
      in.seekg(from);
      std::string line;
      ready = false;
      while (!ready && std::getline(in, line))
        ready = mpi ? line.find("Started workers") != std::string::npos
                    : line.find("Starting workers") != std::string::npos &&
                          line.find("pytorchjob-controller") != std::string::npos;
    }
    if (ready) {
      double waited = Since(start);
      std::fprintf(stderr, "%s ready after %.1f s\n", op.impl.c_str(), waited);
      return waited;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(op.pid, SIGKILL);
  waitpid(op.pid, nullptr, 0);
  Die(op.impl + " not ready after " + Number(limit_seconds) + " s; see " + op.log);
}

namespace {

std::string Metrics() {
  return Curl("http://127.0.0.1:" + std::to_string(kMetricsPort) + "/metrics");
}

}  // namespace

ProcessFigures StopOperator(const Operator& op) {
  const std::string pid = std::to_string(op.pid);
  ProcessFigures f;
  const std::string metrics = Metrics();
  f.reconciles = CounterSum(metrics, "controller_runtime_reconcile_total");
  f.history_shared_cpu = CounterSum(metrics, "trainctl_history_shared_cpu_seconds_total");
  f.peak_rss_mib = op::ProcStatusBytes("VmHWM", pid) / 1048576.0;
  f.cpu_seconds = op::CpuSeconds(pid);
  f.cpu_by_thread = op::CpuSecondsByThreadName(pid);
  kill(op.pid, SIGTERM);
  waitpid(op.pid, nullptr, 0);
  return f;
}

void KillOperator(const Operator& op) {
  kill(op.pid, SIGKILL);
  waitpid(op.pid, nullptr, 0);
}

}  // namespace trainctl::bench
