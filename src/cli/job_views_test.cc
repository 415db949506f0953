// Unit tests for the job queries (jobs/job_query.h), the API views of cluster jobs
// (jobs/cluster_view.h) and choosing a backend.
#include <gtest/gtest.h>

#include <regex>

#include "cli/claims_command.h"
#include "cli/cluster_commands.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/local_backend.h"
#include "jobs/cluster_view.h"
#include "jobs/job_query.h"

namespace trainctl::cli {
namespace {

using namespace jobs;  // NOLINT: the views under test

using nlohmann::json;

TEST(JobRefTest, AcceptsKindSlashNameKindAndNameOrName) {
  StatusOr<JobRef> a = ParseJobRef({"pytorchjob/mnist"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, api::Kind::kPyTorchJob);
  EXPECT_EQ(a->name, "mnist");
  StatusOr<JobRef> b = ParseJobRef({"tfjobs", "x"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->kind, api::Kind::kTFJob);
  StatusOr<JobRef> c = ParseJobRef({"x"});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->kind.has_value());
}

TEST(JobRefTest, RejectsUnknownKindsAndShapes) {
  StatusOr<JobRef> bad = ParseJobRef({"cronjob", "x"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown kind \"cronjob\""), std::string::npos);
  EXPECT_FALSE(ParseJobRef({}).ok());
  EXPECT_FALSE(ParseJobRef({"a", "b", "c"}).ok());
  EXPECT_FALSE(ParseJobRef({"pytorchjob/"}).ok());
  EXPECT_FALSE(ParseJobRef({"nokind/x"}).ok());
}

TEST(JobRefTest, GetTakesAKindOrANameAlone) {
  StatusOr<JobRef> kind = ParseGetArgs({"xgboostjobs"});
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(kind->kind, api::Kind::kXGBoostJob);
  EXPECT_EQ(kind->name, "");
  StatusOr<JobRef> name = ParseGetArgs({"my-job"});
  ASSERT_TRUE(name.ok());
  EXPECT_FALSE(name->kind.has_value());
  EXPECT_EQ(name->name, "my-job");
  EXPECT_TRUE(ParseGetArgs({}).ok());
  EXPECT_FALSE(ParseGetArgs({"a", "b", "c"}).ok());
}

json WithConditions(std::vector<std::pair<std::string, std::string>> conditions) {
  json list = json::array();
  for (const auto& [type, status] : conditions)
    list.push_back({{"type", type}, {"status", status}, {"message", type + " because"}});
  return {{"status", {{"conditions", list}}}};
}

TEST(WaitTest, ConditionMetFailedOrFinishedWithout) {
  EXPECT_EQ(ParseWaitCondition("condition=Running").value(), "Running");
  EXPECT_EQ(ParseWaitCondition("Succeeded").value(), "Succeeded");
  EXPECT_FALSE(ParseWaitCondition("condition=Done").ok());

  EXPECT_EQ(
      EvaluateWait(WithConditions({{"Created", "True"}, {"Running", "True"}}), "Running").state,
      WaitState::kMet);
  EXPECT_EQ(EvaluateWait(WithConditions({{"Running", "False"}}), "Running").state,
            WaitState::kPending);
  WaitOutcome failed = EvaluateWait(WithConditions({{"Failed", "True"}}), "Succeeded");
  EXPECT_EQ(failed.state, WaitState::kFailed);
  EXPECT_EQ(failed.message, "Failed because");
  EXPECT_EQ(EvaluateWait(WithConditions({{"Failed", "True"}}), "Failed").state, WaitState::kMet);
  // `finished` tells a met Running wait from a met Succeeded one (wait then lets the runner end).
  EXPECT_TRUE(EvaluateWait(WithConditions({{"Failed", "True"}}), "Failed").finished);
  EXPECT_TRUE(EvaluateWait(WithConditions({{"Succeeded", "True"}}), "Succeeded").finished);
  EXPECT_FALSE(EvaluateWait(WithConditions({{"Running", "True"}}), "Running").finished);
  EXPECT_FALSE(EvaluateWait(WithConditions({{"Succeeded", "False"}}), "Running").finished);
  EXPECT_EQ(EvaluateWait(WithConditions({{"Succeeded", "True"}}), "Running").state,
            WaitState::kFinishedWithout);
  // Odd shapes from a server are pending, not exceptions.
  EXPECT_EQ(EvaluateWait(json{{"status", {{"conditions", json::array({1, "x", {{"type", 3}}})}}}},
                         "Running")
                .state,
            WaitState::kPending);
  EXPECT_EQ(EvaluateWait(json::array(), "Running").state, WaitState::kPending);
}

TEST(BackendTest, KubeconfigOrBackendSelectsTheCluster) {
  GlobalOptions g;
  EXPECT_FALSE(UseCluster(g, "").value());
  EXPECT_TRUE(UseCluster(g, "kubernetes").value());
  g.kubeconfig = "/k";
  EXPECT_TRUE(UseCluster(g, "").value());
  EXPECT_TRUE(UseCluster(g, "local").value());  // the explicit flag wins over the environment
  g.backend = "local";
  EXPECT_FALSE(UseCluster(g, "kubernetes").value());
  g = {};
  g.backend = "kubernetes";
  EXPECT_TRUE(UseCluster(g, "local").value());
  StatusOr<bool> bad = UseCluster(GlobalOptions{}, "k8s");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("$TRAINCTL_BACKEND: unknown backend \"k8s\""),
            std::string::npos);
}

TEST(BackendTest, ChooseBackendGivesTheSelectedImplementationOrTheError) {
  GlobalOptions g;
  StatusOr<std::unique_ptr<Backend>> local = ChooseBackend(g, "");
  ASSERT_TRUE(local.ok());
  EXPECT_NE(dynamic_cast<LocalBackend*>(local->get()), nullptr);
  StatusOr<std::unique_ptr<Backend>> cluster = ChooseBackend(g, "kubernetes");
  ASSERT_TRUE(cluster.ok());
  EXPECT_NE(dynamic_cast<ClusterBackend*>(cluster->get()), nullptr);
  // Refusals that need no connection.
  EXPECT_EQ((*cluster)->Patch({"job"}, "{}"), 2);
  EXPECT_EQ((*cluster)->Describe({"job"}, "yaml"), 2);
  EXPECT_EQ(ChooseBackend(g, "k8s").status().code(), StatusCode::kInvalid);
}

json Pod(const std::string& name, const std::string& type, const std::string& index,
         const std::string& owner_uid, json status) {
  return {{"metadata",
           {{"name", name},
            {"labels",
             {{"training.kubeflow.org/replica-type", type},
              {"training.kubeflow.org/replica-index", index},
              {"training.kubeflow.org/operator-name", "pytorchjob-controller"}}},
            {"ownerReferences",
             json::array({{{"uid", owner_uid}, {"controller", true}, {"kind", "PyTorchJob"}}})}}},
          {"spec",
           {{"nodeName", "kwok-node-1"},
            {"containers", json::array({{{"name", "sidecar"}}, {{"name", "pytorch"}}})}}},
          {"status", status}};
}

json PodList() {
  json running = {{"phase", "Running"},
                  {"podIP", "10.244.0.7"},
                  {"containerStatuses", json::array({{{"name", "sidecar"}, {"restartCount", 9}},
                                                     {{"name", "pytorch"},
                                                      {"restartCount", 2},
                                                      {"state", {{"running", json::object()}}}}})}};
  json oom = {
      {"phase", "Failed"},
      {"containerStatuses",
       json::array({{{"name", "pytorch"},
                     {"state", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}})}};
  json pending = {{"phase", "Pending"},
                  {"containerStatuses",
                   json::array({{{"name", "pytorch"},
                                 {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}}})}};
  return {{"items", json::array({Pod("j-worker-1", "worker", "1", "uid-1", oom),
                                 Pod("j-master-0", "master", "0", "uid-1", running),
                                 Pod("j-worker-0", "worker", "0", "uid-1", pending),
                                 Pod("other-worker-0", "worker", "0", "uid-2", running),
                                 json("not a pod")})}};
}

TEST(ClusterViewTest, ReplicaRowsComeFromTheJobsOwnPods) {
  json rows = ReplicaRowsFromPods(PodList(), "uid-1");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["name"], "j-master-0");
  EXPECT_EQ(rows[0]["state"], "Running");
  EXPECT_EQ(rows[0]["restarts"], 2);  // the pytorch container's, not the sidecar's
  EXPECT_EQ(rows[0]["podIP"], "10.244.0.7");
  EXPECT_EQ(rows[1]["name"], "j-worker-0");
  EXPECT_EQ(rows[1]["state"], "ContainerCreating");
  EXPECT_EQ(rows[2]["state"], "OOMKilled");
  EXPECT_EQ(rows[2]["exitCode"], 137);
  EXPECT_FALSE(rows[1].contains("exitCode"));
  EXPECT_EQ(rows[0]["type"], "master") << "without the spec map, the label";
  // With the job's spec map, the type is its key, as `trainctl run` shows it.
  json typed = ReplicaRowsFromPods(PodList(), "uid-1", {{"Master", {}}, {"Worker", {}}});
  EXPECT_EQ(typed[0]["type"], "Master");
  EXPECT_EQ(typed[2]["type"], "Worker");

  std::string text =
      FormatDescribe({{"kind", "PyTorchJob"}, {"metadata", {{"name", "j"}}}}, rows, {}, Time{});
  EXPECT_NE(text.find("NODE"), std::string::npos) << text;
  EXPECT_EQ(text.find("PID"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(j-worker-1 +OOMKilled +137 +0 +kwok-node-1)")))
      << text;
}

TEST(ClusterViewTest, ATrainJobsReplicasAreItsJobSetsPods) {
  auto pod = [](const std::string& name, const std::string& rjob, const std::string& index) {
    return json{
        {"metadata",
         {{"name", name},
          {"labels",
           {{"jobset.sigs.k8s.io/jobset-name", "tj"},
            {"jobset.sigs.k8s.io/replicatedjob-name", rjob},
            {"batch.kubernetes.io/job-completion-index", index}}},
          {"ownerReferences",
           json::array({{{"uid", "batch-job-uid"}, {"controller", true}, {"kind", "Job"}}})}}},
        {"spec", {{"containers", json::array({{{"name", "node"}}})}}},
        {"status", {{"phase", "Running"}}}};
  };
  json pods = {
      {"items",
       json::array({pod("tj-node-0-1-abcde", "node", "1"), pod("tj-node-0-0-fghij", "node", "0"),
                    pod("tj-dataset-initializer-0-0-xyz", "dataset-initializer", "0")})}};
  json rows = ReplicaRowsFromPods(pods, "trainjob-uid");
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  EXPECT_EQ(rows[0]["type"], "dataset-initializer");
  EXPECT_EQ(rows[1]["name"], "tj-node-0-0-fghij");
  EXPECT_EQ(rows[1]["index"], 0);
  EXPECT_EQ(rows[2]["index"], 1);
  std::vector<LogTarget> logs = LogTargets(pods, "tj", "trainjob-uid", "node", "node-0-1-abcde");
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0].container, "node");
}

TEST(ClusterViewTest, AnMpiJobV2beta1sLauncherIsItsBatchJobsPod) {
  auto v2_pod = [](const std::string& name, const std::string& role, json owner) {
    return json{{"metadata",
                 {{"name", name},
                  {"labels",
                   {{"training.kubeflow.org/job-name", "pi"},
                    {"training.kubeflow.org/job-role", role},
                    {"training.kubeflow.org/operator-name", "mpi-operator"}}},
                  {"ownerReferences", json::array({owner})}}},
                {"spec", {{"containers", json::array({{{"name", "mpi"}}})}}},
                {"status", {{"phase", "Running"}}}};
  };
  json job_owner = {{"uid", "uid-1"}, {"controller", true}, {"kind", "MPIJob"}};
  json launcher_job = {
      {"uid", "uid-j"}, {"controller", true}, {"kind", "Job"}, {"name", "pi-launcher"}};
  json other_job = {{"uid", "uid-o"}, {"controller", true}, {"kind", "Job"}, {"name", "x"}};
  json pods = {{"items", json::array({v2_pod("pi-worker-0", "worker", job_owner),
                                      v2_pod("pi-launcher-x7k2p", "launcher", launcher_job),
                                      v2_pod("pi-launcher-other", "launcher", other_job)})}};
  json rows = ReplicaRowsFromPods(pods, "uid-1", {{"Launcher", {}}, {"Worker", {}}});
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  EXPECT_EQ(rows[0]["name"], "pi-launcher-x7k2p");
  EXPECT_EQ(rows[0]["type"], "Launcher");
  EXPECT_EQ(rows[1]["name"], "pi-worker-0");
  EXPECT_EQ(rows[1]["type"], "Worker");
  // Its logs too: `trainctl logs pi` reads the launcher's.
  std::vector<LogTarget> logs = LogTargets(pods, "pi", "uid-1", "launcher", "");
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].pod, "pi-launcher-x7k2p");
  EXPECT_EQ(logs[0].container, "mpi");
  EXPECT_EQ(logs[1].pod, "pi-worker-0");
}

TEST(ClusterViewTest, EventsOldestFirstWithRepeatCounts) {
  json events = {
      {"items", json::array({{{"reason", "SuccessfulCreatePod"},
                              {"type", "Normal"},
                              {"count", 3},
                              {"lastTimestamp", "2026-11-23T10:00:05Z"},
                              {"involvedObject", {{"kind", "PyTorchJob"}, {"name", "j"}}},
                              {"message", "Created pod: j-worker-0"}},
                             {{"reason", "JobCreated"},
                              {"type", "Normal"},
                              {"eventTime", "2026-11-23T10:00:01.000000Z"},
                              {"involvedObject", {{"kind", "PyTorchJob"}, {"name", "j"}}}}})}};
  std::vector<json> rows = EventRowsFromApi(events);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["reason"], "JobCreated");
  EXPECT_EQ(rows[1]["reason"], "SuccessfulCreatePod (x3)");
  EXPECT_EQ(rows[1]["object"], "PyTorchJob/j");
  EXPECT_TRUE(EventRowsFromApi(json::object()).empty());
}

TEST(ClusterViewTest, LogTargetsPickTheFrameworkContainerAndFilterByReplica) {
  std::vector<LogTarget> all = LogTargets(PodList(), "j", "uid-1", "pytorch", "");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].short_name, "master-0");
  EXPECT_EQ(all[0].container, "pytorch");
  EXPECT_TRUE(all[0].started);
  EXPECT_EQ(all[0].restarts, 2);
  EXPECT_FALSE(all[1].started);  // worker-0 is still being created
  EXPECT_TRUE(all[2].started);
  std::vector<LogTarget> one = LogTargets(PodList(), "j", "uid-1", "pytorch", "worker-1");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].pod, "j-worker-1");
  EXPECT_EQ(LogTargets(PodList(), "j", "uid-1", "pytorch", "j-worker-1").size(), 1u);
  // Without the framework's container the first one is read.
  EXPECT_EQ(LogTargets(PodList(), "j", "uid-1", "tensorflow", "master-0")[0].container, "sidecar");
}

TEST(ClaimsTest, RowsNameTheJobsAndMarkTheRunningOnes) {
  std::vector<std::vector<std::string>> rows =
      ClaimRows({{"default",
                  "ckpt",
                  "/s/.claims/default/ckpt",
                  2048,
                  {"pytorchjob/a", "tfjob/b"},
                  {"tfjob/b"}},
                 {"team", "idle", "/s/.claims/team/idle", 1536, {}, {}}});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"NAMESPACE", "CLAIM", "SIZE", "JOBS", "PATH"}));
  EXPECT_EQ(rows[1][2], "2Ki");
  EXPECT_EQ(rows[1][3], "pytorchjob/a,tfjob/b (running)");
  EXPECT_EQ(rows[2][2], "1.5Ki");
  EXPECT_EQ(rows[2][3], "<none>");
}

}  // namespace
}  // namespace trainctl::cli
