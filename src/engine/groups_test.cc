// Replica groups that wait for others: a v2beta1 MPIJob's launcher under WaitForWorkersReady
// (set by its defaulting) and a group that waits for another to complete (Trainer v2's
// initializers); the plan makes a held group's replicas only once the others are there.
#include "engine/groups.h"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace trainctl::engine
