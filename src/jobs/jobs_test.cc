// Unit tests for the job data layer: the same questions asked of a local state folder
// (LocalJobSource) and of an API server (ClusterJobSource over kube::FakeApi) give the same
// answers, with the first failure decided by the engine's one rule.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "jobs/cluster_source.h"
#include "jobs/history_capture.h"
#include "jobs/history_reader.h"
#include "jobs/local_source.h"
#include "jobs/local_sweep.h"
#include "jobs/why.h"
#include "kube/fake_api.h"
#include "local/job_view.h"

namespace trainctl::jobs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kFailedMessage =
    "PyTorchJob pt is failed because 1 Worker replica(s) failed.\n"
    "First failure: pt-worker-1 (Worker 1) exited with code 3.\nLast output:\nboom";

json FailedJob(const std::string& uid = "uid-1") {
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata",
           {{"name", "pt"},
            {"namespace", "default"},
            {"uid", uid},
            {"creationTimestamp", "2026-11-26T10:00:00Z"}}},
          {"spec",
           {{"pytorchReplicaSpecs",
             {{"Worker",
               {{"replicas", 2},
                {"template",
                 {{"spec",
                   {{"containers", json::array({{{"name", "pytorch"}, {"image", "x"}}})},
                    {"volumes", json::array({{{"name", "ws"},
                                              {"persistentVolumeClaim",
                                               {{"claimName", "pt-workspace"}}}}})}}}}}}}}}}},
          {"status",
           {{"conditions", json::array({{{"type", "Created"}, {"status", "True"}},
                                        {{"type", "Failed"},
                                         {"status", "True"},
                                         {"reason", "PyTorchJobFailed"},
                                         {"message", kFailedMessage}}})}}}};
}

TEST(WhyTest, FirstFailureNameIsTheReplicaTheConditionNames) {
  EXPECT_EQ(FirstFailureName(FailedJob()), "pt-worker-1");
  EXPECT_EQ(FirstFailureName(json::object()), "");
  json running = FailedJob();
  running["status"]["conditions"] = json::array({{{"type", "Running"}, {"status", "True"}}});
  EXPECT_EQ(FirstFailureName(running), "");
}

class LocalSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("jobs_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    local::JobDir dir(root_, {api::Kind::kPyTorchJob, "default", "pt"});
    ASSERT_TRUE(dir.Create().ok());
    ASSERT_TRUE(dir.WriteJob(FailedJob()).ok());
    // worker-0 failed later than worker-1; the record order must not decide.
    ASSERT_TRUE(dir.WriteReplicas(json::array({{{"name", "pt-worker-0"},
                                                {"type", "Worker"},
                                                {"index", 0},
                                                {"phase", "Failed"},
                                                {"state", "Failed"},
                                                {"exitCode", 1},
                                                {"finishTime", "2026-11-26T10:00:09Z"}},
                                               {{"name", "pt-worker-1"},
                                                {"type", "Worker"},
                                                {"index", 1},
                                                {"phase", "Failed"},
                                                {"state", "Failed"},
                                                {"exitCode", 3},
                                                {"finishTime", "2026-11-26T10:00:05Z"}}}))
                    .ok());
    std::ofstream(dir.LogPath("pt-worker-0")) << "w0 line\n";
    std::ofstream(dir.LogPath("pt-worker-1")) << "step=1 loss=2.5\nboom\n";
    ASSERT_TRUE(
        dir.AppendEvent({{"type", "Warning"}, {"reason", "Failed"}, {"message", "m"}}).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_;
  FakeClock clock_{*ParseRfc3339("2026-11-26T10:01:00Z")};
};

TEST_F(LocalSourceTest, ListGetAndDescribeAnswerFromTheStateFolder) {
  LocalJobSource source(root_, "default", clock_);
  std::vector<std::string> notes;
  auto note = [&](const std::string& n) { notes.push_back(n); };
  StatusOr<std::vector<json>> all = source.List({}, note);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(JobState((*all)[0]), "Failed");
  EXPECT_TRUE(source.List({api::Kind::kTFJob, ""}, note)->empty());
  EXPECT_TRUE(notes.empty());

  StatusOr<JobDetail> detail = source.Describe({std::nullopt, "pt"});
  ASSERT_TRUE(detail.ok()) << detail.status().message();
  ASSERT_FALSE(detail->failure.is_null());
  EXPECT_EQ(detail->failure["name"], "pt-worker-1")
      << "the earliest failing end, the engine's rule";
  EXPECT_EQ(detail->failure["exitCode"], 3);
  EXPECT_EQ(detail->failure["lastLogLines"], json::array({"step=1 loss=2.5", "boom"}));
  EXPECT_EQ(detail->replicas[1]["logFile"], root_ + "/default/pytorchjobs/pt/logs/pt-worker-1.log");
  EXPECT_EQ(detail->events.size(), 1u);
  ASSERT_EQ(detail->workspaces.size(), 1u);
  EXPECT_EQ(detail->workspaces[0]["claim"], "pt-workspace");

  json doc = DetailDocument(*detail, source.name());
  EXPECT_EQ(doc["source"], "local");
  EXPECT_EQ(doc["why"]["firstFailure"], JobWhy(FailedJob())["firstFailure"]);
  EXPECT_EQ(doc["runner"]["active"], false);
  EXPECT_EQ(doc["logDir"], root_ + "/default/pytorchjobs/pt/logs");
  // The failure the condition names and the failure the records give are one replica.
  EXPECT_EQ(doc["failure"]["name"], FirstFailureName(doc["job"]));
}

TEST_F(LocalSourceTest, MissingAndAmbiguousJobsAreErrorsThatSayWhere) {
  LocalJobSource source(root_, "default", clock_);
  StatusOr<json> missing = source.Get({std::nullopt, "nope"});
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("\"nope\" not found in namespace default of " + root_),
            std::string::npos);
  local::JobDir other(root_, {api::Kind::kTFJob, "default", "pt"});
  ASSERT_TRUE(other.Create().ok());
  json tf = FailedJob();
  tf["kind"] = "TFJob";
  ASSERT_TRUE(other.WriteJob(tf).ok());
  StatusOr<json> two = source.Get({std::nullopt, "pt"});
  ASSERT_EQ(two.status().code(), StatusCode::kInvalid);
  EXPECT_NE(two.status().message().find("give the kind"), std::string::npos);
  EXPECT_TRUE(source.Get({api::Kind::kTFJob, "pt"}).ok());
  EXPECT_EQ(LocalJobSource(root_, "other", clock_).Get({std::nullopt, "pt"}).status().code(),
            StatusCode::kNotFound);
}

TEST_F(LocalSourceTest, LogsGiveWholeLinesPerReplica) {
  LocalJobSource source(root_, "default", clock_);
  StatusOr<json> job = source.Get({std::nullopt, "pt"});
  ASSERT_TRUE(job.ok());
  std::vector<std::string> got;
  auto sink = [&](const std::string& replica, std::string_view line) {
    got.push_back(replica + "|" + std::string(line));
  };
  ASSERT_TRUE(source.Logs(*job, {}, sink, [](const std::string&) {}).ok());
  EXPECT_EQ(got, (std::vector<std::string>{"worker-0|w0 line", "worker-1|step=1 loss=2.5",
                                           "worker-1|boom"}));
  got.clear();
  ASSERT_TRUE(source.Logs(*job, {"pt-worker-1", false}, sink, [](const std::string&) {}).ok());
  EXPECT_EQ(got.size(), 2u);
  Status none = source.Logs(*job, {"master-0", false}, sink, [](const std::string&) {});
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("no logs for replica \"master-0\""), std::string::npos);
}

TEST_F(LocalSourceTest, MetricsAreTheRecordsOfTheMetricsReplica) {
  LocalJobSource source(root_, "default", clock_);
  StatusOr<json> job = source.Get({std::nullopt, "pt"});
  ASSERT_TRUE(job.ok());
  StatusOr<json> none = source.Metrics(*job, "");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ((*none)["replica"], "worker-0") << "no Master: the first Worker is rank 0";
  EXPECT_TRUE((*none)["series"].empty());
  local::JobDir dir(root_, {api::Kind::kPyTorchJob, "default", "pt"});
  ASSERT_TRUE(dir.AppendMetricRecords({{{"step", 1}, {"values", {{"loss", 2.5}}}},
                                       {{"step", 2}, {"values", {{"loss", 2.0}}}}})
                  .ok());
  StatusOr<json> two = source.Metrics(*job, "");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)["series"]["loss"]["value"], json::array({2.5, 2.0}));
  json off = *job;
  off["metadata"]["annotations"]["trainctl.dev/metrics"] = "off";
  EXPECT_EQ(source.Metrics(off, "").status().code(), StatusCode::kNotFound);
  // Another rank's curve comes from its log, read now (metrics off or not).
  StatusOr<json> rank1 = source.Metrics(off, "worker-1");
  ASSERT_TRUE(rank1.ok()) << rank1.status().message();
  EXPECT_EQ((*rank1)["replica"], "worker-1");
  EXPECT_EQ((*rank1)["series"]["loss"]["value"], json::array({2.5}));
  EXPECT_EQ(source.Metrics(*job, "master-0").status().code(), StatusCode::kNotFound);
}

TEST(WholeLinesTest, AChunkEndsAtALineEnd) {
  LogChunk c = WholeLines("a\nb\nparti", 10, 30);
  EXPECT_EQ(c.text, "a\nb\n");
  EXPECT_EQ(c.next, 14u);
  EXPECT_EQ(WholeLines("partial", 0, 7).text, "") << "the last line is not complete yet";
  EXPECT_EQ(WholeLines("partial", 0, 7).next, 0u);
  EXPECT_EQ(WholeLines("0123456789", 0, 100).text, "0123456789")
      << "one line longer than the window";
}

TEST_F(LocalSourceTest, ReadLogResumesFromAnOffset) {
  LocalJobSource source(root_, "default", clock_);
  StatusOr<json> job = source.Get({std::nullopt, "pt"});
  ASSERT_TRUE(job.ok());
  StatusOr<LogChunk> first = source.ReadLog(*job, "worker-1", 0, 10);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->text, "step=1 los") << "one line longer than 10 bytes";
  StatusOr<LogChunk> all = source.ReadLog(*job, "worker-1", 0, 1 << 20);
  EXPECT_EQ(all->text, "step=1 loss=2.5\nboom\n");
  StatusOr<LogChunk> rest = source.ReadLog(*job, "worker-1", 16, 1 << 20);
  EXPECT_EQ(rest->text, "boom\n");
  EXPECT_EQ(rest->next, rest->size);
  EXPECT_EQ(source.ReadLog(*job, "master-0", 0, 10).status().code(), StatusCode::kNotFound);
}

// Every file under `root` (contents and modification time) and every folder.
std::map<std::string, std::pair<std::string, fs::file_time_type>> FilesUnder(
    const std::string& root) {
  std::map<std::string, std::pair<std::string, fs::file_time_type>> out;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
    std::string text = "(folder)";
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    out[e.path().string()] = {text, fs::last_write_time(e.path())};
  }
  return out;
}

// Beside the fixture's finished "pt": "expired" (Succeeded at 10:00:00 with a 10 s TTL; the
// clock says 10:01:00) and "lost" (Running, its runner gone: runner.lock names pid 4242 and
// nobody holds it).
class SweepTest : public LocalSourceTest {
 protected:
  void SetUp() override {
    LocalSourceTest::SetUp();
    json expired = FailedJob("uid-expired");
    expired["metadata"]["name"] = "expired";
    expired["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 10}};
    expired["status"] = {{"conditions", json::array({{{"type", "Succeeded"},
                                                      {"status", "True"},
                                                      {"reason", "PyTorchJobSucceeded"},
                                                      {"message", "done"}}})},
                         {"completionTime", "2026-11-26T10:00:00Z"}};
    ASSERT_TRUE(Write("expired", expired, json::array()).ok());
    json lost = FailedJob("uid-lost");
    lost["metadata"]["name"] = "lost";
    lost["status"] = {{"conditions", json::array({{{"type", "Running"}, {"status", "True"}}})}};
    ASSERT_TRUE(Write("lost", lost,
                      json::array({{{"name", "lost-worker-0"},
                                    {"type", "Worker"},
                                    {"index", 0},
                                    {"phase", "Running"},
                                    {"state", "Running"},
                                    {"pid", 99999}}}))
                    .ok());
    std::ofstream(Dir("lost").path() + "/runner.lock") << "4242\n";
  }

  local::JobDir Dir(const std::string& name) {
    return local::JobDir(root_, {api::Kind::kPyTorchJob, "default", name});
  }
  Status Write(const std::string& name, const json& job, const json& replicas) {
    local::JobDir dir = Dir(name);
    TRAINCTL_RETURN_IF_ERROR(dir.Create());
    TRAINCTL_RETURN_IF_ERROR(dir.WriteJob(job));
    return dir.WriteReplicas(replicas);
  }
  // A history next to the state folder, opened when the sweep asks.
  HistoryOpener History() {
    return [this]() {
      if (!history_)
        history_ = std::move(history::HistoryStore::Open(root_ + ".history.db")).value();
      return history_.get();
    };
  }
  void TearDown() override {
    history_.reset();
    for (const char* suffix : {".history.db", ".history.db-wal", ".history.db-shm"})
      fs::remove(root_ + suffix);
    LocalSourceTest::TearDown();
  }

  std::unique_ptr<history::HistoryStore> history_;
};

TEST_F(SweepTest, ListGetDescribeLogsAndMetricsWriteNothing) {
  auto before = FilesUnder(root_);
  LocalJobSource source(root_, std::nullopt, clock_);
  StatusOr<std::vector<json>> listed = source.List({}, [](const std::string&) {});
  ASSERT_TRUE(listed.ok());
  std::map<std::string, std::string> states;
  for (const json& job : *listed) states[job["metadata"]["name"]] = JobState(job);
  EXPECT_EQ(states, (std::map<std::string, std::string>{
                        {"expired", "Succeeded"}, {"lost", "Failed"}, {"pt", "Failed"}}))
      << "the expired job is listed until the sweep removes it; the lost one shows as Failed";

  StatusOr<JobDetail> lost = source.Describe({std::nullopt, "lost"});
  ASSERT_TRUE(lost.ok()) << lost.status().message();
  EXPECT_EQ(lost->job["status"]["conditions"].back()["reason"], local::kRunnerLostReason);
  EXPECT_NE(lost->job["status"]["conditions"].back()["message"].get<std::string>().find("4242"),
            std::string::npos);
  EXPECT_EQ(lost->replicas[0]["state"], "Lost");
  ASSERT_FALSE(lost->events.empty());
  EXPECT_EQ(lost->events.back()["reason"], local::kRunnerLostReason);
  ASSERT_TRUE(source.Get({std::nullopt, "expired"}).ok());
  ASSERT_TRUE(source.Describe({std::nullopt, "expired"}).ok());
  StatusOr<json> job = source.Get({std::nullopt, "pt"});
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(
      source
          .Logs(
              *job, {}, [](const std::string&, std::string_view) {}, [](const std::string&) {})
          .ok());
  ASSERT_TRUE(source.Metrics(*job, "").ok());
  EXPECT_FALSE(source.Settling({std::nullopt, "lost"}));

  EXPECT_EQ(FilesUnder(root_), before) << "a read changed the state folder";
  EXPECT_FALSE(history_) << "a read opened the history";
}

TEST_F(SweepTest, TheSweepRecordsLostRunnersAndHistoryThenRemovesWhatItsTtlEnded) {
  // A job whose runner holds its lock is the runner's: the sweep leaves it as it is.
  json held = FailedJob("uid-held");
  held["metadata"]["name"] = "held";
  held["status"] = {{"conditions", json::array({{{"type", "Running"}, {"status", "True"}}})}};
  ASSERT_TRUE(Write("held", held, json::array()).ok());
  local::JobDir runner = Dir("held");
  ASSERT_TRUE(runner.AcquireRunnerLock().ok());
  auto held_before = FilesUnder(Dir("held").path());

  SweepReport report = SweepLocalJobs(root_, std::nullopt, History(), clock_);
  EXPECT_TRUE(report.warnings.empty()) << report.warnings[0];
  auto names = [](const std::vector<local::JobKey>& keys) {
    std::set<std::string> out;
    for (const local::JobKey& k : keys) out.insert(k.name);
    return out;
  };
  EXPECT_EQ(names(report.lost), (std::set<std::string>{"lost"}));
  EXPECT_EQ(names(report.recorded), (std::set<std::string>{"expired", "lost", "pt"}));
  EXPECT_EQ(names(report.removed), (std::set<std::string>{"expired"}));

  EXPECT_FALSE(fs::exists(Dir("expired").path())) << "its TTL had passed";
  ASSERT_TRUE(history_);
  EXPECT_TRUE(history_->Has("uid-expired")) << "recorded before it went";
  EXPECT_TRUE(history_->Has("uid-1"));
  StatusOr<json> stored = Dir("lost").ReadJob();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["status"]["conditions"].back()["reason"], local::kRunnerLostReason);
  EXPECT_EQ((*Dir("lost").ReadReplicas())[0]["state"], "Lost");
  EXPECT_EQ(Dir("lost").ReadEvents()->back()["reason"], local::kRunnerLostReason);
  StatusOr<std::optional<json>> record = history_->Get("uid-lost");
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ(JobState((**record)["job"]), "Failed") << "recorded as the folder now says";

  EXPECT_EQ(FilesUnder(Dir("held").path()), held_before);
  EXPECT_FALSE(history_->Has("uid-held"));

  // Done once: the next sweep finds nothing to do and writes nothing.
  auto after = FilesUnder(root_);
  SweepReport again = SweepLocalJobs(root_, std::nullopt, History(), clock_);
  EXPECT_TRUE(again.lost.empty() && again.recorded.empty() && again.removed.empty());
  EXPECT_EQ(FilesUnder(root_), after);
  runner.ReleaseRunnerLock();
}

TEST(DecideSweepTest, EachStepHasItsCondition) {
  Time now = *ParseRfc3339("2026-11-26T10:01:00Z");
  LocalJobSnapshot seen;
  seen.job = FailedJob();
  EXPECT_EQ(DecideSweep(seen, /*has_record=*/true, now), SweepDecision{});
  EXPECT_EQ(DecideSweep(seen, false, now), (SweepDecision{false, true, false}));
  seen.job["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 60}};
  seen.job["status"]["completionTime"] = "2026-11-26T10:00:00Z";
  EXPECT_EQ(DecideSweep(seen, true, now), (SweepDecision{false, false, true}))
      << "60 s after it finished";
  EXPECT_EQ(DecideSweep(seen, true, now - std::chrono::seconds(1)), SweepDecision{});
  seen.runner_lost = true;
  EXPECT_EQ(DecideSweep(seen, false, now), (SweepDecision{true, true, true}));
  seen.runner_active = true;
  EXPECT_EQ(DecideSweep(seen, false, now), SweepDecision{}) << "the runner's to do";
  seen.runner_active = false;
  seen.runner_lost = false;
  seen.job["status"]["conditions"] = json::array({{{"type", "Running"}, {"status", "True"}}});
  EXPECT_EQ(DecideSweep(seen, false, now), SweepDecision{}) << "not finished";
}

// The same job on an API server: pods stand in for the replica records.
class ClusterSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto api = std::make_unique<kube::FakeApi>();
    api_ = api.get();
    api_->ServeLists(true);
    api_->Seed("/apis/kubeflow.org/v1/namespaces/default/pytorchjobs/pt", FailedJob());
    for (int i = 0; i < 2; ++i) {
      std::string name = "pt-worker-" + std::to_string(i);
      api_->Seed(
          "/api/v1/namespaces/default/pods/" + name,
          {{"metadata",
            {{"name", name},
             {"namespace", "default"},
             {"labels",
              {{"training.kubeflow.org/replica-type", "worker"},
               {"training.kubeflow.org/replica-index", std::to_string(i)}}},
             {"ownerReferences",
              json::array({{{"uid", "uid-1"}, {"controller", true}, {"kind", "PyTorchJob"}}})}}},
           {"spec", {{"containers", json::array({{{"name", "pytorch"}}})}}},
           {"status",
            {{"phase", "Failed"},
             {"containerStatuses",
              json::array(
                  {{{"name", "pytorch"},
                    {"restartCount", 0},
                    {"state",
                     {{"terminated", {{"exitCode", i == 0 ? 1 : 3}, {"reason", "Error"}}}}}}})}}}});
    }
    api_->SetLog("/api/v1/namespaces/default/pods/pt-worker-1", "step=1 loss=2.5\nboom\n");
    api_->SetLog("/api/v1/namespaces/default/pods/pt-worker-0", "w0 line\n");
    kube::ClientOptions options;
    options.qps = 0;
    client_ = std::make_unique<kube::Client>(std::move(api), options, &clock_);
  }

  FakeClock clock_{*ParseRfc3339("2026-11-26T10:01:00Z")};
  kube::FakeApi* api_ = nullptr;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(ClusterSourceTest, DescribeGivesTheSameFailureAsTheLocalSource) {
  ClusterJobSource source(std::move(client_), "default", false, "https://test", clock_);
  std::vector<std::string> notes;
  StatusOr<std::vector<json>> all =
      source.List({}, [&](const std::string& n) { notes.push_back(n); });
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0]["kind"], "PyTorchJob");

  StatusOr<JobDetail> detail = source.Describe({std::nullopt, "pt"});
  ASSERT_TRUE(detail.ok()) << detail.status().message();
  EXPECT_TRUE(detail->warnings.empty());
  ASSERT_EQ(detail->replicas.size(), 2u);
  ASSERT_FALSE(detail->failure.is_null());
  EXPECT_EQ(detail->failure["name"], "pt-worker-1");
  EXPECT_EQ(detail->failure["exitCode"], 3);
  EXPECT_EQ(detail->failure["lastLogLines"], json::array({"step=1 loss=2.5", "boom"}));
  ASSERT_EQ(detail->workspaces.size(), 1u);
  EXPECT_FALSE(detail->workspaces[0].contains("path"));
  json doc = DetailDocument(*detail, source.name());
  EXPECT_EQ(doc["source"], "kubernetes");
  EXPECT_EQ(doc["server"], "https://test");
  EXPECT_EQ(doc["pods"], "training.kubeflow.org/job-name=pt");
}

TEST_F(ClusterSourceTest, MetricsAreReadFromTheMetricsReplicasLog) {
  ClusterJobSource source(std::move(client_), "default", false, "https://test", clock_);
  StatusOr<json> job = source.Get({std::nullopt, "pt"});
  ASSERT_TRUE(job.ok());
  api_->SetLog(
      "/api/v1/namespaces/default/pods/pt-worker-0",
      "2026-11-26T10:00:01.000000001Z step=1 loss=3\n2026-11-26T10:00:02Z step=2 loss=2\n");
  StatusOr<json> series = source.Metrics(*job, "");
  ASSERT_TRUE(series.ok()) << series.status().message();
  EXPECT_EQ((*series)["replica"], "worker-0");
  EXPECT_EQ((*series)["series"]["loss"]["value"], json::array({3.0, 2.0}));
  EXPECT_EQ((*series)["series"]["loss"]["time"][1], 1795687202.0) << "the kubelet's timestamps";
  std::vector<kube::HttpRequest> reads =
      api_->Requests("GET", "/api/v1/namespaces/default/pods/pt-worker-0/log");
  ASSERT_FALSE(reads.empty());
  EXPECT_NE(reads.back().path.find("timestamps=true"), std::string::npos) << reads.back().path;
}

TEST_F(ClusterSourceTest, LogsAndErrorsNameTheServer) {
  ClusterJobSource source(std::move(client_), "default", false, "https://test", clock_);
  StatusOr<json> missing = source.Get({std::nullopt, "nope"});
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("not found in namespace default on https://test"),
            std::string::npos);
  StatusOr<json> job = source.Get({api::Kind::kPyTorchJob, "pt"});
  ASSERT_TRUE(job.ok());
  std::vector<std::string> got;
  ASSERT_TRUE(source
                  .Logs(
                      *job, {},
                      [&](const std::string& r, std::string_view line) {
                        got.push_back(r + "|" + std::string(line));
                      },
                      [](const std::string&) {})
                  .ok());
  EXPECT_EQ(got, (std::vector<std::string>{"worker-0|w0 line", "worker-1|step=1 loss=2.5",
                                           "worker-1|boom"}));
  Status none = source.Logs(
      *job, {"master-0", false}, [](const std::string&, std::string_view) {},
      [](const std::string&) {});
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
}

// What the operator's caches know of the same job (recording/history_snapshot.h makes this).
ClusterSnapshot SnapshotOfFailedJob() {
  ClusterSnapshot snapshot;
  snapshot.job = FailedJob();
  std::vector<json> rows;
  for (int i = 0; i < 2; ++i) {
    engine::ReplicaObservation o;
    o.name = "pt-worker-" + std::to_string(i);
    o.type = "Worker";
    o.index = i;
    o.phase = engine::Phase::kFailed;
    o.exit_code = i == 0 ? 1 : 3;
    o.end_reason = "Error";
    rows.push_back(ReplicaRowFromObservation(o, "node-" + std::to_string(i)));
    snapshot.targets.push_back(
        {"worker-" + std::to_string(i), o.name, "pytorch", true, 0, "Failed"});
  }
  snapshot.replicas = SortedReplicaRows(std::move(rows));
  return snapshot;
}

TEST_F(ClusterSourceTest, ASnapshotRecordHasDescribesFailureWithoutListingAnything) {
  ClusterJobSource source(std::move(client_), "default", false, "https://test", clock_);
  StatusOr<JobDetail> detail = source.Describe({std::nullopt, "pt"});
  ASSERT_TRUE(detail.ok()) << detail.status().message();
  ClusterSnapshot snapshot = SnapshotOfFailedJob();
  snapshot.events = {
      EventRow("2026-11-26T10:00:30Z", "Warning", "PyTorchJobFailed", 2, "PyTorchJob/pt", "x")};
  snapshot.events_complete = true;
  size_t before = api_->Requests("GET", "").size();

  StatusOr<json> record = SnapshotRecord(source.client(), snapshot, clock_);
  ASSERT_TRUE(record.ok()) << record.status().message();
  for (const char* key : {"name", "exitCode", "lastLogLines", "message"})
    EXPECT_EQ((*record)["failure"][key], detail->failure[key]) << key;
  for (size_t i = 0; i < 2; ++i)
    for (const char* key : {"name", "state", "restarts", "exitCode"})
      EXPECT_EQ((*record)["replicas"][i][key], detail->replicas[i][key]) << i << " " << key;
  EXPECT_EQ((*record)["replicas"][1]["node"], "node-1");
  EXPECT_EQ((*record)["events"][0]["reason"], "PyTorchJobFailed (x2)");
  // Rank 0 (the metrics replica) and the failed replicas' log tails; nothing listed.
  EXPECT_EQ((*record)["logs"]["worker-1"]["tail"], "step=1 loss=2.5\nboom\n");
  EXPECT_EQ((*record)["logs"]["worker-0"]["tail"], "w0 line\n");
  std::vector<kube::HttpRequest> reads = api_->Requests("GET", "");
  for (size_t i = before; i < reads.size(); ++i)
    EXPECT_NE(reads[i].path.find("/log"), std::string::npos) << "only pods/log: " << reads[i].path;

  // Events the operator did not see all of are listed from the API; those it recorded that the
  // API has not stored yet are added.
  api_->Seed("/api/v1/namespaces/default/events/e1",
             {{"metadata", {{"name", "e1"}, {"namespace", "default"}}},
              {"involvedObject", {{"kind", "PyTorchJob"}, {"name", "pt"}, {"uid", "uid-1"}}},
              {"type", "Normal"},
              {"reason", "SuccessfulCreatePod"},
              {"message", "Created pod: pt-worker-0"},
              {"count", 1},
              {"lastTimestamp", "2026-11-26T10:00:01Z"}});
  snapshot.events.insert(snapshot.events.begin(),
                         EventRow("2026-11-26T10:00:01Z", "Normal", "SuccessfulCreatePod", 1,
                                  "PyTorchJob/pt", "Created pod: pt-worker-0"));
  snapshot.events_complete = false;
  before = api_->Requests("GET", "").size();
  record = SnapshotRecord(source.client(), snapshot, clock_);
  ASSERT_TRUE(record.ok()) << record.status().message();
  reads = api_->Requests("GET", "");
  size_t lists = 0;
  for (size_t i = before; i < reads.size(); ++i)
    lists += reads[i].path.find("/events") != std::string::npos;
  EXPECT_EQ(lists, 1u);
  ASSERT_EQ((*record)["events"].size(), 2u) << (*record)["events"].dump();
  EXPECT_EQ((*record)["events"][0]["reason"], "SuccessfulCreatePod");
  EXPECT_EQ((*record)["events"][1]["reason"], "PyTorchJobFailed (x2)");
}

TEST(ClusterViewTest, AnObservedReplicaReadsLikeItsPod) {
  engine::ReplicaObservation o;
  o.name = "pt-worker-0";
  o.type = "Worker";
  o.phase = engine::Phase::kPending;
  o.waiting_reason = "ImagePullBackOff";
  EXPECT_EQ(ReplicaRowFromObservation(o, "")["state"], "ImagePullBackOff");
  o.waiting_reason.clear();
  o.phase = engine::Phase::kFailed;
  o.end_reason = "OOMKilled";
  o.exit_code = 137;
  json row = ReplicaRowFromObservation(o, "n1");
  EXPECT_EQ(row["state"], "OOMKilled");
  EXPECT_EQ(row["exitCode"], 137);
  EXPECT_EQ(row["reason"], "OOMKilled");
  o.end_reason = "Error";
  EXPECT_EQ(ReplicaRowFromObservation(o, "")["state"], "Failed");
  o.terminating = true;
  EXPECT_EQ(ReplicaRowFromObservation(o, "")["state"], "Terminating");
  json sorted = SortedReplicaRows({{{"type", "Worker"}, {"index", 10}, {"name", "b"}},
                                   {{"type", "Worker"}, {"index", 2}, {"name", "a"}},
                                   {{"type", "Master"}, {"index", 0}, {"name", "m"}}});
  EXPECT_EQ(sorted[0]["name"], "m");
  EXPECT_EQ(sorted[1]["index"], 2) << "indexes sort as numbers";
}

TEST(HistoryReaderTest, TheOperatorsHistoryIsReadThroughTheServiceProxyWithTheToken) {
  StatusOr<std::string> prefix = ServiceProxyPrefix("trainctl-system/trainctl-dashboard:dashboard");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(*prefix,
            "/api/v1/namespaces/trainctl-system/services/http:trainctl-dashboard:dashboard/proxy");
  for (const char* bad : {"", "svc", "ns/svc", "/svc:80", "ns/:80", "ns/svc:", "a:1/b", "ns/s v:1"})
    EXPECT_EQ(ServiceProxyPrefix(bad).status().code(), StatusCode::kInvalid) << bad;
  history::Query q;
  q.namespace_ = "team a";
  q.text = "exit code 3";
  q.limit = 5;
  EXPECT_EQ(HistoryListTarget(q), "/api/v1/history?limit=5&offset=0&ns=team%20a&q=exit%20code%203");
  EXPECT_EQ(ParseHistoryPage(json::array()).status().code(), StatusCode::kInvalid);

  auto api = std::make_unique<kube::FakeApi>();
  kube::FakeApi* fake = api.get();
  fake->Seed(
      *prefix + "/api/v1/history",
      {{"items",
        json::array({{{"uid", "u1"}, {"name", "pt"}, {"state", "Failed"}, {"bytes", 2048}}})},
       {"total", 7}});
  fake->Seed(*prefix + "/api/v1/history/record", {{"uid", "u1"}, {"name", "pt"}});
  FakeClock clock(*ParseRfc3339("2026-11-26T10:00:00Z"));
  kube::ClientOptions options;
  options.qps = 0;
  options.max_retries = 0;
  OperatorHistoryReader reader(std::make_unique<kube::Client>(std::move(api), options, &clock),
                               *prefix, {{"X-Trainctl-Token", "t0k"}}, "the operator");
  StatusOr<HistoryPage> page = reader.List(q);
  ASSERT_TRUE(page.ok()) << page.status().message();
  ASSERT_EQ(page->rows.size(), 1u);
  EXPECT_EQ(page->rows[0].state, "Failed");
  EXPECT_EQ(page->rows[0].bytes, 2048u);
  EXPECT_EQ(page->total, 7u);
  StatusOr<std::optional<json>> record = reader.Get("u1");
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((**record)["name"], "pt");
  std::vector<kube::HttpRequest> sent = fake->Requests("GET", *prefix);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].path, *prefix + "/api/v1/history/record?uid=u1");
  for (const kube::HttpRequest& r : sent)
    EXPECT_EQ(r.headers,
              (std::vector<std::pair<std::string, std::string>>{{"X-Trainctl-Token", "t0k"}}));

  // A refusal names where it came from and keeps its code; a missing record is not an error.
  fake->Fail("GET", *prefix + "/api/v1/history", 403, "", "", 1);
  StatusOr<HistoryPage> refused = reader.List(q);
  EXPECT_EQ(refused.status().code(), StatusCode::kForbidden);
  EXPECT_EQ(refused.status().message().rfind("the operator: ", 0), 0u)
      << refused.status().message();
  fake->Fail("GET", *prefix + "/api/v1/history/record", 404, "NotFound", "no such record", 1);
  StatusOr<std::optional<json>> none = reader.Get("u2");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

}  // namespace
}  // namespace trainctl::jobs
