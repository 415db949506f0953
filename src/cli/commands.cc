#include "cli/commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "api/checkpoint_notice.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/backend.h"
#include "cli/cluster_commands.h"
#include "cli/detach.h"
#include "cli/exit_status.h"
#include "cli/format.h"
#include "cli/history_commands.h"
#include "cli/job_commands.h"
#include "cli/local_backend.h"
#include "cli/progress.h"
#include "jobs/history_capture.h"
#include "jobs/local_source.h"
#include "local/cgroups.h"
#include "local/containers.h"
#include "local/dry_run.h"
#include "local/gpu_inventory.h"
#include "local/job_view.h"
#include "local/mpi_local.h"
#include "local/prepare_run.h"
#include "local/replica_limits.h"
#include "local/runner.h"
#include "local/runtime_probe.h"
#include "local/runtimes.h"
#include "local/state_store.h"
#include "local/volumes.h"

extern char** environ;

namespace trainctl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// This process's environment, as "NAME=value" entries.
std::vector<std::string> CurrentEnv() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string EnvBackend() {
  const char* v = std::getenv("TRAINCTL_BACKEND");
  return v ? v : "";
}

// -1: the local backend; else the exit status of an error (printed).
int ClusterOrError(const GlobalOptions& g, bool* cluster) {
  StatusOr<bool> use = UseCluster(g, EnvBackend());
  if (!use.ok()) return Fail(use.status().message(), 2);
  *cluster = *use;
  return -1;
}

// The local source (it only reads).
jobs::LocalJobSource SourceFor(const GlobalOptions& g, const Clock& clock) {
  return jobs::LocalJobSource(StateRoot(g), NamespaceFilter(g), clock);
}

// Records the run's job in the history when it ends (before a passed TTL removes it).
void RecordWhenFinished(local::RunOptions* run) {
  std::string root = run->state_root;
  run->on_finished = [root](const local::JobDir& dir) {
    std::unique_ptr<history::HistoryStore> store = OpenLocalHistory(root);
    CaptureInto(store.get(), root, dir.key());
  };
}

// Resolves [KIND] NAME to one stored job.
StatusOr<local::JobKey> FindJob(const GlobalOptions& g, const std::vector<std::string>& args) {
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return ref.status();
  RealClock clock;
  return SourceFor(g, clock).Find(*ref);
}

// `run --detach`: set-up in a background process that reports back, then return.
int RunInBackground(api::Job job, local::RunOptions run, const std::string& source) {
  std::string kind = api::ToLower(job.info().name), name = job.name;
  std::string ns = job.namespace_;
  StatusOr<int> pid = RunDetached([&](SetupReporter& reporter) {
    run.on_setup = [&reporter](const Status& st, const local::JobDir& dir) {
      reporter.Report(st, dir.path() + "/runner.log");
    };
    RealClock clock;
    StatusOr<local::RunResult> result = local::RunJob(std::move(job), run, clock, nullptr);
    if (!result.ok()) {
      reporter.Report(result.status(), "");
      return ExitFor(result.status());
    }
    if (result->interrupted_by) return 128 + result->interrupted_by;
    return result->succeeded ? 0 : 1;
  });
  if (!pid.ok()) return Fail(source + ": " + pid.status().message(), ExitFor(pid.status()));
  std::cout << kind << ".kubeflow.org/" << name << " started in namespace " << ns << " (runner pid "
            << *pid << " in the background); follow it with: trainctl logs -f " << name << "\n";
  return 0;
}

}  // namespace

int Fail(const std::string& message, int code) {
  std::cerr << "error: " << message << "\n";
  return code;
}

std::string StateRoot(const GlobalOptions& g) {
  return g.state_dir.empty() ? local::DefaultStateRoot() : g.state_dir;
}

std::optional<std::string> NamespaceFilter(const GlobalOptions& g) {
  if (g.all_namespaces) return std::nullopt;
  return g.namespace_.empty() ? "default" : g.namespace_;
}

StatusOr<bool> UseCluster(const GlobalOptions& global, const std::string& env_backend) {
  std::string backend = !global.backend.empty() ? global.backend : env_backend;
  if (backend == "kubernetes") return true;
  if (backend == "local") return !global.backend.empty() ? false : !global.kubeconfig.empty();
  if (backend.empty()) return !global.kubeconfig.empty();
  return InvalidError((!global.backend.empty() ? "--backend" : "$TRAINCTL_BACKEND") +
                      std::string(": unknown backend \"") + backend + "\" (local or kubernetes)");
}

std::optional<long long> ParseDurationMs(const std::string& text) {
  if (text.empty()) return std::nullopt;
  long long total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (start == i || i == text.size()) return std::nullopt;
    std::string number = text.substr(start, i - start);
    if (std::count(number.begin(), number.end(), '.') > 1 || number == ".") return std::nullopt;
    double value = std::stod(number);
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    double ms = unit == "ms"  ? 1
                : unit == "s" ? 1000
                : unit == "m" ? 60000
                : unit == "h" ? 3600000
                              : -1;
    if (ms < 0) return std::nullopt;
    total += static_cast<long long>(value * ms);
  }
  return total;
}

int RunCommand(const GlobalOptions& global, const RunCommandOptions& options) {
  bool cluster = false;
  if (int code = ClusterOrError(global, &cluster); code >= 0) return code;
  if (cluster)
    return Fail(
        "run executes a job on this machine; for a cluster, create it with kubectl apply -f " +
            options.file +
            " (the operator runs it) and follow it with trainctl --backend "
            "kubernetes logs -f NAME",
        2);
  bool from_stdin = options.file == "-";
  std::string source = from_stdin ? "<stdin>" : options.file;
  api::ManifestExtras extras;
  StatusOr<api::RuntimeCatalog> runtimes =
      local::LocalRuntimes(StateRoot(global), options.runtimes);
  if (!runtimes.ok()) return Fail(runtimes.status().message(), 2);
  extras.runtimes = std::move(runtimes).value();
  StatusOr<std::vector<api::LoadedJob>> loaded =
      from_stdin ? api::LoadJobsFromStream(std::cin, source, &extras)
                 : api::LoadJobsFromFile(options.file, &extras);
  if (!loaded.ok()) return Fail(loaded.status().message(), 2);
  for (const std::string& note : extras.notes) std::cerr << "note: " << note << "\n";
  const api::LoadedJob* chosen = nullptr;
  if (!options.job_name.empty()) {
    for (const api::LoadedJob& j : *loaded)
      if (j.job.name == options.job_name) chosen = &j;
    if (!chosen) return Fail(source + ": no job named \"" + options.job_name + "\"", 2);
  } else if (loaded->size() > 1) {
    std::string names;
    for (const api::LoadedJob& j : *loaded) names += " " + j.job.name;
    return Fail(source + " holds " + std::to_string(loaded->size()) +
                    " jobs; pick one with --job NAME:" + names,
                2);
  } else {
    chosen = &(*loaded)[0];
  }
  for (const std::string& w : chosen->warnings) std::cerr << "warning: " << w << "\n";

  bool json_out = options.output == "json";
  std::FILE* progress_stream = json_out ? stderr : stdout;
  RealClock clock;
  Time started = clock.Now();
  ProgressPrinter progress(progress_stream, isatty(fileno(progress_stream)) != 0, !options.quiet,
                           started);
  api::Job job = chosen->job;
  local::RunFlags flags;
  flags.manifest = options.file;
  flags.source = source;
  flags.workdir = options.workdir;
  flags.cwd = fs::current_path().string();
  flags.state_root = StateRoot(global);
  flags.env = CurrentEnv();
  flags.supervisor = "/proc/self/exe";  // main() serves `__supervise`
  flags.replace = options.replace;
  flags.grace_seconds = options.grace_seconds;
  flags.drain_seconds = options.drain_seconds;
  flags.gpu_share = options.gpu_share;
  flags.runtime = options.runtime;
  flags.config = {options.config_maps, options.secrets, options.volumes, options.env_files};
  StatusOr<local::PreparedRun> prepared = local::PrepareRun(job, flags);
  if (!prepared.ok()) return Fail(prepared.status().message(), 2);
  for (const std::string& note : prepared->notes) std::cerr << "note: " << note << "\n";
  local::RunOptions run = std::move(prepared->options);
  if (options.dry_run) {
    StatusOr<json> plan = local::PlanDryRun(job, run);
    if (!plan.ok()) return Fail(source + ": " + plan.status().message(), ExitFor(plan.status()));
    if (json_out)
      std::cout << plan->dump(2) << std::endl;
    else
      std::cout << FormatDryRun(*plan, source);
    return 0;
  }
  if (Status st = local::PreflightCheck(job, run); !st.ok())
    return Fail(source + ": " + st.message(), ExitFor(st));
  // A claim in the file is made now, as applying it would create it on a cluster.
  StatusOr<std::vector<std::string>> claims =
      local::MakeClaimFolders(run.state_root, extras.claims);
  if (!claims.ok()) return Fail(source + ": " + claims.status().message(), 1);
  for (const std::string& note : *claims) std::cerr << "note: " << note << "\n";
  RecordWhenFinished(&run);
  if (options.detach) return RunInBackground(std::move(job), run, source);
  int total = job.TotalReplicas();
  std::fprintf(progress_stream, "Running %s %s/%s (%d replica%s) from %s\n", job.info().name,
               job.namespace_.c_str(), job.name.c_str(), total, total == 1 ? "" : "s",
               source.c_str());
  local::JobDir dir(run.state_root, {job.kind, job.namespace_, job.name});
  StatusOr<local::RunResult> result = local::RunJob(std::move(job), run, clock, &progress);
  progress.Finish();
  if (!result.ok())
    return Fail(source + ": " + result.status().message(), ExitFor(result.status()));
  std::fprintf(
      progress_stream, "%s\n",
      FormatFinalLine(result->job, std::chrono::duration_cast<Duration>(clock.Now() - started))
          .c_str());
  if (dir.Exists()) std::fprintf(progress_stream, "Logs: %s\n", dir.LogDir().c_str());
  std::fflush(progress_stream);
  if (json_out) std::cout << result->job.dump(2) << std::endl;
  if (result->interrupted_by) return 128 + result->interrupted_by;
  return result->succeeded ? 0 : 1;
}

int LocalBackend::Get(const std::vector<std::string>& args, const std::string& output) {
  RealClock clock;
  // The sweep first, explicitly: a job whose TTL has passed is gone from the list (and kept in
  // the history), a lost runner recorded. The list itself only reads.
  SweepLocal(StateRoot(global_), NamespaceFilter(global_));
  jobs::LocalJobSource source = SourceFor(global_, clock);
  return GetJobs(source, args, output, global_.all_namespaces);
}

int LocalBackend::Describe(const std::vector<std::string>& args, const std::string& output) {
  RealClock clock;
  jobs::LocalJobSource source = SourceFor(global_, clock);
  return DescribeJob(source, args, output);
}

int LocalBackend::Logs(const std::vector<std::string>& args, const std::string& replica,
                       bool follow) {
  RealClock clock;
  jobs::LocalJobSource source = SourceFor(global_, clock);
  return JobLogs(source, args, replica, follow);
}

int LocalBackend::Metrics(const std::vector<std::string>& args, const std::string& output,
                          const std::string& replica) {
  RealClock clock;
  jobs::LocalJobSource source = SourceFor(global_, clock);
  return JobMetrics(source, args, output, replica);
}

int LocalBackend::Patch(const std::vector<std::string>& args, const std::string& patch) {
  const GlobalOptions& global = global_;
  StatusOr<local::JobKey> key = FindJob(global, args);
  if (!key.ok()) return Fail(key.status().message(), ExitFor(key.status()));
  json body = api::ParseJsonWithin(patch, api::JsonLimits{});
  if (body.is_discarded()) return Fail("-p: not valid JSON", 2);
  local::JobDir dir(StateRoot(global), *key);
  StatusOr<json> current = dir.ReadMetadataPatch();
  if (!current.ok()) return Fail(current.status().message(), 1);
  StatusOr<json> merged = local::MergeMetadataPatch(*current, body);
  if (!merged.ok()) return Fail(merged.status().message(), 2);
  if (Status st = dir.WriteMetadataPatch(*merged); !st.ok()) return Fail(st.message(), 1);
  std::cout << jobs::ResourceName(key->kind) << "/" << key->name << " patched\n";
  return 0;
}

int LocalBackend::Delete(const std::vector<std::string>& args, bool delete_workspace) {
  const GlobalOptions& global = global_;
  StatusOr<local::JobKey> key = FindJob(global, args);
  if (!key.ok()) return Fail(key.status().message(), ExitFor(key.status()));
  local::JobDir dir(StateRoot(global), *key);
  int pid = 0;
  if (dir.RunnerActive(&pid) && pid > 0) {
    // A job with a checkpoint notice gives its replicas that long before they are stopped.
    int notice_seconds = 0;
    if (StatusOr<json> stored = dir.ReadJob(); stored.ok())
      if (StatusOr<api::Job> job = api::DecodeJob(*stored); job.ok())
        if (std::optional<api::NoticePolicy> notice = api::NoticePolicyOf(*job)) {
          notice_seconds = notice->seconds;
          std::cout << "telling every replica to checkpoint: they stop within " << notice_seconds
                    << " s, sooner once every one reports done\n";
        }
    kill(pid, SIGTERM);
    for (int i = 0; i < 600 + 10 * notice_seconds && dir.RunnerActive(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (dir.RunnerActive())
      return Fail("the runner (pid " + std::to_string(pid) + ") did not stop", 1);
  }
  // Containers a runner that is gone left running (its supervisors killed too): removed by the
  // job's label, with the runtime its run used.
  if (std::string runtime = dir.ReadRuntime(); !runtime.empty()) {
    std::vector<std::string> env = CurrentEnv();
    StatusOr<local::RuntimeKind> kind = local::ChooseRuntime(runtime, api::Job(), env);
    StatusOr<local::RuntimeHost> host =
        kind.ok() ? local::ProbeRuntime(*kind, env, false) : kind.status();
    if (!host.ok()) {
      std::cerr << "warning: cannot look for the job's leftover containers: "
                << host.status().message() << "\n";
    } else {
      std::vector<std::string> removed = local::RemoveLeftoverContainers(
          *host, env, local::ContainerJobLabel(key->kind, key->namespace_, key->name));
      for (const std::string& name : removed) std::cout << "container " << name << " removed\n";
    }
  }
  std::vector<api::ClaimRef> claims;
  if (delete_workspace) {
    StatusOr<json> stored = dir.ReadJob();
    StatusOr<api::Job> job =
        stored.ok() ? api::DecodeJob(*stored) : StatusOr<api::Job>(stored.status());
    if (!job.ok()) return Fail("--delete-workspace: " + job.status().message(), 1);
    claims = api::JobClaims(*job);
  }
  // Kept in the history (the runner records a job it ran to the end; this covers the rest).
  if (StatusOr<json> stored = dir.ReadJob(); stored.ok() && jobs::IsFinishedJob(*stored)) {
    std::unique_ptr<history::HistoryStore> store = OpenLocalHistory(StateRoot(global));
    std::string uid = api::StringAt((*stored).value("metadata", json::object()), "uid");
    if (store && !store->Has(uid)) CaptureInto(store.get(), StateRoot(global), *key);
  }
  Status st = dir.RemoveAll();
  if (!st.ok()) return Fail(st.message(), 1);
  std::cout << jobs::ResourceName(key->kind) << " \"" << key->name << "\" deleted\n";
  for (const api::ClaimRef& claim : claims) {
    std::string folder = local::ClaimFolder(StateRoot(global), key->namespace_, claim.claim);
    std::error_code ec;
    bool existed = fs::exists(folder, ec);
    fs::remove_all(folder, ec);
    if (ec) return Fail("workspace " + folder + ": " + ec.message(), 1);
    std::cout << "workspace " << folder << (existed ? " deleted" : " already gone") << "\n";
  }
  return 0;
}

int LocalBackend::Wait(const std::vector<std::string>& args, const std::string& for_condition,
                       const std::string& timeout) {
  RealClock clock;
  jobs::LocalJobSource source = SourceFor(global_, clock);
  return WaitForJob(source, args, for_condition, timeout, clock);
}

StatusOr<std::unique_ptr<Backend>> ChooseBackend(const GlobalOptions& global,
                                                 const std::string& env_backend) {
  StatusOr<bool> cluster = UseCluster(global, env_backend);
  if (!cluster.ok()) return cluster.status();
  if (*cluster) return std::unique_ptr<Backend>(std::make_unique<ClusterBackend>(global));
  return std::unique_ptr<Backend>(std::make_unique<LocalBackend>(global));
}

namespace {

int WithBackend(const GlobalOptions& global, const std::function<int(Backend&)>& command) {
  StatusOr<std::unique_ptr<Backend>> backend = ChooseBackend(global, EnvBackend());
  if (!backend.ok()) return Fail(backend.status().message(), 2);
  return command(**backend);
}

}  // namespace

int GetCommand(const GlobalOptions& global, const std::vector<std::string>& args,
               const std::string& output) {
  return WithBackend(global, [&](Backend& b) { return b.Get(args, output); });
}

int DescribeCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                    const std::string& output) {
  return WithBackend(global, [&](Backend& b) { return b.Describe(args, output); });
}

int LogsCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& replica, bool follow) {
  return WithBackend(global, [&](Backend& b) { return b.Logs(args, replica, follow); });
}

int PatchCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                 const std::string& patch) {
  return WithBackend(global, [&](Backend& b) { return b.Patch(args, patch); });
}

int DeleteCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                  bool delete_workspace) {
  return WithBackend(global, [&](Backend& b) { return b.Delete(args, delete_workspace); });
}

int MetricsCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                   const std::string& output, const std::string& replica) {
  return WithBackend(global, [&](Backend& b) { return b.Metrics(args, output, replica); });
}

int WaitCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& for_condition, const std::string& timeout) {
  return WithBackend(global, [&](Backend& b) { return b.Wait(args, for_condition, timeout); });
}

}  // namespace trainctl::cli
