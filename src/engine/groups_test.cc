// Replica groups that wait for others: a v2beta1 MPIJob's launcher under WaitForWorkersReady
// (set by its defaulting) and a group that waits for another to complete (Trainer v2's
// initializers); the plan makes a held group's replicas only once the others are there.
#include "engine/groups.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/conditions.h"
#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using test::kT0;
using test::Pod;

api::Job MpiV2(const std::string& policy) {
  std::string yaml = R"(apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: job, namespace: ns}
spec:
)" + (policy.empty() ? std::string() : "  launcherCreationPolicy: " + policy + "\n") +
                     R"(  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: l, image: img}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: w, image: img}]}}
)";
  auto jobs = api::LoadJobsFromText(yaml, "t.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return (*jobs)[0].job;
}

std::vector<std::string> Created(const Plan& plan) {
  std::vector<std::string> out;
  for (const ReplicaRef& r : plan.create) out.push_back(r.type + "-" + std::to_string(r.index));
  return out;
}

TEST(GroupsTest, AWaitForWorkersReadyLauncherIsPlannedOnceEveryWorkerRuns) {
  api::Job job = MpiV2("WaitForWorkersReady");
  ASSERT_EQ(job.replica_specs.at("Launcher").depends_on.size(), 1u);
  EXPECT_EQ(Created(Reconcile(job, {}, kT0)),
            (std::vector<std::string>{"Worker-0", "Worker-1", "Worker-2"}));
  std::vector<ReplicaObservation> some = {Pod("Worker", 0, Phase::kRunning),
                                          Pod("Worker", 1, Phase::kRunning),
                                          Pod("Worker", 2, Phase::kPending)};
  EXPECT_TRUE(Created(Reconcile(job, some, kT0)).empty());
  ASSERT_EQ(UnmetDependencies(job, "Launcher", some).size(), 1u);
  some[2].phase = Phase::kRunning;
  some[1].terminating = true;  // going away: not a worker that runs
  EXPECT_TRUE(Created(Reconcile(job, some, kT0)).empty());
  some[1].terminating = false;
  EXPECT_EQ(Created(Reconcile(job, some, kT0)), std::vector<std::string>{"Launcher-0"});
  EXPECT_TRUE(UnmetDependencies(job, "Launcher", some).empty());
}

TEST(GroupsTest, AtStartupAndV1LaunchersAreMadeAtOnce) {
  for (const api::Job& job : {MpiV2(""), MpiV2("AtStartup"),
                              test::MakeJob("MPIJob", {{"Launcher", 1, ""}, {"Worker", 2, ""}})}) {
    EXPECT_TRUE(job.replica_specs.at("Launcher").depends_on.empty());
    std::vector<std::string> created = Created(Reconcile(job, {}, kT0));
    EXPECT_NE(std::find(created.begin(), created.end(), "Launcher-0"), created.end());
  }
}

TEST(GroupsTest, AGroupWaitsForAnotherToCompleteAndSaysWhy) {
  // A PS that must finish first stands in for an initializer (its success does not end a TFJob).
  api::Job job = test::MakeJob("TFJob", {{"PS", 1, ""}, {"Worker", 2, ""}});
  job.replica_specs["Worker"].depends_on = {
      {"PS", api::GroupDependency::Until::kComplete, "an initializer"}};
  EXPECT_EQ(Created(Reconcile(job, {}, kT0)), std::vector<std::string>{"PS-0"});
  std::vector<ReplicaObservation> running = {Pod("PS", 0, Phase::kRunning)};
  EXPECT_TRUE(Created(Reconcile(job, running, kT0)).empty()) << "running is not complete";
  std::vector<api::GroupDependency> unmet = UnmetDependencies(job, "Worker", running);
  EXPECT_EQ(HeldGroupPhrase("Worker", unmet),
            "the Worker is made once every PS has succeeded (an initializer)");
  std::vector<ReplicaObservation> done = {Pod("PS", 0, Phase::kSucceeded)};
  EXPECT_EQ(Created(Reconcile(job, done, kT0)), (std::vector<std::string>{"Worker-0", "Worker-1"}));
  EXPECT_EQ(HeldGroupPhrase("Worker", {}), "");
}

// A TrainJob whose runtime has a model initializer the trainer nodes depend on (Complete), and
// an MPI-style successPolicy naming only the trainer: the initializer runs first, the nodes
// follow, and the job succeeds by JobSet's rules.
api::Job TrainJob(const std::string& success) {
  std::string yaml = R"(apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
)" + success + R"(
      replicatedJobs:
      - name: model-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: model-initializer}}
          spec: {template: {spec: {containers: [{name: model-initializer, image: i}]}}}
      - name: node
        dependsOn: [{name: model-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec: {template: {spec: {containers: [{name: node, image: t}]}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj, namespace: ns}
spec:
  runtimeRef: {name: rt}
  initializer: {model: {storageUri: "hf://org/model"}}
)";
  api::ManifestExtras extras;
  auto jobs = api::LoadJobsFromText(yaml, "t.yaml", &extras);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? (*jobs)[0].job : api::Job{};
}

TEST(GroupsTest, ATrainJobsInitializerCompletesBeforeItsNodesAndJobSetRulesJudgeIt) {
  api::Job job = TrainJob("");
  EXPECT_EQ(Created(Reconcile(job, {}, kT0)), std::vector<std::string>{"model-initializer-0"});
  std::vector<ReplicaObservation> pods = {Pod("model-initializer", 0, Phase::kRunning)};
  Plan plan = Reconcile(job, pods, kT0);
  EXPECT_TRUE(Created(plan).empty());
  EXPECT_TRUE(HasCondition(plan.status, kRunning)) << "the initializer runs";
  pods[0].phase = Phase::kSucceeded;
  EXPECT_EQ(Created(Reconcile(job, pods, kT0)), (std::vector<std::string>{"node-0", "node-1"}));
  pods.push_back(Pod("node", 0, Phase::kSucceeded));
  pods.push_back(Pod("node", 1, Phase::kRunning));
  EXPECT_FALSE(HasCondition(Reconcile(job, pods, kT0).status, kSucceeded));
  pods[2].phase = Phase::kSucceeded;
  plan = Reconcile(job, pods, kT0);
  EXPECT_TRUE(HasCondition(plan.status, kSucceeded));
  EXPECT_EQ(FindCondition(plan.status, kSucceeded)->message,
            "TrainJob ns/tj successfully completed.");
}

TEST(GroupsTest, ASuccessPolicyNamingTheTrainerEndsTheJobWhenItIsDone) {
  api::Job job = TrainJob("      successPolicy: {operator: All, targetReplicatedJobs: [node]}\n");
  ASSERT_EQ(job.success_groups, std::vector<std::string>{"node"});
  std::vector<ReplicaObservation> pods = {Pod("model-initializer", 0, Phase::kRunning),
                                          Pod("node", 0, Phase::kSucceeded),
                                          Pod("node", 1, Phase::kSucceeded)};
  EXPECT_TRUE(HasCondition(Reconcile(job, pods, kT0).status, kSucceeded));
  pods[1].phase = Phase::kFailed;
  pods[1].exit_code = 1;
  Plan plan = Reconcile(job, pods, kT0);
  EXPECT_FALSE(HasCondition(plan.status, kSucceeded));
  job.replica_specs["node"].restart_policy = "Never";
  plan = Reconcile(job, pods, kT0);
  ASSERT_TRUE(HasCondition(plan.status, kFailed));
  EXPECT_EQ(
      FindCondition(plan.status, kFailed)
          ->message.rfind(
              "TrainJob ns/tj is failed because 1 node replica(s) failed.\nFirst failure: ", 0),
      0u);
}

}  // namespace
}  // namespace trainctl::engine
