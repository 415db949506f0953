// Kueue's Workload as the operator reads it (projected from the API's JSON) and the why of a
// suspended job Kueue holds, in Kueue's words: pending for quota, inadmissible (no such
// LocalQueue), preempted, waiting for admission checks, admitted; nothing for a job Kueue does
// not hold.
#include "operator/kueue_workload.h"

#include <gtest/gtest.h>

#include "operator/decide.h"
#include "operator/sync_plan.h"
#include "operator/test_jobs.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

constexpr const char* kJobUid = "6f1c4a8e-0000-4000-8000-000000000001";

api::Job QueuedJob(bool suspended, const std::string& queue = "team-a") {
  std::string labels = queue.empty() ? "" : ", labels: {kueue.x-k8s.io/queue-name: " + queue + "}";
  return testing::LoadJob(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train, namespace: ns)" +
                          labels + R"(}
spec:
  runPolicy: {suspend: )" +
                          (suspended ? "true" : "false") + R"(}
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}
)");
}

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message) {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
}

json Workload(const json& conditions, const json& admission = nullptr) {
  json status = {{"conditions", conditions}};
  if (!admission.is_null()) status["admission"] = admission;
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata",
           {{"name", "pytorchjob-train-3b1f2"},
            {"namespace", "ns"},
            {"ownerReferences", json::array({{{"apiVersion", "kubeflow.org/v1"},
                                              {"kind", "PyTorchJob"},
                                              {"name", "train"},
                                              {"uid", kJobUid},
                                              {"controller", true}}})}}},
          {"spec", {{"queueName", "team-a"}}},
          {"status", status}};
}

KueueWorkloadSummary Project(const json& object) {
  std::optional<KueueWorkloadSummary> w = ProjectKueueWorkload(object);
  EXPECT_TRUE(w.has_value());
  return w.value_or(KueueWorkloadSummary{});
}

constexpr const char* kPending =
    "couldn't assign flavors to pod set master: insufficient unused quota for cpu in flavor "
    "default-flavor, 1 more needed";

TEST(KueueWorkloadTest, ProjectsOwnerQueueAdmissionAndConditions) {
  KueueWorkloadSummary w = Project(
      Workload(json::array({Condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
                            Condition("Admitted", "True", "Admitted", "The workload is admitted")}),
               {{"clusterQueue", "cq"}}));
  EXPECT_EQ(w.namespace_, "ns");
  EXPECT_EQ(w.name, "pytorchjob-train-3b1f2");
  EXPECT_EQ(kube::FormatUid(w.owner_uid), kJobUid);
  EXPECT_EQ(w.queue_name, "team-a");
  EXPECT_EQ(w.cluster_queue, "cq");
  EXPECT_TRUE(w.quota_reserved.is_true);
  EXPECT_TRUE(w.admitted.is_true);
  EXPECT_FALSE(w.evicted.present);
}

TEST(KueueWorkloadTest, OddObjectsAreNotCached) {
  EXPECT_FALSE(ProjectKueueWorkload(json::array()).has_value());
  EXPECT_FALSE(ProjectKueueWorkload({{"metadata", {{"name", "x"}}}}).has_value());
  json no_status = Workload(json::array());
  no_status.erase("status");
  no_status["spec"] = 7;
  std::optional<KueueWorkloadSummary> w = ProjectKueueWorkload(no_status);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->queue_name, "");
  EXPECT_FALSE(w->quota_reserved.present);
  EXPECT_FALSE(ProjectLocalQueue({{"metadata", {{"namespace", "ns"}}}}).has_value());
  std::optional<LocalQueueSummary> lq =
      ProjectLocalQueue({{"metadata", {{"namespace", "ns"}, {"name", "team-a"}}},
                         {"spec", {{"clusterQueue", "cq"}}}});
  ASSERT_TRUE(lq.has_value());
  EXPECT_EQ(lq->cluster_queue, "cq");
}

TEST(KueueWorkloadTest, PendingForQuotaNamesBothQueuesAndKueuesMessage) {
  KueueWorkloadSummary w =
      Project(Workload(json::array({Condition("QuotaReserved", "False", "Pending", kPending)})));
  std::optional<engine::Readiness> why = KueueReadiness(QueuedJob(true), true, &w, "cq");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "KueuePending");
  EXPECT_FALSE(why->warning);
  EXPECT_EQ(why->message,
            "PyTorchJob train is suspended: waiting for Kueue to admit it in LocalQueue "
            "\"team-a\" (ClusterQueue \"cq\"): " +
                std::string(kPending) + " (Workload pytorchjob-train-3b1f2).");
}

TEST(KueueWorkloadTest, AMissingLocalQueueIsInadmissibleAndAWarning) {
  KueueWorkloadSummary w = Project(Workload(json::array(
      {Condition("QuotaReserved", "False", "Inadmissible", "LocalQueue team-b doesn't exist")})));
  std::optional<engine::Readiness> why = KueueReadiness(QueuedJob(true, "team-b"), true, &w, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "Inadmissible");
  EXPECT_TRUE(why->warning);
  EXPECT_NE(why->message.find("Kueue cannot admit it in LocalQueue \"team-b\": LocalQueue team-b "
                              "doesn't exist"),
            std::string::npos)
      << why->message;
  EXPECT_EQ(why->message.find("ClusterQueue"), std::string::npos) << why->message;
}

TEST(KueueWorkloadTest, PreemptedSaysByWhomAndWhatItWaitsForNow) {
  KueueWorkloadSummary w = Project(Workload(
      json::array({Condition("QuotaReserved", "False", "Pending", kPending),
                   Condition("Evicted", "True", "Preempted",
                             "Preempted to accommodate a workload (UID: u2, JobUID: j2) due to "
                             "prioritization in the ClusterQueue")})));
  std::optional<engine::Readiness> why = KueueReadiness(QueuedJob(true), true, &w, "cq");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "Preempted");
  EXPECT_EQ(why->message,
            "PyTorchJob train was preempted by Kueue: Preempted to accommodate a workload (UID: "
            "u2, JobUID: j2) due to prioritization in the ClusterQueue; it waits to be admitted "
            "again in LocalQueue \"team-a\" (ClusterQueue \"cq\"): " +
                std::string(kPending) + " (Workload pytorchjob-train-3b1f2).");
  KueueWorkloadSummary stopped = Project(Workload(json::array(
      {Condition("Evicted", "True", "ClusterQueueStopped", "The ClusterQueue is stopped")})));
  why = KueueReadiness(QueuedJob(true), true, &stopped, "cq");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "Evicted");
  EXPECT_NE(why->message.find("was evicted (ClusterQueueStopped) by Kueue"), std::string::npos)
      << why->message;
}

TEST(KueueWorkloadTest, ChecksAdmittedAndNoWorkloadYet) {
  KueueWorkloadSummary checks = Project(
      Workload(json::array({Condition("QuotaReserved", "True", "QuotaReserved", "reserved"),
                            Condition("Admitted", "False", "NoChecks", "check prov is Pending")}),
               {{"clusterQueue", "cq-from-admission"}}));
  std::optional<engine::Readiness> why = KueueReadiness(QueuedJob(true), true, &checks, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "WaitingForAdmissionChecks");
  EXPECT_NE(why->message.find("(ClusterQueue \"cq-from-admission\") and waits for Kueue's "
                              "admission checks: check prov is Pending"),
            std::string::npos)
      << why->message;

  KueueWorkloadSummary admitted =
      Project(Workload(json::array({Condition("QuotaReserved", "True", "QuotaReserved", "reserved"),
                                    Condition("Admitted", "True", "Admitted", "admitted")}),
                       {{"clusterQueue", "cq"}}));
  why = KueueReadiness(QueuedJob(true), true, &admitted, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "Admitted");

  KueueWorkloadSummary fresh = Project(Workload(json::array()));
  why = KueueReadiness(QueuedJob(true), true, &fresh, "cq");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "WaitingForAdmission") << "Kueue has not looked at it yet";

  why = KueueReadiness(QueuedJob(true), true, nullptr, "cq");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->reason, "WaitingForAdmission");
  EXPECT_NE(why->message.find("Kueue has made no Workload for it yet"), std::string::npos);
}

TEST(KueueWorkloadTest, NothingForAJobKueueDoesNotHold) {
  KueueWorkloadSummary w =
      Project(Workload(json::array({Condition("QuotaReserved", "False", "Pending", kPending)})));
  EXPECT_FALSE(KueueReadiness(QueuedJob(false), false, &w, "cq").has_value()) << "running";
  EXPECT_FALSE(KueueReadiness(QueuedJob(true, ""), true, nullptr, "").has_value()) << "no queue";
  // A Workload names the queue when the label is gone (Kueue's default LocalQueue).
  std::optional<engine::Readiness> why = KueueReadiness(QueuedJob(true, ""), true, &w, "");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->message.find("LocalQueue \"team-a\""), std::string::npos);
}

TEST(KueueWorkloadTest, AChangeOfConditionOrOwnerIsAChangeOfWhy) {
  KueueWorkloadSummary a =
      Project(Workload(json::array({Condition("QuotaReserved", "False", "Pending", kPending)})));
  KueueWorkloadSummary b = a;
  EXPECT_FALSE(WorkloadWhyChanged(a, b));
  b.quota_reserved.message = "other";
  EXPECT_TRUE(WorkloadWhyChanged(a, b));
  b = a;
  b.evicted.is_true = true;
  EXPECT_TRUE(WorkloadWhyChanged(a, b));
}

TEST(KueueWorkloadTest, DecideStatusWritesKueuesWhyAtOnce) {
  api::Job job = QueuedJob(true);
  KueueWorkloadSummary w =
      Project(Workload(json::array({Condition("QuotaReserved", "False", "Pending", kPending)})));
  std::optional<engine::Readiness> why = KueueReadiness(job, true, &w, "cq");
  const Time now = Time{} + std::chrono::hours(1000);
  StatusDecision decided =
      DecideStatus(job, job.status, job.status, Status::Ok(), Status::Ok(), now, "", {}, why);
  ASSERT_TRUE(decided.write.has_value());
  const api::Condition* ready = nullptr;
  for (const api::Condition& c : decided.write->conditions)
    if (c.type == "ReplicasReady") ready = &c;
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->reason, "KueuePending");
  EXPECT_NE(ready->message.find(kPending), std::string::npos);
  // A Kueue reason is not a not-ready detail to hold back.
  EXPECT_TRUE(IsKueueReason("Preempted"));
  EXPECT_FALSE(IsKueueReason("Starting"));
}

}  // namespace
}  // namespace trainctl::op
