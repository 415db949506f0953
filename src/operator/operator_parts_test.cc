// Unit tests of the operator's parts that need no API server: expectations,
// child planning and condition marks, metrics rendering, bind-address parsing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "api/manifest.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "kube/store.h"
#include "operator/cache_types.h"
#include "operator/controller.h"
#include "operator/decide.h"
#include "operator/expectations.h"
#include "operator/log.h"
#include "operator/metrics.h"
#include "operator/process_stats.h"
#include "operator/sync_spacing.h"
#include "operator/test_jobs.h"

namespace trainctl::op {
namespace {

Time T0() { return Time(std::chrono::seconds(1700000000)); }

engine::ReplicaObservation Obs(const std::string& name, engine::Phase phase, bool terminating) {
  engine::ReplicaObservation o;
  o.name = name;
  o.type = "Worker";
  o.phase = phase;
  o.terminating = terminating;
  return o;
}

TEST(SyncSpacing, AnExpensiveSyncWaitsAMultipleOfItsCostUpToTheCap) {
  const Time t(std::chrono::seconds(1700000000));
  EXPECT_FALSE(QuietUntil(t, Duration(0)));  // a small job: never spaced
  EXPECT_EQ(QuietUntil(t, Duration(3)), t + Duration(3 * kSyncSpacingFactor));
  EXPECT_EQ(QuietUntil(t, Duration(10000)), t + kMaxSyncSpacing);
  // A 2,000-replica job's read and decide (4 to 7 ms on the 2-core bench machine) leaves the
  // job's events waiting 48 times as long, near or at the cap: a sync of that job about every
  // quarter second while its pods change (docs/benchmarks.md, "A big job's syncs at 48 times
  // their cost").
  EXPECT_EQ(QuietUntil(t, Duration(5)), t + Duration(240));
  EXPECT_EQ(QuietUntil(t, Duration(6)), t + kMaxSyncSpacing);
}

TEST(ProjectServiceList, GivesWhatProjectServiceGivesItemByItem) {
  nlohmann::json items = nlohmann::json::parse(R"([
    {"metadata":{"name":"j-worker-0","namespace":"team","ownerReferences":[
      {"uid":"0a1b2c3d-0000-4000-8000-00000000000a","controller":false},
      {"uid":"0a1b2c3d-0000-4000-8000-00000000000b","controller":true},
      {"uid":"0a1b2c3d-0000-4000-8000-00000000000c","controller":true}],
      "managedFields":[{"manager":"m"}]},"spec":{"clusterIP":"None"}},
    {"metadata":{"name":"cluster-scoped","ownerReferences":[{"uid":"bad","controller":true}]}},
    {"metadata":{"name":"odd","namespace":7,"ownerReferences":{"not":"array"}}},
    {"metadata":{"name":""}}, {"metadata":"x"}, {"kind":"Service"}, 3])");
  auto page = ProjectServiceList(nlohmann::json{{"items", items}}.dump());
  ASSERT_TRUE(page.has_value());
  std::vector<std::string> want, got;
  auto dump = [](const std::string& key, const ServiceSummary& s) {
    return key + " " + s.namespace_ + "|" + s.name + "|" + kube::FormatUid(s.owner_uid);
  };
  for (const nlohmann::json& item : items)
    if (std::optional<ServiceSummary> s = ProjectService(item))
      want.push_back(dump(kube::ObjectKey(item), *s));
  for (const auto& [key, s] : *page) got.push_back(dump(key, s));
  EXPECT_EQ(got, want);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "team/j-worker-0 team|j-worker-0|0a1b2c3d-0000-4000-8000-00000000000b")
      << "the first controller reference";
  EXPECT_FALSE(ProjectServiceList(R"({"items":[{"metadata":{"name":"a"}})"));
  EXPECT_FALSE(ProjectServiceList(R"({"items":null})"));
}

TEST(SyncSummary, NamesEachListWithItsObjectsPagesAndTimeAndCountsTheEmptyOnes) {
  kube::ReflectorStats pods;
  pods.last_list_objects = 10000;
  pods.last_list_pages = 20;
  pods.last_list_time = Duration(4100);
  kube::ReflectorStats jobs;
  jobs.last_list_objects = 3;
  jobs.last_list_pages = 1;
  jobs.last_list_time = Duration(15);
  kube::ReflectorStats none;
  none.last_list_pages = 1;
  EXPECT_EQ(
      SyncSummary(Duration(5912),
                  {{"pods", pods}, {"services", none}, {"pytorchjobs", jobs}, {"tfjobs", none}}),
      "caches synced in 5.91 s: pods 10000 (20 pages, 4.10 s), pytorchjobs 3 (1 page, "
      "0.01 s), 2 empty");
  EXPECT_EQ(SyncSummary(Duration(20), {{"pods", none}}), "caches synced in 0.02 s: 1 empty");
}

TEST(Expectations, PendingCreateAppearsUntilTheCacheShowsIt) {
  Expectations e(Duration(60000));
  e.ExpectCreate("j", {"Worker", 1, "job-worker-1"}, T0());
  auto seen = e.Overlay("j", {}, T0());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].name, "job-worker-1");
  EXPECT_EQ(seen[0].index, 1);
  EXPECT_EQ(seen[0].phase, engine::Phase::kPending);
  seen = e.Overlay("j", {Obs("job-worker-1", engine::Phase::kRunning, false)}, T0());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].phase, engine::Phase::kRunning);
  EXPECT_EQ(e.Pending("j"), 0u);
}

// A pod created for a gang's next attempt and not yet in the cache is of that attempt: taken
// for attempt 0, the engine would remove it as a leftover of an earlier attempt (and did, in
// the first run of test_gang.py: a worker created three times in one attempt).
TEST(Expectations, PendingCreateKeepsTheAttemptItWasCreatedFor) {
  Expectations e(Duration(60000));
  e.ExpectCreate("j", {"Worker", 1, "job-worker-1"}, T0(), 2);
  auto seen = e.Overlay("j", {}, T0());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].attempt, 2);
}

TEST(Expectations, PendingDeleteMarksTerminatingAndExpires) {
  Expectations e(Duration(60000));
  e.ExpectDelete("j", "job-worker-0", T0());
  auto seen = e.Overlay("j", {Obs("job-worker-0", engine::Phase::kFailed, false)}, T0());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].terminating);
  EXPECT_EQ(e.Pending("j"), 1u);
  seen =
      e.Overlay("j", {Obs("job-worker-0", engine::Phase::kFailed, false)}, T0() + Duration(60000));
  EXPECT_FALSE(seen[0].terminating);  // expired: trust the cache again
  EXPECT_EQ(e.Pending("j"), 0u);
}

TEST(Expectations, CreatedServiceCountsUntilTheCacheShowsItOrItExpires) {
  Expectations e(Duration(60000));
  e.ExpectService("j", "job-worker-0", T0());
  e.ExpectService("j", "job-worker-1", T0());
  e.CancelService("j", "job-worker-1");  // its create failed
  EXPECT_EQ(e.OverlayServices("j", {"job-master-0"}, T0()),
            (std::vector<std::string>{"job-master-0", "job-worker-0"}));
  EXPECT_EQ(e.OverlayServices("other", {}, T0()), std::vector<std::string>{});
  // Seen once: the cache has it now, so a later delete shows as a delete.
  EXPECT_EQ(e.OverlayServices("j", {"job-worker-0"}, T0()),
            std::vector<std::string>{"job-worker-0"});
  EXPECT_EQ(e.OverlayServices("j", {}, T0()), std::vector<std::string>{});
  e.ExpectService("j", "job-worker-2", T0());
  EXPECT_EQ(e.OverlayServices("j", {}, T0() + Duration(60000)), std::vector<std::string>{});
}

using testing::LoadJob;

const char* kPyTorch = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  runPolicy: {cleanPodPolicy: All}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: x}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: x}]}}
)";

TEST(PlanChildren, CreatesMissingServicesAndScalesDown) {
  api::Job job = LoadJob(kPyTorch);
  engine::Plan plan = engine::Reconcile(job, {}, T0());
  ChildActions a = PlanChildren(job, plan, {"pt-master-0", "pt-worker-5", "unrelated-worker-1"});
  ASSERT_EQ(a.create_pods.size(), 3u);
  EXPECT_EQ(a.create_pods[0].name, "pt-master-0");
  std::vector<std::string> services;
  for (auto& s : a.create_services) services.push_back(s.name);
  EXPECT_EQ(services, (std::vector<std::string>{"pt-worker-0", "pt-worker-1"}));
  EXPECT_EQ(a.delete_services, (std::vector<std::string>{"pt-worker-5"}));
}

TEST(PlanChildren, OnlyAReplicasOwnNameCountsAsItsService) {
  api::Job job = LoadJob(kPyTorch);
  engine::Plan plan = engine::Reconcile(job, {}, T0());
  // "-01", "-+1" and "--0" parse to replicas 1 and 0 but are not their names; a name seen twice
  // (the cache and an expected create) is one service.
  ChildActions a = PlanChildren(
      job, plan, {"pt-worker-01", "pt-worker-+1", "pt-worker--0", "pt-master-0", "pt-master-0"});
  std::vector<std::string> services;
  for (auto& s : a.create_services) services.push_back(s.name);
  EXPECT_EQ(services, (std::vector<std::string>{"pt-worker-0", "pt-worker-1"}));
  EXPECT_TRUE(a.delete_services.empty());  // below `replicas`: not a scale-down's to remove
  a = PlanChildren(job, plan, {"pt-worker-1", "pt-worker-0", "pt-master-0"});
  EXPECT_TRUE(a.create_services.empty());
}
TEST(PlanChildren, FinishedJobDeletesServicesOfRemovedPodsOnly) {
  api::Job job = LoadJob(kPyTorch);
  std::vector<engine::ReplicaObservation> observed = {
      Obs("pt-master-0", engine::Phase::kSucceeded, false),
      Obs("pt-worker-0", engine::Phase::kRunning, false),
      Obs("pt-worker-1", engine::Phase::kRunning, false)};
  observed[0].type = "Master";
  observed[0].exit_code = 0;
  observed[2].index = 1;
  engine::Plan plan = engine::Reconcile(job, observed, T0());
  ASSERT_TRUE(engine::IsFinished(plan.status));
  ChildActions a = PlanChildren(job, plan, {"pt-master-0", "pt-worker-0", "pt-worker-1"});
  EXPECT_TRUE(a.create_pods.empty());
  EXPECT_TRUE(a.create_services.empty());
  EXPECT_EQ(a.delete_pods.size(), 3u);  // cleanPodPolicy All
  EXPECT_EQ(a.delete_services.size(), 3u);
}

TEST(PlanChildren, SuspendedJobDeletesEveryService) {
  api::Job job = LoadJob(kPyTorch);
  job.run_policy.suspend = true;
  engine::Plan plan = engine::Reconcile(job, {}, T0());
  ChildActions a = PlanChildren(job, plan, {"pt-master-0", "pt-worker-0"});
  EXPECT_TRUE(a.create_services.empty());
  EXPECT_EQ(a.delete_services.size(), 2u);
}

TEST(PairCreates, EachPodAfterItsOwnServiceAndLoneServicesFirst) {
  ChildActions a;
  a.create_pods = {{"Master", 0, "pt-master-0"}, {"Worker", 1, "pt-worker-1"}};
  a.create_services = {
      {"Master", 0, "pt-master-0"}, {"Worker", 0, "pt-worker-0"}, {"Worker", 1, "pt-worker-1"}};
  std::vector<ChildCreate> steps = PairCreates(a);
  ASSERT_EQ(steps.size(), 3u);
  // worker-0's pod is not created now (it runs): its service comes first, alone.
  EXPECT_EQ(steps[0], (ChildCreate{a.create_services[1], std::nullopt}));
  EXPECT_EQ(steps[1], (ChildCreate{a.create_services[0], a.create_pods[0]}));
  EXPECT_EQ(steps[2], (ChildCreate{a.create_services[2], a.create_pods[1]}));

  // A pod whose service exists goes alone; nothing to create is no step.
  a.create_services.clear();
  steps = PairCreates(a);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0], (ChildCreate{std::nullopt, a.create_pods[0]}));
  EXPECT_TRUE(PairCreates(ChildActions{}).empty());
}

TEST(PairCreates, AJobsFirstCreationPairsEveryReplica) {
  api::Job job = LoadJob(kPyTorch);
  ChildActions a = PlanChildren(job, engine::Reconcile(job, {}, T0()), {});
  std::vector<ChildCreate> steps = PairCreates(a);
  ASSERT_EQ(steps.size(), 3u);
  for (const ChildCreate& step : steps) {
    ASSERT_TRUE(step.service && step.pod);
    EXPECT_EQ(step.service->name, step.pod->name);
  }
  EXPECT_EQ(steps[0].pod->name, "pt-master-0");
}

TEST(CreateFailure, MarkedOnCreatedAndUndoneWithoutCountingTwice) {
  api::Job job = LoadJob(kPyTorch);
  engine::Plan first = engine::Reconcile(job, {}, T0());
  EXPECT_EQ(std::count(first.metrics.begin(), first.metrics.end(), engine::Metric::kJobCreated), 1);
  api::JobStatus status = first.status;
  MarkCreateFailure(job, &status, "FailedCreatePod", "pods \"pt-master-0\" is forbidden", T0());
  const api::Condition* c = engine::FindCondition(status, engine::kCreated);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "FailedCreatePod");

  job.status = status;
  PrepareStatusForEngine(&job);
  engine::Plan second = engine::Reconcile(job, {}, T0() + Duration(1000));
  c = engine::FindCondition(second.status, engine::kCreated);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "PyTorchJobCreated");
  EXPECT_EQ(std::count(second.metrics.begin(), second.metrics.end(), engine::Metric::kJobCreated),
            0);
}

TEST(InvalidJobStatus, SetsCreatedFalseOnceAndKeepsOtherConditions) {
  nlohmann::json object = {
      {"metadata", {{"name", "bad"}}},
      {"status", {{"conditions", {{{"type", "Running"}, {"status", "True"}}}}}}};
  auto status = InvalidJobStatus(object, "TFJob", "spec.tfReplicaSpecs: Required value", T0());
  ASSERT_TRUE(status);
  ASSERT_EQ((*status)["conditions"].size(), 2u);
  EXPECT_EQ((*status)["conditions"][0]["reason"], "TFJobFailedValidation");
  EXPECT_EQ((*status)["conditions"][0]["status"], "False");
  EXPECT_EQ((*status)["conditions"][1]["type"], "Running");
  object["status"] = *status;
  EXPECT_FALSE(InvalidJobStatus(object, "TFJob", "spec.tfReplicaSpecs: Required value", T0()));
  EXPECT_TRUE(InvalidJobStatus(object, "TFJob", "another message", T0()));
  // A status that is not even an object is replaced, not trusted.
  nlohmann::json odd = {{"metadata", {{"name", "x"}}}, {"status", "garbage"}};
  EXPECT_TRUE(InvalidJobStatus(odd, "TFJob", "m", T0()));
}

TEST(Metrics, RendersJobCountersWithUpstreamNamesAndLabels) {
  Metrics m;
  m.CountJob(engine::Metric::kJobCreated, "default", "pytorch");
  m.CountJob(engine::Metric::kJobCreated, "default", "pytorch");
  m.CountJob(engine::Metric::kJobFailed, "a\"b", "tensorflow");
  EXPECT_EQ(m.Value("training_operator_jobs_created_total",
                    {{"framework", "pytorch"}, {"job_namespace", "default"}}),
            2);
  std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE training_operator_jobs_created_total counter"), std::string::npos);
  EXPECT_NE(text.find("training_operator_jobs_created_total{framework=\"pytorch\",job_namespace="
                      "\"default\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("job_namespace=\"a\\\"b\""), std::string::npos);
}

TEST(CacheTypes, ProjectionsSurviveOddObjects) {
  EXPECT_FALSE(ProjectJob(nlohmann::json::array()));
  EXPECT_FALSE(ProjectJob({{"metadata", 3}}));
  auto job = ProjectJob({{"metadata",
                          {{"name", "j"},
                           {"namespace", "n"},
                           {"resourceVersion", "12"},
                           {"managedFields", {{{"manager", "kubectl"}}}}}}});
  ASSERT_TRUE(job);
  EXPECT_EQ(job->text.find("managedFields"), std::string::npos);
  EXPECT_EQ(
      ControllerOwnerUid(
          {{"metadata",
            {{"ownerReferences", {{{"uid", "u1"}}, {{"uid", "u2"}, {"controller", true}}}}}}}),
      "u2");
  EXPECT_EQ(ControllerOwnerUid({{"metadata", {{"ownerReferences", "x"}}}}), "");
  EXPECT_TRUE(NewerResourceVersion("100", "99"));
  EXPECT_FALSE(NewerResourceVersion("99", "100"));
  EXPECT_FALSE(NewerResourceVersion("abc", "1"));
}

TEST(LogOptionsTest, ZapFlagsAsUpstream) {
  LogOptions devel = ParseLogOptions(true, "", "").value();
  EXPECT_FALSE(devel.json);
  EXPECT_EQ(devel.min_level, -1);
  LogOptions production = ParseLogOptions(false, "", "").value();
  EXPECT_TRUE(production.json);
  EXPECT_EQ(production.min_level, 0);
  EXPECT_FALSE(ParseLogOptions(true, "json", "error").value().json == false);
  EXPECT_EQ(ParseLogOptions(true, "json", "error").value().min_level, 2);
  EXPECT_EQ(ParseLogOptions(false, "console", "3").value().min_level, -3);
  StatusOr<LogOptions> bad = ParseLogOptions(true, "xml", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--zap-encoder"), std::string::npos);
  EXPECT_FALSE(ParseLogOptions(true, "", "loud").ok());
  EXPECT_FALSE(ParseLogOptions(true, "", "-1").ok());
}

TEST(ProcessStatsTest, CpuIsSummedByThreadName) {
  std::atomic<bool> measured{false};
  std::thread busy([&] {
    pthread_setname_np(pthread_self(), "stats-probe");
    // Burn at least 50 ms of CPU, then wait to be measured.
    double until = CpuSeconds("thread-self") + 0.05;
    volatile unsigned long x = 0;
    while (CpuSeconds("thread-self") < until)
      for (int i = 0; i < 100000; ++i) x = x + i;
    while (!measured) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::map<std::string, double> by_name;
  for (int i = 0; i < 2000 && by_name["stats-probe"] < 0.05; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    by_name = CpuSecondsByThreadName();
  }
  measured = true;
  busy.join();
  EXPECT_GE(by_name["stats-probe"], 0.05);
  double total = 0;
  for (const auto& [name, cpu] : by_name) total += cpu;
  EXPECT_LE(by_name["stats-probe"], total);
  EXPECT_LE(total, CpuSeconds() + 0.02) << "the threads' sum is within the process's";
}

TEST(ProcessStatsTest, AThreadCpuMeterAddsOnlyWhatItsScopeUsed) {
  std::atomic<int64_t> sink{0};
  auto burn = [](int64_t nanos) {
    const int64_t until = ThreadCpuNanos() + nanos;
    volatile unsigned long x = 0;
    while (ThreadCpuNanos() < until)
      for (int i = 0; i < 10000; ++i) x = x + i;
  };
  burn(30000000);  // outside any meter: not counted
  {
    ThreadCpuMeter meter(&sink);
    burn(20000000);
  }
  EXPECT_GE(sink.load(), 20000000);
  EXPECT_LT(sink.load(), 30000000) << "the CPU used before the meter is not in it";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int64_t after_one = sink.load();
  {
    ThreadCpuMeter meter(&sink);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // waiting is not CPU
  }
  EXPECT_LT(sink.load() - after_one, 10000000);
}

}  // namespace
}  // namespace trainctl::op
