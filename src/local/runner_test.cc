// Unit tests of the local runner's loop (RunJob) behind a scripted process launcher and a fake
// clock (local/fake_launcher.h): success, restart in place with back-off, a failed replica
// stopping the others within the grace period, the active deadline, the back-off limit, a
// replica that cannot start, the drain after success, and SIGINT. Real files: each test has its
// own state folder. The same paths run with real processes in test/e2e/.
#include "local/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "api/checkpoint_notice.h"
#include "api/manifest.h"
#include "local/fake_launcher.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

api::Job Load(const std::string& text) {
  auto loaded = api::LoadJobsFromText(text, "test.yaml");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return loaded.ok() ? (*loaded)[0].job : api::Job{};
}

// A PyTorchJob "pt" with one Master and `workers` Workers running `true`, with `run_policy`
// (YAML flow mapping) and the replicas' restart policy.
std::string PyTorch(int workers, const std::string& restart_policy = "Never",
                    const std::string& run_policy = "{}") {
  return R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  runPolicy: )" +
         run_policy +
         R"(
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: )" +
         restart_policy + R"(
      template: {spec: {containers: [{name: pytorch, image: x, command: ["true"]}]}}
    Worker:
      replicas: )" +
         std::to_string(workers) + R"(
      restartPolicy: )" +
         restart_policy + R"(
      template: {spec: {containers: [{name: pytorch, image: x, command: ["true"]}]}}
)";
}

std::string Condition(const json& job, const std::string& type, const std::string& field) {
  for (const json& c : job["status"].value("conditions", json::array()))
    if (c.value("type", "") == type && c.value("status", "") == "True") return c.value(field, "");
  return "";
}

class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest()
      : clock_(Time(std::chrono::seconds(1700000000))),
        launcher_(&clock_),
        root_(fs::temp_directory_path() /
              ("trainctl-runner-test-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
    options_.state_root = root_.string();
    options_.base_env = {"PATH=/usr/bin:/bin"};
    options_.launcher = &launcher_;
  }
  ~RunnerTest() override { fs::remove_all(root_); }

  RunResult Run(const std::string& yaml) {
    StatusOr<RunResult> result = RunJob(Load(yaml), options_, clock_, nullptr);
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.ok() ? *result : RunResult{};
  }

  // Signals sent to `replica`, with the fake time they were sent at.
  std::vector<std::pair<int, Duration>> SignalsTo(const std::string& replica) const {
    std::vector<std::pair<int, Duration>> out;
    MonoTime origin = launcher_.spawned().at(0).at;
    for (const auto& s : launcher_.signalled())
      if (s.replica == replica)
        out.push_back({s.sig, std::chrono::duration_cast<Duration>(s.at - origin)});
    return out;
  }

  json StoredReplicas() const {
    std::ifstream in(root_ / "ns" / "pytorchjobs" / "pt" / "replicas.json");
    return json::parse(in, nullptr, false);
  }

  FakeClock clock_;
  FakeLauncher launcher_;
  fs::path root_;
  RunOptions options_;
};

TEST_F(RunnerTest, ReplicasThatSucceedMakeTheJobSucceedWithTheirEnvWired) {
  launcher_.Script("pt-master-0", {{Duration(2000), 0}});
  RunResult result = Run(PyTorch(2));
  EXPECT_TRUE(result.succeeded);
  EXPECT_NE(Condition(result.job, "Succeeded", "message").find("successfully completed"),
            std::string::npos);
  ASSERT_EQ(launcher_.spawned().size(), 3u);
  const LaunchSpec& worker = launcher_.spawned()[2].spec;
  EXPECT_EQ(launcher_.spawned()[2].replica, "pt-worker-1");
  auto has = [&](const std::string& var) {
    return std::find(worker.env.begin(), worker.env.end(), var) != worker.env.end();
  };
  EXPECT_TRUE(has("MASTER_ADDR=127.0.0.1"));
  EXPECT_TRUE(has("RANK=2"));
  EXPECT_TRUE(has("WORLD_SIZE=3"));
  EXPECT_TRUE(launcher_.signalled().empty());
  EXPECT_EQ(launcher_.Elapsed(), Duration(2000));  // ends when the last replica does
}

TEST_F(RunnerTest, ExitCodePolicyReplacesARetryableExitWithANewReplicaAtOnce) {
  launcher_.Script("pt-master-0", {{Duration(30000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(1000), 137}, {Duration(1000), 0}});
  RunResult result = Run(PyTorch(1, "ExitCode"));
  EXPECT_TRUE(result.succeeded);
  ASSERT_EQ(launcher_.Attempts("pt-worker-0"), 2);
  ASSERT_EQ(launcher_.spawned().size(), 3u);
  // As the operator does with pods: the failed replica is replaced on the next pass (the
  // loop looks again within 250 ms), not restarted in place after a back-off.
  EXPECT_GT(launcher_.spawned()[2].at - launcher_.spawned()[0].at, Duration(1000));
  EXPECT_LE(launcher_.spawned()[2].at - launcher_.spawned()[0].at, Duration(1250));
  json replicas = StoredReplicas();
  ASSERT_TRUE(replicas.is_array()) << replicas;
  for (const json& r : replicas) {
    if (r.value("name", "") == "pt-worker-0") {
      EXPECT_EQ(r.value("restarts", -1), 0) << r;
    }
  }
}

TEST_F(RunnerTest, OnFailurePolicyRestartsInPlaceAfterTheBackOff) {
  launcher_.Script("pt-master-0", {{Duration(30000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(1000), 1}, {Duration(1000), 1}, {Duration(1000), 0}});
  RunResult result = Run(PyTorch(1, "OnFailure"));
  EXPECT_TRUE(result.succeeded);
  ASSERT_EQ(launcher_.Attempts("pt-worker-0"), 3);
  ASSERT_EQ(launcher_.spawned().size(), 4u);
  // Exits at 1 s and 3 s; back-offs 1 s then 2 s, on the monotonic clock.
  EXPECT_EQ(launcher_.spawned()[2].at - launcher_.spawned()[0].at, Duration(2000));
  EXPECT_EQ(launcher_.spawned()[3].at - launcher_.spawned()[0].at, Duration(5000));
  json replicas = StoredReplicas();
  ASSERT_TRUE(replicas.is_array()) << replicas;
  for (const json& r : replicas) {
    if (r.value("name", "") == "pt-worker-0") {
      EXPECT_EQ(r.value("restarts", -1), 2) << r;
    }
  }
}

// Gang restart (issue #38): a retried failure stops every replica (SIGTERM, SIGKILL after the
// grace period), and the next attempt starts only once every replica of the first is gone, on
// fresh ports, with its attempt in the env; the job records the attempt and counts one retry.
TEST_F(RunnerTest, GangRestartStopsEveryReplicaBeforeAnyStartsOnFreshPorts) {
  options_.grace = Duration(5000);
  launcher_.Script("pt-master-0",
                   {{Duration(100000), 0, /*ignores_sigterm=*/true}, {Duration(3000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(1000), 1}, {Duration(2000), 0}});
  launcher_.Script("pt-worker-1", {{Duration(100000), 0}, {Duration(2000), 0}});
  std::string yaml = PyTorch(2, "OnFailure", "{backoffLimit: 1}");
  yaml.replace(yaml.find("metadata: {name: pt, namespace: ns}"),
               std::string("metadata: {name: pt, namespace: ns}").size(),
               "metadata: {name: pt, namespace: ns, annotations: "
               "{trainctl.dev/restart-scope: Gang}}");
  RunResult result = Run(yaml);
  EXPECT_TRUE(result.succeeded);
  EXPECT_EQ(result.job["metadata"]["annotations"].value("trainctl.dev/restart-attempt", ""), "1");
  ASSERT_EQ(launcher_.spawned().size(), 6u);
  auto env_of = [](const LaunchSpec& spec, const std::string& var) {
    for (const std::string& e : spec.env)
      if (e.rfind(var + "=", 0) == 0) return e.substr(var.size() + 1);
    return std::string();
  };
  // The first attempt's master ignores SIGTERM: it is killed at 1 s + 5 s, and nothing of the
  // second attempt starts before.
  EXPECT_EQ(SignalsTo("pt-master-0"), (std::vector<std::pair<int, Duration>>{
                                          {SIGTERM, Duration(1000)}, {SIGKILL, Duration(6000)}}));
  MonoTime origin = launcher_.spawned()[0].at;
  std::set<std::string> ports[2];
  for (size_t i = 0; i < launcher_.spawned().size(); ++i) {
    const auto& s = launcher_.spawned()[i];
    int attempt = i < 3 ? 0 : 1;
    SCOPED_TRACE(s.replica + " spawn " + std::to_string(i));
    EXPECT_EQ(env_of(s.spec, "TRAINCTL_RESTART_ATTEMPT"), std::to_string(attempt));
    if (attempt == 1) {
      EXPECT_GE(s.at - origin, Duration(6000));
    }
    ports[attempt].insert(env_of(s.spec, "MASTER_PORT"));
  }
  ASSERT_EQ(ports[0].size(), 1u);
  ASSERT_EQ(ports[1].size(), 1u);
  EXPECT_NE(*ports[0].begin(), *ports[1].begin()) << "a fresh rendezvous port per attempt";
  // One retry for the whole gang, no in-place restart of the failed worker.
  EXPECT_EQ(launcher_.Attempts("pt-worker-0"), 2);
  for (const json& r : StoredReplicas())
    EXPECT_EQ(r["labels"].value("trainctl.dev/restart-attempt", ""), "1") << r;
  std::ifstream events(root_ / "ns" / "pytorchjobs" / "pt" / "events.jsonl");
  std::string line, gang;
  while (std::getline(events, line))
    if (line.find("GangRestart") != std::string::npos) gang += line;
  EXPECT_NE(gang.find("restarting every replica as attempt 1 because Worker replica 0 failed "
                      "with exit code 1"),
            std::string::npos)
      << gang;
}

// A PyTorchJob "pt" (as PyTorch) with these annotations (a YAML flow mapping's content).
std::string Annotated(std::string yaml, const std::string& annotations) {
  const std::string plain = "metadata: {name: pt, namespace: ns}";
  yaml.replace(yaml.find(plain), plain.size(),
               "metadata: {name: pt, namespace: ns, annotations: {" + annotations + "}}");
  return yaml;
}

TEST_F(RunnerTest, TheDeadlineNoticeIsToldItsSecondsBeforeTheStop) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(100000), 0}});
  fs::path folder = root_ / "ns" / "pytorchjobs" / "pt" / "notice" / "pt-worker-0";
  std::string at_5s = "unread", at_7s = "unread";
  auto read = [&](std::string* out) {
    std::ifstream in(folder / "notice.json");
    *out = in ? std::string(std::istreambuf_iterator<char>(in), {}) : "";
  };
  launcher_.At(Duration(5000), [&] { read(&at_5s); });
  launcher_.At(Duration(7000), [&] { read(&at_7s); });
  RunResult result = Run(Annotated(PyTorch(1, "Never", "{activeDeadlineSeconds: 10}"),
                                   "trainctl.dev/checkpoint-notice-seconds: \"4\", "
                                   "trainctl.dev/checkpoint-signal: SIGUSR1"));
  EXPECT_FALSE(result.succeeded);
  EXPECT_EQ(at_5s, "") << "no notice before deadline − 4 s";
  std::optional<api::Notice> notice = api::DecodeNotice(at_7s.substr(0, at_7s.find('\n')));
  ASSERT_TRUE(notice) << at_7s;
  EXPECT_EQ(notice->reason, "ActiveDeadline");
  EXPECT_EQ(notice->stop_at, Time(std::chrono::seconds(1700000010)));
  // The signal at the notice, SIGTERM at the deadline: the notice came 4 s before the stop.
  for (const char* replica : {"pt-master-0", "pt-worker-0"}) {
    std::vector<std::pair<int, Duration>> signals = SignalsTo(replica);
    ASSERT_GE(signals.size(), 2u) << replica;
    EXPECT_EQ(signals[0].first, SIGUSR1);
    EXPECT_GE(signals[0].second, Duration(6000));
    EXPECT_LE(signals[0].second, Duration(6300));
    EXPECT_EQ(signals[1].first, SIGTERM);
    EXPECT_GE(signals[1].second, Duration(10000));
    EXPECT_LE(signals[1].second, Duration(10300));
  }
  const LaunchSpec& worker = launcher_.spawned()[1].spec;
  EXPECT_NE(std::find(worker.env.begin(), worker.env.end(),
                      "TRAINCTL_NOTICE_FILE=" + (folder / "notice.json").string()),
            worker.env.end());
  EXPECT_NE(std::find(worker.env.begin(), worker.env.end(),
                      "TRAINCTL_NOTICE_DONE_FILE=" + (folder / "done").string()),
            worker.env.end());
  EXPECT_EQ(result.job["metadata"]["annotations"].value("trainctl.dev/checkpoint-notice", ""),
            at_7s.substr(0, at_7s.find('\n')))
      << "recorded on the job";
}

TEST_F(RunnerTest, AGangRestartWithANoticeStopsOnceEveryReplicaIsDone) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}, {Duration(2000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(1000), 1}, {Duration(2000), 0}});
  launcher_.Script("pt-worker-1", {{Duration(100000), 0}, {Duration(2000), 0}});
  fs::path notices = root_ / "ns" / "pytorchjobs" / "pt" / "notice";
  bool told_before_done = false;
  launcher_.At(Duration(3000), [&] {
    told_before_done = fs::exists(notices / "pt-master-0" / "notice.json") &&
                       fs::exists(notices / "pt-worker-1" / "notice.json") &&
                       !fs::exists(notices / "pt-worker-0" / "notice.json");
    for (const char* r : {"pt-master-0", "pt-worker-1"}) std::ofstream(notices / r / "done");
  });
  RunResult result = Run(Annotated(PyTorch(2, "OnFailure"),
                                   "trainctl.dev/restart-scope: Gang, "
                                   "trainctl.dev/checkpoint-notice-seconds: \"30\""));
  EXPECT_TRUE(result.succeeded);
  EXPECT_TRUE(told_before_done) << "the replicas alive were told, the failed one was not";
  std::vector<std::pair<int, Duration>> signals = SignalsTo("pt-master-0");
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0].first, SIGTERM);
  EXPECT_GE(signals[0].second, Duration(3000)) << "held for the notice";
  EXPECT_LE(signals[0].second, Duration(3300)) << "and stopped once both were done, not at 31 s";
  EXPECT_EQ(launcher_.Attempts("pt-worker-0"), 2);
  EXPECT_EQ(result.job["metadata"]["annotations"].value("trainctl.dev/restart-attempt", ""), "1");
  EXPECT_FALSE(result.job["metadata"]["annotations"].contains("trainctl.dev/checkpoint-notice"))
      << "attempt 1 runs without a notice";
  EXPECT_FALSE(fs::exists(notices / "pt-master-0" / "notice.json"));
}

TEST_F(RunnerTest, NonRetryableExitFailsTheJobAndStopsTheOthersWithinTheGracePeriod) {
  options_.grace = Duration(5000);
  launcher_.Script("pt-master-0", {{Duration(100000), 0, /*ignores_sigterm=*/true}});
  launcher_.Script("pt-worker-0", {{Duration(1000), 1}});
  RunResult result = Run(PyTorch(1, "ExitCode"));
  EXPECT_FALSE(result.succeeded);
  EXPECT_EQ(Condition(result.job, "Failed", "message"),
            "job \"pt\" is failing because \"Worker\" replica(s) failed.\n"
            "First failure: pt-worker-0 (Worker 0) exited with code 1, at " +
                FormatRfc3339(Time(std::chrono::seconds(1700000001))) + ".");
  EXPECT_EQ(launcher_.Attempts("pt-worker-0"), 1);
  EXPECT_EQ(SignalsTo("pt-master-0"), (std::vector<std::pair<int, Duration>>{
                                          {SIGTERM, Duration(1000)}, {SIGKILL, Duration(6000)}}));
}

TEST_F(RunnerTest, ActiveDeadlineFailsTheJobOnTime) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(100000), 0}});
  RunResult result = Run(PyTorch(1, "Never", "{activeDeadlineSeconds: 3}"));
  EXPECT_FALSE(result.succeeded);
  EXPECT_NE(Condition(result.job, "Failed", "message").find("deadline"), std::string::npos)
      << result.job["status"];
  std::vector<std::pair<int, Duration>> signals = SignalsTo("pt-worker-0");
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0].first, SIGTERM);
  EXPECT_GE(signals[0].second, Duration(3000));
  EXPECT_LE(signals[0].second, Duration(3100));
}

TEST_F(RunnerTest, BackoffLimitEndsRestartsWithTheLimitMessage) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(500), 1}});
  RunResult result = Run(PyTorch(1, "OnFailure", "{backoffLimit: 2}"));
  EXPECT_FALSE(result.succeeded);
  EXPECT_EQ(launcher_.Attempts("pt-worker-0"), 3);
  EXPECT_NE(Condition(result.job, "Failed", "message").find("backoff limit"), std::string::npos)
      << result.job["status"];
}

TEST_F(RunnerTest, ReplicaThatCannotStartIsFailedWithExitCode127AndTheReason) {
  launcher_.Script("pt-worker-0", {{Duration(0), 0, false, /*fails_to_start=*/true}});
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  RunResult result = Run(PyTorch(1));
  EXPECT_FALSE(result.succeeded);
  json replicas = StoredReplicas();
  bool seen = false;
  for (const json& r : replicas) {
    if (r.value("name", "") != "pt-worker-0") continue;
    seen = true;
    EXPECT_EQ(r.value("exitCode", 0), 127) << r;
    EXPECT_NE(r.value("message", "").find("failed"), std::string::npos) << r;
  }
  EXPECT_TRUE(seen) << replicas;
}

TEST_F(RunnerTest, AnExceptionBelowTheLoopIsAnErrorAndStopsTheReplicas) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(0), 0, false, false, /*throws=*/true}});
  StatusOr<RunResult> result = RunJob(Load(PyTorch(1)), options_, clock_, nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_NE(result.status().message().find("scripted failure spawning pt-worker-0"),
            std::string::npos)
      << result.status().message();
  EXPECT_EQ(SignalsTo("pt-master-0").size(), 0u);  // the fake group is dropped, not signalled
}

TEST_F(RunnerTest, AfterSuccessStragglersGetTheDrainPeriodThenAreStopped) {
  options_.drain = Duration(10000);
  launcher_.Script("pt-master-0", {{Duration(1000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(100000), 0}});
  RunResult result = Run(PyTorch(1));
  EXPECT_TRUE(result.succeeded);
  std::vector<std::pair<int, Duration>> signals = SignalsTo("pt-worker-0");
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0], (std::pair<int, Duration>{SIGTERM, Duration(11000)}));
}

TEST_F(RunnerTest, SigintStopsEveryReplicaAndRecordsWhy) {
  launcher_.Script("pt-master-0", {{Duration(100000), 0}});
  launcher_.Script("pt-worker-0", {{Duration(100000), 0}});
  launcher_.At(Duration(2000), [] { raise(SIGINT); });
  RunResult result = Run(PyTorch(1));
  EXPECT_EQ(result.interrupted_by, SIGINT);
  EXPECT_EQ(Condition(result.job, "Failed", "message"),
            "PyTorchJob pt was stopped by SIGINT before it finished.");
  EXPECT_EQ(SignalsTo("pt-master-0"),
            (std::vector<std::pair<int, Duration>>{{SIGTERM, Duration(2000)}}));
  EXPECT_EQ(SignalsTo("pt-worker-0"),
            (std::vector<std::pair<int, Duration>>{{SIGTERM, Duration(2000)}}));
}

}  // namespace
}  // namespace trainctl::local
