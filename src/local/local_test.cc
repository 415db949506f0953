// Unit tests for the local substrate's pure parts: launch preparation (env precedence,
// fieldRef, $(VAR) expansion, working dir, errors with field paths), the kubelet rules, and
// the state folder (atomic files, runner lock, listing).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/manifest.h"
#include "api/test_manifest.h"
#include "kinds/mpi.h"
#include "kinds/mpi_v2.h"
#include "local/containers.h"
#include "local/kubelet.h"
#include "local/launch.h"
#include "local/log_tailer.h"
#include "local/mpi_local.h"
#include "local/state_store.h"
#include "local/torch_error.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

using api::test::LoadJob;

const char* kJob = R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: demo, namespace: team}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          initContainers:
          - {name: init, image: busybox, command: ["true"]}
          containers:
          - name: sidecar
            image: envoy
            command: [envoy]
          - name: pytorch
            image: torch
            workingDir: sub
            command: [python3, train.py]
            args: ["--name=$(POD_NAME)", "--rank=$(RANK)", "$(UNDEFINED)", "$$(RANK)", "cost $$5"]
            env:
            - {name: HOME_DIR, value: /from/template}
            - {name: RANK, value: should-be-overridden}
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - {name: GREETING, value: "hello $(POD_NAME)"}
)yaml";

std::string EnvValue(const LaunchSpec& spec, const std::string& name) {
  for (const std::string& e : spec.env)
    if (e.rfind(name + "=", 0) == 0) return e.substr(name.size() + 1);
  return "<unset>";
}

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trainctl-launch-" + std::to_string(getpid()));
    fs::create_directories(dir_ / "sub");
    context_.manifest_dir = dir_.string();
    context_.base_env = {"PATH=/usr/bin:/bin", "HOME_DIR=/from/caller", "RANK=caller"};
    injected_.env = {{"RANK", "0", nullptr}, {"WORLD_SIZE", "2", nullptr}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  LaunchContext context_;
  api::ReplicaEnv injected_;
};

TEST(LogTailerTest, LinesAcrossPollsAndABarThatNeverEndsItsLine) {
  const std::string path = ::testing::TempDir() + "/tailer-" + std::to_string(getpid()) + ".log";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LogTailer tailer;
  std::vector<std::string> lines;
  auto collect = [&](const std::string& line) { lines.push_back(line); };
  out << "step=1 loss=0.5\nstep=2 lo" << std::flush;
  tailer.Poll("r", path, collect);
  EXPECT_EQ(lines, std::vector<std::string>{"step=1 loss=0.5"});
  out << "ss=0.4\r\n" << std::flush;
  tailer.Poll("r", path, collect);
  EXPECT_EQ(lines.back(), "step=2 loss=0.4");
  // A bar redrawn with \r and no newline: handed out at its last \r once past the bound, so
  // neither memory nor a poll's work grows with it.
  lines.clear();
  const std::string frame = "\r 50%|#####     | 5/10 [00:01<00:01]";
  size_t written = 0;
  for (int poll = 0; poll < 40; ++poll) {
    std::string chunk;
    while (chunk.size() < 100000) chunk += frame;
    out << chunk << std::flush;
    written += chunk.size();
    tailer.Poll("r", path, collect);
  }
  ASSERT_GT(written, 3 * kMaxPartialLineBytes);
  ASSERT_FALSE(lines.empty());
  size_t delivered = 0;
  for (const std::string& line : lines) {
    EXPECT_LE(line.size(), kMaxPartialLineBytes + 100000);
    EXPECT_EQ(line.rfind('\r', 0), 0u) << "cut at a redraw";
    delivered += line.size();
  }
  out << "\n" << std::flush;
  tailer.Poll("r", path, collect);
  delivered += lines.back().size();
  EXPECT_EQ(delivered, written) << "nothing lost, nothing twice";
  std::filesystem::remove(path);
}

TEST_F(LaunchTest, DefaultContainerWithEnvPrecedenceAndExpansion) {
  api::Job job = LoadJob(kJob);
  StatusOr<PreparedLaunch> launch = PrepareLaunch(job, "Master", 0, injected_, context_);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  const LaunchSpec& spec = launch->spec;
  EXPECT_EQ(spec.argv,
            (std::vector<std::string>{"python3", "train.py", "--name=demo-master-0", "--rank=0",
                                      "$(UNDEFINED)", "$(RANK)", "cost $5"}));
  EXPECT_EQ(EnvValue(spec, "HOME_DIR"), "/from/template");  // template beats caller
  EXPECT_EQ(EnvValue(spec, "RANK"), "0");                   // framework beats template
  EXPECT_EQ(EnvValue(spec, "WORLD_SIZE"), "2");
  EXPECT_EQ(EnvValue(spec, "POD_NAME"), "demo-master-0");
  EXPECT_EQ(EnvValue(spec, "GREETING"), "hello demo-master-0");
  EXPECT_EQ(EnvValue(spec, "PATH"), "/usr/bin:/bin");
  EXPECT_EQ(spec.cwd, (dir_ / "sub").string());
  EXPECT_EQ(launch->command_field,
            "spec.pytorchReplicaSpecs[Master].template.spec.containers[1].command[0]");
  // The sidecar does not run locally, and the user is told once.
  std::vector<std::string> notes = RunNotes(job);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("spec.pytorchReplicaSpecs[Master].template.spec.containers[0] "
                          "(sidecar) is not started locally"),
            std::string::npos)
      << notes[0];
  // The init container runs before it, with its own command and env, not the framework's.
  StatusOr<std::vector<InitStep>> steps = InitStepsOf(job, "Master");
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  ASSERT_EQ(steps->size(), 1u);
  LaunchContext init_context = context_;
  init_context.container = &(*steps)[0].at;
  StatusOr<PreparedLaunch> init = PrepareLaunch(job, "Master", 0, injected_, init_context);
  ASSERT_TRUE(init.ok()) << init.status().message();
  EXPECT_EQ(init->spec.argv, (std::vector<std::string>{"true"}));
  EXPECT_EQ(EnvValue(init->spec, "RANK"), "caller") << "no framework env in an init container";
  EXPECT_EQ(EnvValue(init->spec, "WORLD_SIZE"), "<unset>");
  EXPECT_EQ(init->spec.cwd, dir_.string());
  EXPECT_EQ(init->command_field,
            "spec.pytorchReplicaSpecs[Master].template.spec.initContainers[0].command[0]");
}

TEST(InitContainers, SidecarsAndTheWaitForMasterContainerAreSkippedWithANote) {
  api::Job job = LoadJob(R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: demo}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          initContainers:
          - {name: init-pytorch, image: alpine, command: [sh, -c, "until nslookup x; do sleep 1; done"]}
          - {name: fetch, image: alpine, command: ["true"]}
          - {name: proxy, image: envoy, restartPolicy: Always, command: [envoy]}
          - {name: prepare, image: alpine, command: ["true"]}
          containers:
          - {name: pytorch, image: torch, command: ["true"]}
)yaml");
  StatusOr<std::vector<InitStep>> steps = InitStepsOf(job, "Worker");
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].name, "fetch");
  EXPECT_EQ((*steps)[0].at.path,
            "spec.pytorchReplicaSpecs[Worker].template.spec.initContainers[1]");
  EXPECT_EQ((*steps)[1].name, "prepare");
  std::vector<std::string> notes = RunNotes(job);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("initContainers[0] (init-pytorch) is skipped"), std::string::npos);
  EXPECT_NE(notes[1].find("initContainers[2] (proxy) is a sidecar (restartPolicy: Always)"),
            std::string::npos);

  // The loader rejects this; a job built in code is still checked, not trusted.
  api::Job unnamed = job;
  unnamed.replica_specs.at("Worker").pod_template["spec"]["initContainers"] =
      nlohmann::json::array({"x"});
  StatusOr<std::vector<InitStep>> refused = InitStepsOf(unnamed, "Worker");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "spec.pytorchReplicaSpecs[Worker].template.spec.initContainers[0]: Invalid value: "
            "expected a container");
}

TEST_F(LaunchTest, MissingCommandNamesTheField) {
  std::string text = kJob;
  text.replace(text.find("command: [python3, train.py]"), 28, "");
  api::Job job = LoadJob(text);
  StatusOr<PreparedLaunch> launch = PrepareLaunch(job, "Master", 0, injected_, context_);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(launch.status().code(), StatusCode::kInvalid);
  EXPECT_NE(launch.status().message().find(
                "spec.pytorchReplicaSpecs[Master].template.spec.containers[1].command: Required"),
            std::string::npos)
      << launch.status().message();
}

TEST_F(LaunchTest, MissingWorkingDirIsAnError) {
  fs::remove_all(dir_ / "sub");
  StatusOr<PreparedLaunch> launch = PrepareLaunch(LoadJob(kJob), "Master", 0, injected_, context_);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.status().message().find("containers[1].workingDir: Invalid value: \"sub\""),
            std::string::npos)
      << launch.status().message();
}

TEST_F(LaunchTest, UnknownFieldRefIsAnError) {
  std::string text = kJob;
  text.replace(text.find("metadata.name"), 13, "spec.priority");
  StatusOr<PreparedLaunch> launch = PrepareLaunch(LoadJob(text), "Master", 0, injected_, context_);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.status().message().find("env[2].valueFrom.fieldRef.fieldPath: Unsupported "
                                           "value: \"spec.priority\""),
            std::string::npos)
      << launch.status().message();
}

TEST_F(LaunchTest, ResolveFindsTheExecutableOrNamesIt) {
  StatusOr<PreparedLaunch> found = ResolveLaunch(LoadJob(kJob), "Master", 0, injected_, context_);
  if (fs::exists("/usr/bin/python3") || fs::exists("/bin/python3")) {
    ASSERT_TRUE(found.ok()) << found.status().message();
    EXPECT_EQ(found->spec.argv[0].front(), '/');
  }
  std::string text = kJob;
  text.replace(text.find("[python3, train.py]"), 19, "[no-such-binary-here]");
  StatusOr<PreparedLaunch> missing = ResolveLaunch(LoadJob(text), "Master", 0, injected_, context_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("containers[1].command[0]: command "
                                            "\"no-such-binary-here\" not found"),
            std::string::npos)
      << missing.status().message();
}

TEST(ExpandReferencesTest, KubeletRules) {
  std::map<std::string, std::string> vars{{"A", "x"}, {"B", "$(A)"}};
  EXPECT_EQ(ExpandReferences("$(A)-$(B)", vars), "x-$(A)");  // no recursive expansion
  EXPECT_EQ(ExpandReferences("$$(A) $$ $", vars), "$(A) $ $");
  EXPECT_EQ(ExpandReferences("$(MISSING) $(A", vars), "$(MISSING) $(A");
}

TEST(KubeletTest, BackoffDoublesToACap) {
  EXPECT_EQ(RestartBackoff(1), Duration(1000));
  EXPECT_EQ(RestartBackoff(2), Duration(2000));
  EXPECT_EQ(RestartBackoff(3), Duration(4000));
  EXPECT_EQ(RestartBackoff(50), Duration(30000));
}

TEST(KubeletTest, ExitRestartsInPlaceOnlyWhileTheJobRunsUnsignalled) {
  using api::RestartPolicy;
  ExitDecision d = DecideExit(RestartPolicy::kOnFailure, 3, /*restarts=*/1, false, false);
  EXPECT_TRUE(d.restart);
  EXPECT_EQ(d.backoff, Duration(2000));  // the second restart
  EXPECT_FALSE(DecideExit(RestartPolicy::kOnFailure, 3, 0, /*job_finished=*/true, false).restart);
  EXPECT_FALSE(DecideExit(RestartPolicy::kAlways, 0, 0, false, /*interrupted=*/true).restart);
  d = DecideExit(RestartPolicy::kOnFailure, 0, 0, false, false);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.phase, engine::Phase::kSucceeded);
  d = DecideExit(RestartPolicy::kNever, 137, 0, false, false);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.phase, engine::Phase::kFailed);
}

TEST(KubeletTest, FinishedJobDrainsOnlyAfterSuccessWithoutASignal) {
  MonoTime t0{};
  Duration drain(3000);
  FinishDecision running = DecideFinish(false, false, false, std::nullopt, t0, drain);
  EXPECT_FALSE(running.stop_idle || running.stop_all || running.drain_started);

  FinishDecision first = DecideFinish(true, /*succeeded=*/true, false, std::nullopt, t0, drain);
  EXPECT_TRUE(first.stop_idle);
  EXPECT_FALSE(first.stop_all);
  ASSERT_TRUE(first.drain_started);
  FinishDecision later =
      DecideFinish(true, true, false, first.drain_started, t0 + Duration(3000), drain);
  EXPECT_TRUE(later.stop_all);
  EXPECT_EQ(later.drain_started, first.drain_started);

  EXPECT_TRUE(DecideFinish(true, /*succeeded=*/false, false, std::nullopt, t0, drain).stop_all);
  EXPECT_TRUE(DecideFinish(true, true, /*interrupted=*/true, std::nullopt, t0, drain).stop_all);
}

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("trainctl-state-" + std::to_string(getpid()))).string();
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(StateStoreTest, WritesReadsAndLists) {
  JobDir dir(root_, {api::Kind::kPyTorchJob, "team", "demo"});
  EXPECT_FALSE(dir.Exists());
  ASSERT_TRUE(dir.Create().ok());
  ASSERT_TRUE(dir.WriteJob({{"kind", "PyTorchJob"}, {"metadata", {{"name", "demo"}}}}).ok());
  ASSERT_TRUE(dir.AppendEvent({{"reason", "A"}}).ok());
  ASSERT_TRUE(dir.AppendEvent({{"reason", "B"}}).ok());
  EXPECT_EQ(dir.ReadJob()->at("kind"), "PyTorchJob");
  StatusOr<std::vector<nlohmann::json>> events = dir.ReadEvents();
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1]["reason"], "B");
  EXPECT_EQ(dir.path(), root_ + "/team/pytorchjobs/demo");

  JobDir other(root_, {api::Kind::kTFJob, "default", "x"});
  ASSERT_TRUE(other.Create().ok());
  EXPECT_EQ(ListJobs(root_, std::nullopt).size(), 1u);  // listed once its object is written
  ASSERT_TRUE(other.WriteJob({{"kind", "TFJob"}}).ok());
  EXPECT_EQ(ListJobs(root_, std::nullopt).size(), 2u);
  std::vector<JobKey> team = ListJobs(root_, "team");
  ASSERT_EQ(team.size(), 1u);
  EXPECT_EQ(team[0].name, "demo");
  ASSERT_TRUE(dir.RemoveAll().ok());
  EXPECT_FALSE(dir.Exists());
}

TEST_F(StateStoreTest, CorruptJobFileIsAnErrorNotACrash) {
  JobDir dir(root_, {api::Kind::kPyTorchJob, "default", "demo"});
  ASSERT_TRUE(dir.Create().ok());
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/job.json", "{\"kind\": ").ok());
  StatusOr<nlohmann::json> job = dir.ReadJob();
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("job.json"), std::string::npos) << job.status().message();
}

TEST_F(StateStoreTest, ValidJsonOfTheWrongShapeIsADamagedFileToo) {
  JobDir dir(root_, {api::Kind::kPyTorchJob, "default", "demo"});
  ASSERT_TRUE(dir.Create().ok());
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/job.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/replicas.json", "{\"a\": 1}").ok());
  EXPECT_EQ(dir.ReadJob().status().message(),
            dir.path() +
                "/job.json: not a job (damaged state file): expected an object with kind "
                "and metadata.name");
  EXPECT_EQ(dir.ReadReplicas().status().message(),
            dir.path() + "/replicas.json: not a list of replicas (damaged state file)");
  EXPECT_FALSE(JobDir(root_, {api::Kind::kPyTorchJob, "..", "x"}).Create().ok());
  EXPECT_FALSE(JobDir(root_, {api::Kind::kPyTorchJob, "a/b", "x"}).Create().ok());
}

TEST_F(StateStoreTest, OnlyOneRunnerHoldsTheLock) {
  JobDir first(root_, {api::Kind::kPyTorchJob, "default", "demo"});
  JobDir second(root_, {api::Kind::kPyTorchJob, "default", "demo"});
  ASSERT_TRUE(first.Create().ok());
  EXPECT_FALSE(second.RunnerActive());
  ASSERT_TRUE(first.AcquireRunnerLock().ok());
  int pid = 0;
  EXPECT_TRUE(second.RunnerActive(&pid));
  EXPECT_EQ(pid, getpid());
  Status taken = second.AcquireRunnerLock();
  EXPECT_EQ(taken.code(), StatusCode::kAlreadyExists);
  first.ReleaseRunnerLock();
  EXPECT_FALSE(second.RunnerActive());
  EXPECT_TRUE(second.AcquireRunnerLock().ok());
}

const char* kMpiJob = R"yaml(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi}
spec:
  slotsPerWorker: 2
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - {name: mpi, image: mpi, command: [mpirun, python3, pi.py]}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - {name: mpi, image: mpi}
)yaml";

std::string EnvOf(const std::vector<api::EnvVar>& env, const std::string& name) {
  for (const api::EnvVar& e : env)
    if (e.name == name) return e.value;
  return "<unset>";
}

TEST(MpiLocalTest, WorkersAreIdleOnlyInMpiJobs) {
  EXPECT_TRUE(IsIdleReplica(LoadJob(kMpiJob), "Worker", false));
  EXPECT_TRUE(IsIdleReplica(LoadJob(kMpiJob), "Worker", true));  // v1: no sshd, even in containers
  EXPECT_FALSE(IsIdleReplica(LoadJob(kMpiJob), "Launcher", false));
  EXPECT_FALSE(IsIdleReplica(LoadJob(kJob), "Worker", false));
  EXPECT_TRUE(ServesLauncherOnly(LoadJob(kMpiJob), "Worker"));
  EXPECT_FALSE(ServesLauncherOnly(LoadJob(kJob), "Worker"));
  EXPECT_EQ(IdleArgv(), (std::vector<std::string>{"sleep", "infinity"}));
}

TEST(MpiLocalTest, HostfileSumsWorkerSlotsOnOneLocalLine) {
  EXPECT_EQ(LocalMpiSlots(LoadJob(kMpiJob)), 6);
  EXPECT_EQ(LocalMpiHostfile(LoadJob(kMpiJob), LocalMpiMode::kFork), "localhost slots=6\n");
}

TEST(MpiLocalTest, LauncherEnvForksRanksLocally) {
  api::Job job = LoadJob(kMpiJob);
  std::vector<api::EnvVar> env =
      LocalMpiLauncherEnv(job, kinds::MpiLauncherEnv(job, "/etc/mpi", false), "/state/hostfile",
                          false, 8, LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_default_hostfile"), "/state/hostfile");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm"), "isolated");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm_rsh_agent"), "<unset>");
  EXPECT_EQ(EnvOf(env, "I_MPI_HYDRA_BOOTSTRAP"), "fork");
  EXPECT_EQ(EnvOf(env, "I_MPI_HYDRA_BOOTSTRAP_EXEC"), "<unset>");
  EXPECT_EQ(EnvOf(env, "OMPI_ALLOW_RUN_AS_ROOT"), "<unset>");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_rmaps_base_oversubscribe"), "<unset>");
  EXPECT_EQ(EnvOf(env, "NVIDIA_VISIBLE_DEVICES"), "");
}

TEST(MpiLocalTest, RootAndOversubscriptionOnlyWhenNeeded) {
  api::Job job = LoadJob(kMpiJob);
  std::vector<api::EnvVar> env = LocalMpiLauncherEnv(
      job, kinds::MpiLauncherEnv(job, "/etc/mpi", false), "/h", true, 2, LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "OMPI_ALLOW_RUN_AS_ROOT"), "1");
  EXPECT_EQ(EnvOf(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_rmaps_base_oversubscribe"), "1");
}

// The same job as mpi-operator's v2beta1: WaitForWorkersReady, the launcher as a worker, MPICH.
std::string MpiV2Job(const std::string& extra) {
  std::string yaml = kMpiJob;
  yaml.replace(yaml.find("kubeflow.org/v1"), 15, "kubeflow.org/v2beta1");
  yaml.replace(yaml.find("  slotsPerWorker: 2\n"), 19, "  slotsPerWorker: 2\n" + extra);
  return yaml;
}

TEST(MpiLocalTest, V2LauncherAsWorkerAddsItsSlotsInTheImplementationsFormat) {
  EXPECT_EQ(LocalMpiHostfile(LoadJob(MpiV2Job("")), LocalMpiMode::kFork), "localhost slots=6\n");
  api::Job job = LoadJob(MpiV2Job("  runLauncherAsWorker: true\n  mpiImplementation: MPICH\n"));
  EXPECT_EQ(LocalMpiSlots(job), 8);
  EXPECT_EQ(LocalMpiHostfile(job, LocalMpiMode::kFork), "localhost:8\n");
}

TEST(MpiLocalTest, V2LauncherEnvForksRanksLocallyForEachImplementation) {
  api::Job job = LoadJob(MpiV2Job(""));
  std::vector<api::EnvVar> env = LocalMpiLauncherEnv(job, kinds::MpiV2LauncherEnv(job, "/etc/mpi"),
                                                     "/h", false, 8, LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_default_hostfile"), "/h");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm_rsh_args"), "<unset>");  // no ssh here
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm"), "isolated");
  EXPECT_EQ(EnvOf(env, "K_MPI_JOB_ROLE"), "launcher");
  job.mpi_implementation = "MPICH";
  env = LocalMpiLauncherEnv(job, kinds::MpiV2LauncherEnv(job, "/etc/mpi"), "/h", false, 8,
                            LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "HYDRA_HOST_FILE"), "/h");
  EXPECT_EQ(EnvOf(env, "HYDRA_LAUNCHER"), "fork");
  EXPECT_EQ(EnvOf(env, "HYDRA_LAUNCH_EXTRA_ARGS"), "<unset>");
  job.mpi_implementation = "Intel";
  env = LocalMpiLauncherEnv(job, kinds::MpiV2LauncherEnv(job, "/etc/mpi"), "/h", false, 8,
                            LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "I_MPI_HYDRA_HOST_FILE"), "/h");
  EXPECT_EQ(EnvOf(env, "I_MPI_HYDRA_BOOTSTRAP"), "fork");
  EXPECT_EQ(EnvOf(env, "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS"), "<unset>");
}

TEST(MpiLocalTest, V2WorkersCommandBeingReplacedIsSaidOnce) {
  std::optional<std::string> note = LocalMpiWorkerNote(LoadJob(MpiV2Job("")), LocalMpiMode::kFork);
  ASSERT_TRUE(note);
  EXPECT_EQ(note->rfind("spec.mpiReplicaSpecs[Worker]: the workers' command", 0), 0u) << *note;
  EXPECT_FALSE(LocalMpiWorkerNote(LoadJob(kMpiJob), LocalMpiMode::kFork));
}

TEST(MpiLocalTest, RunningAsRootIsSaidOnceWithTheLaunchersPath) {
  api::Job job = LoadJob(kMpiJob);
  std::optional<std::string> note = LocalMpiRootNote(job, true, LocalMpiMode::kFork);
  ASSERT_TRUE(note);
  EXPECT_EQ(note->rfind("spec.mpiReplicaSpecs[Launcher]: mpirun runs as root here", 0), 0u)
      << *note;
  EXPECT_NE(note->find("OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"),
            std::string::npos);
  EXPECT_EQ(LocalMpiRootNote(job, false, LocalMpiMode::kFork), std::nullopt);
  EXPECT_EQ(LocalMpiRootNote(job, true, LocalMpiMode::kSsh), std::nullopt);
}

TEST(MpiLocalTest, V2InContainersReachesItsWorkersOverSsh) {
  api::Job job = LoadJob(MpiV2Job(""));
  EXPECT_EQ(LocalMpiModeOf(job, true), LocalMpiMode::kSsh);
  EXPECT_EQ(LocalMpiModeOf(job, false), LocalMpiMode::kFork);
  EXPECT_EQ(LocalMpiModeOf(LoadJob(kMpiJob), true), LocalMpiMode::kFork);  // v1: kubexec.sh
  EXPECT_EQ(LocalMpiModeOf(LoadJob(kJob), true), LocalMpiMode::kNone);
  EXPECT_FALSE(IsIdleReplica(job, "Worker", true));
  EXPECT_TRUE(IsIdleReplica(job, "Worker", false));
  // The workers by the names the cluster's hostfile gives them; the launcher as localhost.
  EXPECT_EQ(LocalMpiHostfile(job, LocalMpiMode::kSsh),
            "pi-worker-0.pi.default.svc slots=2\npi-worker-1.pi.default.svc slots=2\n"
            "pi-worker-2.pi.default.svc slots=2\n");
  api::Job works = LoadJob(MpiV2Job("  runLauncherAsWorker: true\n  mpiImplementation: MPICH\n"));
  EXPECT_EQ(LocalMpiHostfile(works, LocalMpiMode::kSsh),
            "localhost:2\npi-worker-0.pi.default.svc:2\npi-worker-1.pi.default.svc:2\n"
            "pi-worker-2.pi.default.svc:2\n");
  // Upstream's env as it is, the hostfile here: mpirun's ssh reaches the workers.
  std::vector<api::EnvVar> env = LocalMpiLauncherEnv(job, kinds::MpiV2LauncherEnv(job, "/etc/mpi"),
                                                     "/h", true, 1, LocalMpiMode::kSsh);
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_default_hostfile"), "/h");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm_rsh_args"), "-o ConnectionAttempts=10");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_keep_fqdn_hostnames"), "true");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm"), "<unset>");
  EXPECT_EQ(EnvOf(env, "OMPI_ALLOW_RUN_AS_ROOT"), "<unset>");  // the image's user decides
}

TEST(MpiLocalTest, SshConfigMapsEachWorkerToItsPortOnThisMachine) {
  std::string config = LocalSshConfig(LoadJob(MpiV2Job("")), {30001, 30002, 30003});
  EXPECT_NE(config.find("Host pi-worker-1.pi.default.svc pi-worker-1\n  HostName 127.0.0.1\n"
                        "  Port 30002\n"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("Host *\n  StrictHostKeyChecking no\n"), std::string::npos) << config;
}

TEST(MpiLocalTest, SshdGetsItsPortAndOtherCommandsAreLeftAlone) {
  std::vector<std::string> command, args;
  ASSERT_TRUE(SetLocalSshdPort(2022, &command, &args));  // mpi-operator's default command
  EXPECT_EQ(command, (std::vector<std::string>{"/usr/sbin/sshd", "-De", "-p", "2022"}));
  EXPECT_TRUE(args.empty());
  command = {"/usr/sbin/sshd"};
  args = {"-De", "-f", "/home/mpiuser/.sshd_config"};
  ASSERT_TRUE(SetLocalSshdPort(2022, &command, &args));
  EXPECT_EQ(args,
            (std::vector<std::string>{"-De", "-f", "/home/mpiuser/.sshd_config", "-p", "2022"}));
  command = {"/entrypoint.sh"};
  args.clear();
  EXPECT_FALSE(SetLocalSshdPort(2022, &command, &args));
  EXPECT_TRUE(args.empty());
  args = {"sshd"};  // args alone: the image's entrypoint, which trainctl cannot see
  command.clear();
  EXPECT_FALSE(SetLocalSshdPort(2022, &command, &args));
}

TEST(MpiLocalTest, V2WorkersOverSshAreSaidOnceAndAForeignCommandIsWarnedOf) {
  std::optional<std::string> note = LocalMpiWorkerNote(LoadJob(MpiV2Job("")), LocalMpiMode::kSsh);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("the workers run sshd as on a cluster"), std::string::npos) << *note;
  EXPECT_NE(note->find("/root/.ssh"), std::string::npos) << *note;
  EXPECT_EQ(note->find("warning"), std::string::npos) << *note;
  std::string yaml = MpiV2Job("");
  yaml.replace(yaml.rfind("{name: mpi, image: mpi}"), 23,
               "{name: mpi, image: mpi, command: [/start.sh]}");
  note = LocalMpiWorkerNote(LoadJob(yaml), LocalMpiMode::kSsh);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("warning: spec.mpiReplicaSpecs[Worker].template.spec.containers[0].command "
                       "is not sshd"),
            std::string::npos)
      << *note;
}

TEST(MpiLocalTest, IdleLaunchIgnoresTheTemplate) {
  LaunchContext context;
  context.manifest_dir = "/jobs";
  context.base_env = {"PATH=/usr/bin:/bin"};
  PreparedLaunch launch = PrepareIdleLaunch(context);
  EXPECT_EQ(launch.spec.argv, (std::vector<std::string>{"sleep", "infinity"}));
  EXPECT_EQ(launch.spec.cwd, "/jobs");
  EXPECT_EQ(launch.spec.env, context.base_env);
}

}  // namespace
}  // namespace trainctl::local

namespace trainctl::local {
namespace {

TEST(TorchElasticErrorTest, RootCauseComesLastAndBounded) {
  std::string file =
      R"({"message": {"message": "RuntimeError: NCCL error: Duplicate GPU detected", "extraInfo": )"
      R"({"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 7, in main\n    dist.barrier()\nRuntimeError: NCCL error: Duplicate GPU detected\n", "timestamp": "1"}}})";
  std::optional<std::string> text = TorchElasticErrorText(file, 2048);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text,
            "Traceback (most recent call last):\n  File \"train.py\", line 7, in main\n    "
            "dist.barrier()\nRuntimeError: NCCL error: Duplicate GPU detected");
  std::optional<std::string> small = TorchElasticErrorText(file, 60);
  ASSERT_TRUE(small);
  EXPECT_LE(small->size(), 60u);
  EXPECT_EQ(small->substr(small->size() - 22), "Duplicate GPU detected");
  EXPECT_EQ(TorchElasticErrorText(R"({"message": "ChildFailedError: x"})", 100),
            "ChildFailedError: x");
  EXPECT_FALSE(TorchElasticErrorText("not json", 100));
  EXPECT_FALSE(TorchElasticErrorText(R"({"other": 1})", 100));
}

}  // namespace
}  // namespace trainctl::local

namespace trainctl::local {
namespace {

// torchrun's report of a worker that failed without the error file: the worker's own last lines
// come first, then one summary line; a log without the report is left alone.
TEST(TorchrunReportTest, TheWorkersOwnLinesComeBeforeTheReport) {
  const std::string log =
      "rank 1 of WORLD_SIZE 2\n"
      "fatal: accelerator not found on rank 1\n"
      "E1125 23:04:42.100000 26090 api.py:881] failed (exitcode: 7) local_rank: 0 (pid: 26094)\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/bin/torchrun\", line 33, in <module>\n"
      "    sys.exit(load_entry_point('torch', 'console_scripts', 'torchrun')())\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
      "============================================================\n"
      "/tmp/x/ephemeral_script.py FAILED\n"
      "------------------------------------------------------------\n"
      "Failures:\n"
      "  <NO_OTHER_FAILURES>\n"
      "------------------------------------------------------------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-25_23:04:42\n"
      "  host      : localhost\n"
      "  rank      : 1 (local_rank: 0)\n"
      "  exitcode  : 7 (pid: 26094)\n"
      "  error_file: <N/A>\n"
      "============================================================\n";
  std::optional<std::string> text = WorkerOutputBeforeTorchrunReport(log, 2048);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(
      *text,
      "rank 1 of WORLD_SIZE 2\n"
      "fatal: accelerator not found on rank 1\n"
      "E1125 23:04:42.100000 26090 api.py:881] failed (exitcode: 7) local_rank: 0 (pid: 26094)\n"
      "torchrun: rank 1 (local_rank: 0) exited with code 7");
  std::optional<std::string> small = WorkerOutputBeforeTorchrunReport(log, 120);
  ASSERT_TRUE(small.has_value());
  EXPECT_LE(small->size(), 120u);
  EXPECT_EQ(small->substr(small->rfind('\n') + 1),
            "torchrun: rank 1 (local_rank: 0) exited with code 7");
  EXPECT_FALSE(WorkerOutputBeforeTorchrunReport(
      "Traceback (most recent call last):\nValueError: x\n", 2048));
}

}  // namespace
}  // namespace trainctl::local
