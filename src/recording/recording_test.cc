// The history-recording room: the events a job's operator recorded (JobEventLog), the snapshot
// made from the controller's caches, and the recorder's view of what the store holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/kinds.h"
#include "engine/plan.h"
#include "history/store.h"
#include "recording/history_recorder.h"
#include "recording/history_snapshot.h"
#include "recording/job_event_log.h"

namespace trainctl::recording {
namespace {

Time T0() { return Time(std::chrono::seconds(1700000000)); }

kube::EventInput JobEvent(const std::string& uid, const std::string& reason,
                          const std::string& message = "m") {
  kube::EventInput e;
  e.object = {api::kApiVersion, "PyTorchJob", "ns", "pt", uid};
  e.type = "Normal";
  e.reason = reason;
  e.message = message;
  return e;
}

TEST(JobEventLogTest, KeepsTheEventsOfJobsItSawFromTheirStart) {
  FakeClock clock(T0());
  JobEventLog log(&clock, 10);
  log.Add(JobEvent("old", "Early"));
  JobEventLog::Seen old = log.Rows("old");
  EXPECT_FALSE(old.complete) << "not opened: another leader may have recorded events";
  EXPECT_EQ(old.rows.size(), 1u) << "what is here is still given";
  log.Open("old");
  EXPECT_FALSE(log.Rows("old").complete) << "opened after its events began";

  log.Open("u1");
  clock.Advance(Duration(1000));
  log.Add(JobEvent("u1", "SuccessfulCreatePod", "Created pod: pt-worker-0"));
  log.Add(JobEvent("u1", "SuccessfulCreatePod", "Created pod: pt-worker-1"));
  log.Open("u1");  // a sync again before the status is stored: still complete
  clock.Advance(Duration(1000));
  log.Add(JobEvent("u1", "SuccessfulCreatePod", "Created pod: pt-worker-0"));
  kube::EventInput pod_event = JobEvent("u1", "Pulled");
  pod_event.object.api_version = "v1";
  log.Add(pod_event);
  JobEventLog::Seen seen = log.Rows("u1");
  ASSERT_TRUE(seen.complete);
  const std::vector<nlohmann::json>& rows = seen.rows;
  ASSERT_EQ(rows.size(), 2u) << "the repeat is one row; the pod's event is not the job's";
  EXPECT_EQ(rows[0]["message"], "Created pod: pt-worker-1");
  EXPECT_EQ(rows[1]["reason"], "SuccessfulCreatePod (x2)");
  EXPECT_EQ(rows[1]["time"], FormatRfc3339(T0() + Duration(2000)));
  EXPECT_EQ(rows[1]["object"], "PyTorchJob/pt");
  EXPECT_TRUE(log.Rows("u2").rows.empty()) << "no events seen";
  EXPECT_FALSE(log.Rows("u2").complete);

  for (int i = 0; i < 150; ++i) log.Add(JobEvent("u1", "R", std::to_string(i)));
  std::vector<nlohmann::json> capped = log.Rows("u1").rows;
  ASSERT_EQ(capped.size(), JobEventLog::kMaxRowsPerJob);
  EXPECT_EQ(capped.front()["message"], "50") << "the oldest rows went";
  EXPECT_EQ(capped.back()["message"], "149");
  log.Add(JobEvent("u1", "R", "50"));  // a repeat of the oldest row moves it last
  capped = log.Rows("u1").rows;
  ASSERT_EQ(capped.size(), JobEventLog::kMaxRowsPerJob);
  EXPECT_EQ(capped.front()["message"], "51");
  EXPECT_EQ(capped.back()["message"], "50");
  EXPECT_EQ(capped.back()["reason"], "R (x2)");
  for (int i = 0; i < 12; ++i) {
    clock.Advance(Duration(1));
    log.Open("j" + std::to_string(i));
  }
  EXPECT_LE(log.jobs(), 10u);
  EXPECT_FALSE(log.Rows("old").complete);
  EXPECT_TRUE(log.Rows("old").rows.empty()) << "the least recent job went first";
  EXPECT_TRUE(log.Rows("j11").complete);
  log.Forget("j11");
  EXPECT_FALSE(log.Rows("j11").complete);
}

TEST(HistoryRecorderTest, KnowsWhichJobsTheStoreHoldsFromOneRead) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("trainctl-recorded-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "h.db").string();
  FakeClock clock(T0());
  {
    std::unique_ptr<history::HistoryStore> before = history::HistoryStore::Open(path).value();
    nlohmann::json record = {{"uid", "u-old"}, {"name", "old"}, {"namespace", "ns"}};
    ASSERT_TRUE(before->Put(record, history::RowOf(record, ""), {}, T0()).ok());
  }
  HistoryRecorder recorder(history::HistoryStore::Open(path).value(), nullptr, {}, &clock, nullptr);
  EXPECT_TRUE(recorder.Recorded("u-old")) << "written by an earlier leader";
  EXPECT_FALSE(recorder.Recorded("u-new"));
  fs::remove_all(dir);
  EXPECT_TRUE(recorder.Recorded("u-old")) << "kept: the store is not asked again";
}

TEST(HistorySnapshotTest, RowsAndLogTargetsComeFromTheObservedReplicas) {
  nlohmann::json job = {{"metadata", {{"name", "pt"}, {"namespace", "ns"}, {"uid", "u"}}}};
  engine::ReplicaObservation worker, master;
  worker.name = "pt-worker-0";
  worker.type = "Worker";
  worker.phase = engine::Phase::kPending;
  master.name = "pt-master-0";
  master.type = "Master";
  master.phase = engine::Phase::kFailed;
  master.exit_code = 2;
  jobs::ClusterSnapshot s =
      MakeSnapshot(job, api::Kind::kPyTorchJob, {worker, master}, {{"pt-master-0", "node-a"}});
  EXPECT_EQ(s.job["kind"], "PyTorchJob");
  EXPECT_EQ(s.job["apiVersion"], "kubeflow.org/v1");
  ASSERT_EQ(s.replicas.size(), 2u);
  EXPECT_EQ(s.replicas[0]["name"], "pt-master-0");
  EXPECT_EQ(s.replicas[0]["node"], "node-a");
  EXPECT_EQ(s.replicas[0]["exitCode"], 2);
  ASSERT_EQ(s.targets.size(), 2u);
  EXPECT_EQ(s.targets[0].short_name, "master-0");
  EXPECT_EQ(s.targets[0].container, "pytorch");
  EXPECT_TRUE(s.targets[0].started);
  EXPECT_FALSE(s.targets[1].started) << "a pending pod has no log";
  EXPECT_TRUE(s.events.empty()) << "the recorder adds them";
  EXPECT_FALSE(s.events_complete);
}

}  // namespace
}  // namespace trainctl::recording
