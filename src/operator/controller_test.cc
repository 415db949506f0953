// Unit tests of Controller::Sync, the operator's read → decide → write step, over an in-memory
// API (kube::FakeApi) and a fake clock: nothing is started, the tests feed the informers'
// caches as a reflector would and call Sync. They cover what was tested only against a real
// control plane: creating children, expectations and our own status writes while the cache lags,
// the status written for running/finished jobs, TTL deletion, deadline requeues, rejected
// writes (Created=False, conflicts), invalid and foreign jobs, and the MPI launcher's wait.
#include "operator/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "api/yaml.h"
#include "history/store.h"
#include "kube/fake_api.h"
#include "operator/sync_plan.h"
#include "operator/test_jobs.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

constexpr const char* kPods = "/api/v1/namespaces/ns/pods";
constexpr const char* kServices = "/api/v1/namespaces/ns/services";
constexpr const char* kEvents = "/api/v1/namespaces/ns/events";
constexpr const char* kPyTorchJobs = "/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs";

json Yaml(const std::string& text) {
  auto docs = api::ParseYamlDocuments(text, "test.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().message();
  return docs.ok() && !docs->empty() ? docs->at(0) : json::object();
}

const char* kPyTorch = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template: {spec: {containers: [{name: pytorch, image: x}]}}
    Worker:
      replicas: 2
      restartPolicy: Never
      template: {spec: {containers: [{name: pytorch, image: x}]}}
)";

std::vector<std::string> Names(const std::vector<json>& objects) {
  std::vector<std::string> out;
  for (const json& o : objects) out.push_back(o["metadata"].value("name", ""));
  return out;
}

std::vector<std::string> EventReasons(const kube::FakeApi& api) {
  std::vector<std::string> out;
  for (const json& e : api.Objects(kEvents)) out.push_back(e.value("reason", ""));
  std::sort(out.begin(), out.end());
  return out;
}

// The condition `type` of a stored job ("" fields when absent).
json Condition(const json& job, const std::string& type) {
  for (const json& c : job["status"].value("conditions", json::array()))
    if (c.value("type", "") == type) return c;
  return json::object();
}

class SyncTest : public ::testing::Test {
 protected:
  SyncTest() : clock_(Time(std::chrono::seconds(1700000000))) {
    auto api = std::make_unique<kube::FakeApi>();
    api_ = api.get();
    kube::ClientOptions client_options;
    client_options.qps = -1;
    client_options.max_retries = 0;
    client_options.sleep = [](Duration) {};
    client_ = std::make_unique<kube::Client>(std::move(api), client_options, &clock_);
    recorder_ =
        std::make_unique<kube::EventRecorder>(client_.get(), &clock_, kube::CorrelatorOptions{});
  }

  // A controller for `kinds`; made per test so options can change first.
  Controller& Make(std::vector<api::Kind> kinds = {api::Kind::kPyTorchJob}) {
    options_.kinds = std::move(kinds);
    controller_ =
        std::make_unique<Controller>(client_.get(), &clock_, options_, &metrics_, recorder_.get());
    return *controller_;
  }

  // Stores the job in the API and hands it to the job cache; returns the stored object.
  json AddJob(const std::string& yaml, const std::string& collection = kPyTorchJobs) {
    json job = Yaml(yaml);
    json stored = api_->Seed(collection + "/" + job["metadata"].value("name", ""), job);
    api::Kind kind = *api::KindFromName(job.value("kind", ""));
    controller_->JobCache(kind)->Apply(kube::WatchEventType::kAdded, stored);
    return stored;
  }

  // The job as the API has it now, handed to the cache (the watch caught up).
  json CatchUp(const std::string& path) {
    json stored = *api_->Object(path);
    api::Kind kind = *api::KindFromName(stored.value("kind", ""));
    controller_->JobCache(kind)->Apply(kube::WatchEventType::kModified, stored);
    return stored;
  }

  // Puts every pod the API has into the cache with `phase` (and an exit code when finished).
  void PodsAre(const std::string& phase, int exit_code = 0, const std::string& only_prefix = "") {
    for (json pod : api_->Objects(kPods)) {
      if (pod["metadata"].value("name", "").rfind(only_prefix, 0) != 0) continue;
      pod["status"]["phase"] = phase;
      json state = phase == "Running" ? json{{"running", {{"startedAt", "2023-11-14T22:13:20Z"}}}}
                                      : json{{"terminated", {{"exitCode", exit_code}}}};
      if (phase != "Pending") {
        std::string container = pod["spec"]["containers"][0].value("name", "");
        pod["status"]["containerStatuses"] =
            json::array({{{"name", container}, {"restartCount", 0}, {"state", state}}});
      }
      controller_->PodCache()->Apply(kube::WatchEventType::kModified, pod);
    }
  }

  // The PyTorchJob "pt" with `workers` Workers besides its Master, added; returns its API path.
  std::string AddPyTorchJobWithWorkers(int workers) {
    std::string yaml = kPyTorch;
    yaml.replace(yaml.find("replicas: 2"), 11, "replicas: " + std::to_string(workers));
    AddJob(yaml);
    return std::string(kPyTorchJobs) + "/pt";
  }

  // A PyTorchJob "pt" (Master + 1 Worker) whose replicas run torchrun with one process per
  // node (upstream's default, auto, leaves the count to torchrun on the node: then only the
  // local rank is known), created and running; returns its API path.
  std::string RunningTorchrunJob() {
    Make();
    std::string yaml = kPyTorch;
    yaml.replace(yaml.find("replicas: 2"), 11, "replicas: 1");
    yaml.replace(yaml.find("  pytorchReplicaSpecs:"), 0, "  nprocPerNode: \"1\"\n");
    for (size_t at = yaml.find("image: x}"); at != std::string::npos;
         at = yaml.find("image: x}", at + 1))
      yaml.replace(at, 9, "image: x, command: [torchrun, train.py]}");
    AddJob(yaml);
    const std::string path = std::string(kPyTorchJobs) + "/pt";
    EXPECT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    CatchUp(path);
    ServicesCaughtUp();
    PodsAre("Running");
    return path;
  }

  // A PyTorchJob (Master + 2 Workers) with a 40 s progress timeout, policy Fail, created and
  // running, its pods' logs empty; returns its API path.
  std::string RunningSilentJobWithProgressTimeout() {
    Make();
    std::string yaml = kPyTorch;
    const std::string metadata = "metadata: {name: pt, namespace: ns}";
    yaml.replace(yaml.find(metadata), metadata.size(),
                 "metadata: {name: pt, namespace: ns, annotations: "
                 "{trainctl.dev/progress-timeout-seconds: \"40\", "
                 "trainctl.dev/progress-timeout-policy: Fail}}");
    AddJob(yaml);
    const std::string path = std::string(kPyTorchJobs) + "/pt";
    EXPECT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    CatchUp(path);
    ServicesCaughtUp();
    PodsAre("Running");
    for (const char* pod : {"pt-master-0", "pt-worker-0", "pt-worker-1"})
      api_->SetLog(std::string(kPods) + "/" + pod, "");
    return path;
  }

  // A PyTorchJob "pt" with `run_policy` (a flow mapping), synced once, its children in the caches
  // with pods in `phase`; returns its API path.
  std::string JobWithPodsIn(const std::string& run_policy, const std::string& phase) {
    std::string yaml = kPyTorch;
    yaml += "  runPolicy: " + run_policy + "\n";
    AddJob(yaml);
    const std::string path = std::string(kPyTorchJobs) + "/pt";
    EXPECT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    CatchUp(path);
    ServicesCaughtUp();
    PodsAre(phase);
    return path;
  }

  void ServicesCaughtUp() {
    for (const json& s : api_->Objects(kServices))
      controller_->ServiceCache()->Apply(kube::WatchEventType::kAdded, s);
  }

  size_t LogRequests() const {
    size_t n = 0;
    for (const auto& r : api_->Requests("GET", kPods))
      n += r.path.find("/log") != std::string::npos;
    return n;
  }

  enum class PodChange { kUpdated, kTerminating, kDeleted };
  // The pod `name` as the API has it, handed to the cache with `phase` and a new
  // resourceVersion: updated, being deleted (deletionTimestamp set), or as a DELETED event.
  void PodEvent(const std::string& name, const std::string& phase, const std::string& rv,
                PodChange change = PodChange::kUpdated) {
    const bool deleted = change == PodChange::kDeleted;
    json pod = *api_->Object(std::string(kPods) + "/" + name);
    pod["status"]["phase"] = phase;
    pod["metadata"]["resourceVersion"] = rv;
    if (change == PodChange::kTerminating)
      pod["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
    controller_->PodCache()->Apply(
        deleted ? kube::WatchEventType::kDeleted : kube::WatchEventType::kModified, pod);
  }

  // Moves the clock past the settle time of a pod's phase change and queues what became due.
  void Settle(Duration by = kPhaseChangeSettle) {
    clock_.Advance(by);
    controller_->queue().Poke();
  }

  // Empties the work queue; returns the keys in the order the workers would get them.
  std::vector<std::string> DrainQueue() {
    std::vector<std::string> keys;
    while (controller_->queue().stats().depth > 0) {
      std::optional<std::string> key = controller_->queue().Get();
      if (!key) break;
      controller_->queue().Done(*key);
      keys.push_back(*key);
    }
    return keys;
  }

  SyncResult Sync(const std::string& key) {
    SyncResult result = controller_->Sync(key);
    EXPECT_TRUE(recorder_->Flush(Duration(5000)));
    return result;
  }

  double JobsCounted(const std::string& metric) const {
    return metrics_.Value(metric, {{"job_namespace", "ns"}, {"framework", "pytorch"}});
  }

  FakeClock clock_;
  kube::FakeApi* api_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  Metrics metrics_;
  ControllerOptions options_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(SyncTest, NewJobGetsPodsServicesCreatedStatusEventsAndOneMetric) {
  Make();
  AddJob(kPyTorch);
  SyncResult result = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(result.status.ok()) << result.status.message();

  EXPECT_EQ(Names(api_->Objects(kPods)),
            (std::vector<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1"}));
  EXPECT_EQ(Names(api_->Objects(kServices)),
            (std::vector<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1"}));
  json job = *api_->Object(std::string(kPyTorchJobs) + "/pt");
  EXPECT_EQ(Condition(job, "Created").value("status", ""), "True");
  EXPECT_EQ(Condition(job, "Created").value("reason", ""), "PyTorchJobCreated");
  EXPECT_EQ(api_->Requests("PUT", std::string(kPyTorchJobs) + "/pt/status").size(), 1u);
  EXPECT_EQ(EventReasons(*api_),
            (std::vector<std::string>{"SuccessfulCreatePod", "SuccessfulCreatePod",
                                      "SuccessfulCreatePod", "SuccessfulCreateService",
                                      "SuccessfulCreateService", "SuccessfulCreateService"}));
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 1);
}

TEST_F(SyncTest, EachReplicasServiceIsSentWithItsPod) {
  Make();
  AddJob(kPyTorch);
  // The API server holds every request: the slow start's first batch is one replica, and both
  // of its creates are waiting at once (sent one after the other, only the service would be).
  api_->Hold();
  std::thread sync([&] { EXPECT_TRUE(Sync("pytorchjobs/ns/pt").status.ok()); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (api_->Waiting() < 2 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int waiting = api_->Waiting();
  api_->Release();
  sync.join();
  EXPECT_EQ(waiting, 2) << "the master's service and pod in flight together";
  // The creates in the order the API got them, as "services/<name>" and "pods/<name>".
  std::vector<std::string> creates;
  for (const kube::HttpRequest& r : api_->Requests()) {
    const bool service = r.path.rfind(kServices, 0) == 0;
    if (r.method != "POST" || (!service && r.path.rfind(kPods, 0) != 0)) continue;  // events
    const std::string kind = service ? "services/" : "pods/";
    creates.push_back(kind + json::parse(r.body)["metadata"].value("name", ""));
  }
  ASSERT_EQ(creates.size(), 6u);
  // The scheduler gets the first pod with one service, not after all three.
  std::sort(creates.begin(), creates.begin() + 2);
  EXPECT_EQ(creates[0], "pods/pt-master-0");
  EXPECT_EQ(creates[1], "services/pt-master-0");
  std::sort(creates.begin() + 2, creates.end());
  EXPECT_EQ(creates[2], "pods/pt-worker-0");
  EXPECT_EQ(creates[5], "services/pt-worker-1");
}

TEST_F(SyncTest, AFailedServiceStopsFurtherServicesButNotThePods) {
  Make();
  api_->Fail("POST", kServices, 403, "Forbidden",
             "services \"pt-master-0\" is forbidden: exceeded quota: q, requested: services=1");
  AddJob(kPyTorch);
  SyncResult result = Sync("pytorchjobs/ns/pt");
  EXPECT_FALSE(result.status.ok());                         // retried with back-off
  EXPECT_EQ(api_->Requests("POST", kServices).size(), 1u);  // no more after the refusal
  EXPECT_EQ(Names(api_->Objects(kPods)),
            (std::vector<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1"}));
  json job = *api_->Object(std::string(kPyTorchJobs) + "/pt");
  EXPECT_EQ(Condition(job, "Created").value("reason", ""), "FailedCreateService");
}

TEST_F(SyncTest, SyncAgainBeforeTheCacheCatchesUpWritesNothing) {
  Make();
  AddJob(kPyTorch);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  api_->ClearRequests();
  // The pod, service and job caches still show the state before the first sync: the
  // expectations and the status this operator wrote stand in for them.
  SyncResult again = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(again.status.ok()) << again.status.message();
  EXPECT_TRUE(api_->Requests().empty())
      << api_->Requests()[0].method << " " << api_->Requests()[0].path;
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 1);
}

TEST_F(SyncTest, RunningPodsMakeTheJobRunningAndSucceededMasterFinishesIt) {
  Make();
  AddJob(kPyTorch);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  CatchUp(path);
  ServicesCaughtUp();
  PodsAre("Running");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json job = *api_->Object(path);
  EXPECT_EQ(Condition(job, "Running").value("status", ""), "True");
  EXPECT_EQ(job["status"]["replicaStatuses"]["Worker"].value("active", 0), 2);
  EXPECT_TRUE(job["status"].contains("startTime"));

  CatchUp(path);
  clock_.Advance(Duration(30000));
  PodsAre("Succeeded", 0, "pt-master");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  job = *api_->Object(path);
  EXPECT_EQ(Condition(job, "Succeeded").value("status", ""), "True");
  EXPECT_EQ(Condition(job, "Running").value("status", ""), "False");
  EXPECT_EQ(JobsCounted("training_operator_jobs_successful_total"), 1);
  EXPECT_TRUE(api_->Requests("DELETE", kPods).empty());  // cleanPodPolicy None keeps them
}

// With a first-status settle (the operator's default), a new job's first status waits for its
// pods' first states: pods that start within it make one write (Created, ReplicasReady and
// Running), where there would be two. Created and startTime keep the first sync's time, and
// the job is counted created once.
TEST_F(SyncTest, ANewJobsFirstStatusGoesOutWithItsPodsFirstStatesInOneWrite) {
  options_.status_count_window = Duration(1000);
  options_.first_status_settle = kPhaseChangeSettle;
  Make();
  AddJob(kPyTorch);
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  const std::string status_path = path + "/status";
  const std::string first_sync = FormatRfc3339(clock_.Now());
  SyncResult held = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(held.status.ok()) << held.status.message();
  EXPECT_EQ(api_->Objects(kPods).size(), 3u);
  EXPECT_TRUE(api_->Requests("PUT", status_path).empty());
  ASSERT_TRUE(held.requeue_after);
  EXPECT_EQ(*held.requeue_after, kPhaseChangeSettle);
  EXPECT_EQ(held.requeue_lane, kube::Lane::kPrompt);
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 0);

  ServicesCaughtUp();
  PodsAre("Running");
  clock_.Advance(kPhaseChangeSettle);  // the requeue asked for
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  ASSERT_EQ(api_->Requests("PUT", status_path).size(), 1u);
  json job = *api_->Object(path);
  EXPECT_EQ(Condition(job, "Created").value("status", ""), "True");
  EXPECT_EQ(Condition(job, "Created").value("lastTransitionTime", ""), first_sync);
  EXPECT_EQ(Condition(job, "Running").value("status", ""), "True");
  EXPECT_EQ(Condition(job, "ReplicasReady").value("status", ""), "True");
  EXPECT_EQ(job["status"].value("startTime", ""), first_sync);
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 1);

  // A job whose pods do not start within the settle: its first status when it is due.
  CatchUp(path);
  std::string yaml = kPyTorch;
  yaml.replace(yaml.find("name: pt,"), 9, "name: slow,");
  AddJob(yaml);
  const std::string slow = std::string(kPyTorchJobs) + "/slow/status";
  ASSERT_TRUE(Sync("pytorchjobs/ns/slow").status.ok());
  EXPECT_TRUE(api_->Requests("PUT", slow).empty());
  clock_.Advance(kPhaseChangeSettle);
  SyncResult due = Sync("pytorchjobs/ns/slow");
  ASSERT_TRUE(due.status.ok()) << due.status.message();
  ASSERT_EQ(api_->Requests("PUT", slow).size(), 1u);
  EXPECT_EQ(due.requeue_lane, kube::Lane::kRoutine);
  json starting = *api_->Object(std::string(kPyTorchJobs) + "/slow");
  EXPECT_EQ(Condition(starting, "Created").value("status", ""), "True");
  EXPECT_EQ(Condition(starting, "ReplicasReady").value("reason", ""), "Starting");
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 2);
}

TEST_F(SyncTest, AJobWhosePodChangedPhaseOrWasLostIsSyncedAheadOfRoutineChanges) {
  Make();
  for (const std::string name : {"pa", "pb"}) {
    std::string yaml = kPyTorch;
    yaml.replace(yaml.find("name: pt,"), 9, "name: " + name + ",");
    AddJob(yaml);
    ASSERT_TRUE(Sync("pytorchjobs/ns/" + name).status.ok());
  }
  ServicesCaughtUp();
  PodsAre("Running");
  DrainQueue();

  PodEvent("pa-worker-0", "Running", "901");  // routine: some detail of a running pod changed
  PodEvent("pb-master-0", "Failed", "902");
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pb", "pytorchjobs/ns/pa"}));

  // Vanished while running, never seen terminating (a forced delete, or a watch gap).
  PodEvent("pb-worker-0", "Running", "903");
  PodEvent("pa-worker-1", "Running", "904", PodChange::kDeleted);
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pa", "pytorchjobs/ns/pb"}));

  // A graceful delete of a running pod (a clean-up) is routine, and so is a succeeded pod's.
  PodEvent("pb-worker-1", "Running", "905");
  PodEvent("pa-worker-0", "Running", "906", PodChange::kTerminating);
  PodEvent("pa-worker-0", "Running", "907", PodChange::kDeleted);
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pb", "pytorchjobs/ns/pa"}));
  PodEvent("pb-master-0", "Failed", "908");
  DrainQueue();
  // A pod that finished may finish its job: it goes ahead of routine changes queued before it,
  // once the settle time has passed (not before: the job's other pods may follow).
  PodEvent("pb-worker-1", "Running", "909");
  PodEvent("pa-master-0", "Succeeded", "910");
  EXPECT_EQ(controller_->queue().stats().delayed, 1u);
  clock_.Advance(kPhaseChangeSettle - Duration(1));
  controller_->queue().Poke();
  EXPECT_EQ(controller_->queue().stats().delayed, 1u);
  Settle(Duration(1));
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pa", "pytorchjobs/ns/pb"}));
  PodEvent("pb-worker-1", "Running", "9101");
  PodEvent("pa-master-0", "Succeeded", "911", PodChange::kDeleted);
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pb", "pytorchjobs/ns/pa"}));
  // A pod that starts may start its job: ahead of a routine change queued before it, even when
  // a routine change of its own job was queued first.
  PodEvent("pa-worker-1", "Pending", "9102");
  Settle();
  DrainQueue();
  PodEvent("pa-worker-0", "Running", "9103");
  PodEvent("pb-worker-1", "Running", "9104");
  PodEvent("pa-worker-1", "Running", "9105");
  Settle();
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pa", "pytorchjobs/ns/pb"}));
  // A failure goes ahead at once, of a start queued before it too.
  PodEvent("pa-worker-1", "Pending", "9106");
  Settle();
  DrainQueue();
  PodEvent("pa-worker-1", "Running", "9107");
  Settle();
  PodEvent("pb-worker-1", "Failed", "9108");
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pb", "pytorchjobs/ns/pa"}));
  PodEvent("pb-worker-1", "Running", "9109");
  Settle();
  DrainQueue();
  // The failed pod deleted to be replaced (a grace-0 delete, never seen terminating) is urgent.
  PodEvent("pa-worker-1", "Running", "912");
  PodEvent("pb-master-0", "Failed", "913", PodChange::kDeleted);
  EXPECT_EQ(DrainQueue(), (std::vector<std::string>{"pytorchjobs/ns/pb", "pytorchjobs/ns/pa"}));
}

TEST_F(SyncTest, ReplicaCountsAloneAreWrittenOncePerWindowAndConditionsAtOnce) {
  options_.status_count_window = Duration(1000);
  Make();
  AddJob(kPyTorch);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  const std::string status_path = path + "/status";
  CatchUp(path);
  ServicesCaughtUp();
  PodsAre("Running");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());  // Running, at once
  CatchUp(path);
  api_->ClearRequests();

  // One Worker finishes: its count is held, and the sync asks to come back when it is due.
  PodsAre("Succeeded", 0, "pt-worker-0");
  SyncResult held = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(held.status.ok()) << held.status.message();
  EXPECT_TRUE(api_->Requests("PUT", status_path).empty());
  ASSERT_TRUE(held.requeue_after);
  EXPECT_LE(*held.requeue_after, Duration(1000));

  // The second Worker finishes 400 ms later: still held, the wait is what is left of the window.
  clock_.Advance(Duration(400));
  PodsAre("Succeeded", 0, "pt-worker-1");
  SyncResult still = Sync("pytorchjobs/ns/pt");
  EXPECT_TRUE(api_->Requests("PUT", status_path).empty());
  ASSERT_TRUE(still.requeue_after);
  EXPECT_LE(*still.requeue_after, Duration(600));

  // Due, but the write meets a conflict: the retry writes at once, not a window later.
  clock_.Advance(Duration(600));
  api_->Fail("PUT", status_path, 409, "Conflict", "modified", 1);
  EXPECT_EQ(Sync("pytorchjobs/ns/pt").status.code(), StatusCode::kConflict);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  ASSERT_EQ(api_->Requests("PUT", status_path).size(), 2u);  // the conflict, then one write
  EXPECT_EQ((*api_->Object(path))["status"]["replicaStatuses"]["Worker"].value("succeeded", 0), 2);
  CatchUp(path);

  // The Master finishes: Succeeded is a condition, written at once.
  api_->ClearRequests();
  PodsAre("Succeeded", 0, "pt-master");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  ASSERT_EQ(api_->Requests("PUT", status_path).size(), 1u);
  EXPECT_EQ(Condition(*api_->Object(path), "Succeeded").value("status", ""), "True");
}

// An 8-replica job whose pods start 20 s apart (a starved scheduler or node): while they start,
// their counts and the Starting message's details go out after the 30-s starting window, or
// after as long as the job had waited when that is longer, not once per start; the end of the
// start (all running) is written at once. Each sync runs when a pod starts or when the held
// change is due (the requeue the sync asked for).
TEST_F(SyncTest, WhileItsReplicasStartTheirCountsWaitTheLongerStartingWindow) {
  options_.status_count_window = Duration(1000);
  Make();
  const std::string path = AddPyTorchJobWithWorkers(7);
  auto writes = [&] { return api_->Requests("PUT", path + "/status").size(); };
  std::optional<Time> due;
  auto sync = [&] {
    SyncResult r = Sync("pytorchjobs/ns/pt");
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    CatchUp(path);
    due.reset();
    if (r.requeue_after) due = clock_.Now() + *r.requeue_after;
  };
  sync();
  EXPECT_EQ(writes(), 1u);  // Created
  ServicesCaughtUp();
  std::vector<size_t> after_each;
  for (int i = 0; i < 7; ++i) {
    const Time start = clock_.Now() + Duration(20000);
    if (due && *due <= start) {
      clock_.Advance(std::chrono::duration_cast<Duration>(*due - clock_.Now()));
      sync();  // the held counts are due
    }
    clock_.Advance(std::chrono::duration_cast<Duration>(start - clock_.Now()));
    PodsAre("Running", 0, "pt-worker-" + std::to_string(i));
    sync();
    after_each.push_back(writes());
    ASSERT_TRUE(due) << "a held change asks to be looked at again";
    EXPECT_LE(*due - clock_.Now(), kMaxNotReadyHold);
  }
  // Starts at 20, 40, …, 140 s: written at 50 s (held 30 s from 20 s) and 120 s (held from 60 s
  // as long as the job had waited, 60 s); the start at 140 s waits till 260 s.
  EXPECT_EQ(after_each, (std::vector<size_t>{1, 1, 2, 2, 2, 3, 3}));
  const json stored = *api_->Object(path);
  EXPECT_EQ(stored["status"]["replicaStatuses"]["Worker"].value("active", 0), 5);  // as of 120 s
  EXPECT_EQ(Condition(stored, "ReplicasReady").value("reason", ""), "Starting");

  clock_.Advance(Duration(20000));
  PodsAre("Running", 0, "pt-master");
  sync();
  EXPECT_EQ(writes(), 4u);  // all running: at once, with the last held count
  const json running = *api_->Object(path);
  EXPECT_EQ(Condition(running, "Running").value("status", ""), "True");
  EXPECT_EQ(Condition(running, "ReplicasReady").value("status", ""), "True");
  EXPECT_EQ(running["status"]["replicaStatuses"]["Worker"].value("active", 0), 7);
}

// A whole lifecycle of a 300-replica job, synced on every pod change (the worst case): its
// status is written for Created, for the counts once while the workers start (they are held
// for the 30-s starting window), for Running and for Succeeded — 4 writes, where a flat 1-s
// window would make 9.
TEST_F(SyncTest, ABigJobsLifecycleWritesItsStatusOncePerConditionAndFewCountWindows) {
  options_.status_count_window = Duration(1000);
  Make();
  const std::string path = AddPyTorchJobWithWorkers(299);
  const std::string status_path = path + "/status";
  auto writes = [&] { return api_->Requests("PUT", status_path).size(); };
  auto sync = [&] {
    ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    CatchUp(path);
  };
  sync();
  ASSERT_EQ(api_->Objects(kPods).size(), 300u);
  EXPECT_EQ(writes(), 1u);  // Created
  ServicesCaughtUp();

  // The workers start one every 20 ms (6 s), each change synced at once: all held.
  for (int i = 0; i < 299; ++i) {
    clock_.Advance(Duration(20));
    json pod = *api_->Object(std::string(kPods) + "/pt-worker-" + std::to_string(i));
    pod["status"]["phase"] = "Running";
    pod["status"]["containerStatuses"] =
        json::array({{{"name", "pytorch"},
                      {"restartCount", 0},
                      {"state", {{"running", {{"startedAt", "2023-11-14T22:13:20Z"}}}}}}});
    controller_->PodCache()->Apply(kube::WatchEventType::kModified, pod);
    sync();
  }
  EXPECT_EQ(writes(), 1u);
  clock_.Advance(Duration(30000));
  sync();  // the held counts are due (30 s after the first start)
  EXPECT_EQ(writes(), 2u);
  EXPECT_EQ((*api_->Object(path))["status"]["replicaStatuses"]["Worker"].value("active", 0), 299);
  sync();  // nothing new: no write
  EXPECT_EQ(writes(), 2u);

  PodsAre("Running", 0, "pt-master");
  sync();
  EXPECT_EQ(writes(), 3u);  // Running, at once
  EXPECT_EQ(Condition(*api_->Object(path), "Running").value("status", ""), "True");

  PodsAre("Succeeded", 0);
  sync();
  EXPECT_EQ(writes(), 4u);  // Succeeded, at once
  EXPECT_EQ(Condition(*api_->Object(path), "Succeeded").value("status", ""), "True");
}

TEST_F(SyncTest, FinishedJobWithTtlIsDeletedWhenItRunsOut) {
  Make();
  const std::string path = JobWithPodsIn("{ttlSecondsAfterFinished: 60}", "Succeeded");
  SyncResult finished = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(finished.status.ok()) << finished.status.message();
  ASSERT_TRUE(finished.requeue_after.has_value());
  EXPECT_EQ(*finished.requeue_after, Duration(60000));
  EXPECT_TRUE(api_->Object(path).has_value());

  CatchUp(path);
  clock_.Advance(Duration(60000));
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_FALSE(api_->Object(path).has_value());
  ASSERT_EQ(api_->Requests("DELETE", path).size(), 1u);
}

// The job's deletion has not reached the cache when the next pass runs (a pod event woke it):
// that pass tries again and gets 404, and reports nothing: one event, one jobs_deleted count.
TEST_F(SyncTest, TtlDeletionIsReportedOnceWhenTheCacheHasNotSeenItYet) {
  Make();
  const std::string path = JobWithPodsIn("{ttlSecondsAfterFinished: 60}", "Succeeded");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  CatchUp(path);
  clock_.Advance(Duration(60000));
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  ASSERT_FALSE(api_->Object(path).has_value());

  SyncResult again = Sync("pytorchjobs/ns/pt");              // the cache still holds the job
  EXPECT_TRUE(again.status.ok()) << again.status.message();  // gone is what was wanted
  EXPECT_EQ(api_->Requests("DELETE", path).size(), 2u);
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "SuccessfulDeleteJob"), 1);
  EXPECT_EQ(JobsCounted("training_operator_jobs_deleted_total"), 1.0);
}

TEST_F(SyncTest, ActiveDeadlineIsARequeueAndThenAFailureThatStopsRunningPods) {
  Make();
  const std::string path =
      JobWithPodsIn("{activeDeadlineSeconds: 100, cleanPodPolicy: Running}", "Running");
  SyncResult running = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(running.requeue_after.has_value());
  EXPECT_EQ(*running.requeue_after, Duration(100000));

  CatchUp(path);
  clock_.Advance(Duration(100000));
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json job = *api_->Object(path);
  json failed = Condition(job, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "PyTorchJobFailed");
  EXPECT_NE(failed.value("message", "").find("deadline"), std::string::npos) << failed.dump();
  EXPECT_EQ(api_->Requests("DELETE", kPods).size(), 3u);  // cleanPodPolicy Running
}

// A suspend with a checkpoint notice (api/checkpoint_notice.h): the notice is recorded on the
// job, each pod gets it as an annotation (shown to its containers by the downward-API volume
// the pod was built with), and the pods are deleted only once every one reported done.
TEST_F(SyncTest, ASuspendWithANoticeTellsEveryPodAndDeletesThemOnceAllAreDone) {
  Make();
  std::string yaml = kPyTorch;
  const std::string metadata = "metadata: {name: pt, namespace: ns}";
  yaml.replace(yaml.find(metadata), metadata.size(),
               "metadata: {name: pt, namespace: ns, annotations: "
               "{trainctl.dev/checkpoint-notice-seconds: \"30\"}}");
  AddJob(yaml);
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json pod = *api_->Object(std::string(kPods) + "/pt-worker-0");
  EXPECT_EQ(pod["spec"]["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
            "metadata.annotations['trainctl.dev/checkpoint-notice']")
      << pod["spec"].dump();
  EXPECT_NE(pod["spec"]["containers"][0]["env"].dump().find(
                "\"TRAINCTL_NOTICE_FILE\",\"value\":\"/etc/trainctl/notice/notice.json\""),
            std::string::npos);
  CatchUp(path);
  ServicesCaughtUp();
  PodsAre("Running");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());

  json job = CatchUp(path);
  job["spec"]["runPolicy"]["suspend"] = true;
  api_->Seed(path, job);
  CatchUp(path);
  api_->ClearRequests();
  SyncResult told = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(told.status.ok()) << told.status.message();
  EXPECT_TRUE(api_->Requests("DELETE", kPods).empty()) << "held for the notice";
  EXPECT_EQ(api_->Requests("PATCH", kPods).size(), 3u);
  job = *api_->Object(path);
  const std::string notice =
      job["metadata"]["annotations"].value("trainctl.dev/checkpoint-notice", "");
  EXPECT_NE(notice.find("\"reason\":\"Suspended\""), std::string::npos) << notice;
  for (const char* name : {"pt-master-0", "pt-worker-0", "pt-worker-1"}) {
    json told_pod = *api_->Object(std::string(kPods) + "/" + name);
    EXPECT_EQ(told_pod["metadata"]["annotations"].value("trainctl.dev/checkpoint-notice", ""),
              notice)
        << name;
  }
  EXPECT_EQ(Condition(job, "Suspended").value("status", ""), "True");
  EXPECT_NE(EventReasons(*api_).size(), 0u);
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "CheckpointNotice"), reasons.end());
  ASSERT_TRUE(told.requeue_after);
  EXPECT_LE(*told.requeue_after, Duration(30000));

  // The caches catch up: nothing is told twice, nothing deleted yet.
  CatchUp(path);
  PodsAre("Running");
  api_->ClearRequests();
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_TRUE(api_->Requests("PATCH", kPods).empty());
  EXPECT_TRUE(api_->Requests("DELETE", kPods).empty());

  // Every pod reports done (the documented annotation): the pods go before the 30 s.
  for (const char* name : {"pt-master-0", "pt-worker-0", "pt-worker-1"}) {
    json done = *api_->Object(std::string(kPods) + "/" + name);
    done["metadata"]["annotations"]["trainctl.dev/checkpoint-done"] = "true";
    api_->Seed(std::string(kPods) + "/" + name, done);
  }
  PodsAre("Running");
  clock_.Advance(Duration(2000));
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_EQ(api_->Requests("DELETE", kPods).size(), 3u);
}

// Deleting a notice job (api/checkpoint_notice.h): its finalizer, added at its first sync, holds
// the deletion while the pods are told; released once they are done.
TEST_F(SyncTest, ADeletedNoticeJobTellsItsPodsBeforeItsFinalizerIsReleased) {
  Make();
  std::string yaml = kPyTorch;
  const std::string metadata = "metadata: {name: pt, namespace: ns}";
  yaml.replace(yaml.find(metadata), metadata.size(),
               "metadata: {name: pt, namespace: ns, finalizers: [example.com/keep], "
               "annotations: {trainctl.dev/checkpoint-notice-seconds: \"60\"}}");
  AddJob(yaml);
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json job = CatchUp(path);
  EXPECT_EQ(job["metadata"]["finalizers"],
            json::array({"example.com/keep", "trainctl.dev/checkpoint-notice"}));
  ServicesCaughtUp();
  PodsAre("Running");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());

  job = CatchUp(path);
  job["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:30Z";
  api_->Seed(path, job);
  CatchUp(path);
  api_->ClearRequests();
  SyncResult told = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(told.status.ok()) << told.status.message();
  EXPECT_EQ(api_->Requests("PATCH", kPods).size(), 3u);
  EXPECT_TRUE(api_->Requests("DELETE", kPods).empty()) << "the garbage collector deletes them";
  EXPECT_TRUE(api_->Requests("PUT", path + "/status").empty()) << "no status for a deleted job";
  job = *api_->Object(path);
  EXPECT_EQ(job["metadata"]["finalizers"].size(), 2u) << "held";
  ASSERT_TRUE(told.requeue_after);

  for (const char* name : {"pt-master-0", "pt-worker-0", "pt-worker-1"}) {
    json done = *api_->Object(std::string(kPods) + "/" + name);
    done["metadata"]["annotations"]["trainctl.dev/checkpoint-done"] = "true";
    api_->Seed(std::string(kPods) + "/" + name, done);
  }
  PodsAre("Running");
  CatchUp(path);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  job = *api_->Object(path);
  EXPECT_EQ(job["metadata"]["finalizers"], json::array({"example.com/keep"}))
      << "ours released, the other kept";
}

// The cache still shows an old incarnation of pt-master-0 while the API already has a newer one
// under the same name (the soak in bench/soak.py looks for exactly this): the delete names the
// incarnation the decision was made on, so the newer pod stays.
TEST_F(SyncTest, DeletesApplyToTheIncarnationSeenNotANewerOneWithItsName) {
  Make();
  const std::string path =
      JobWithPodsIn("{activeDeadlineSeconds: 100, cleanPodPolicy: Running}", "Running");
  const std::string master = std::string(kPods) + "/pt-master-0";
  json newer = *api_->Object(master);
  newer["metadata"]["uid"] = "00000000-0000-4000-8000-00000000beef";
  api_->Seed(master, newer);

  CatchUp(path);
  clock_.Advance(Duration(100000));
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_EQ(api_->Requests("DELETE", kPods).size(), 3u);
  ASSERT_TRUE(api_->Object(master).has_value()) << "the newer incarnation was deleted";
  EXPECT_EQ((*api_->Object(master))["metadata"].value("uid", ""),
            "00000000-0000-4000-8000-00000000beef");
  EXPECT_EQ(Names(api_->Objects(kPods)), (std::vector<std::string>{"pt-master-0"}));
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "SuccessfulDeletePod"), 2);
}

TEST_F(SyncTest, RejectedPodCreateStopsTheBatchAndMarksCreatedFalse) {
  Make();
  api_->Fail("POST", kPods, 403, "Forbidden",
             "pods \"pt-master-0\" is forbidden: exceeded quota: q, requested: pods=1");
  AddJob(kPyTorch);
  SyncResult result = Sync("pytorchjobs/ns/pt");
  EXPECT_FALSE(result.status.ok());                     // retried with back-off
  EXPECT_EQ(api_->Requests("POST", kPods).size(), 1u);  // slow start: one failed request
  json job = *api_->Object(std::string(kPyTorchJobs) + "/pt");
  json created = Condition(job, "Created");
  EXPECT_EQ(created.value("status", ""), "False");
  EXPECT_NE(created.value("message", "").find("exceeded quota"), std::string::npos)
      << created.dump();
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "FailedCreatePod"), reasons.end());
  // Why it is not running: the quota, first in the list, with one Warning event.
  json why = job["status"]["conditions"][0];
  EXPECT_EQ(why.value("type", ""), "ReplicasReady");
  EXPECT_EQ(why.value("reason", ""), "QuotaExceeded");
  EXPECT_NE(why.value("message", "").find("exceeded quota: q"), std::string::npos) << why.dump();
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "QuotaExceeded"), 1);

  // The retry is refused the same way: no status write, no second event.
  CatchUp(std::string(kPyTorchJobs) + "/pt");
  size_t puts = api_->Requests("PUT", std::string(kPyTorchJobs) + "/pt/status").size();
  clock_.Advance(Duration(30000));
  EXPECT_FALSE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_EQ(api_->Requests("PUT", std::string(kPyTorchJobs) + "/pt/status").size(), puts);
  reasons = EventReasons(*api_);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "QuotaExceeded"), 1);
}

TEST_F(SyncTest, ProgressTimeoutProbesPodLogsAndFailsASilentJob) {
  options_.progress_probes_per_minute = 0;  // no budget limit here (tested below)
  const std::string path = RunningSilentJobWithProgressTimeout();
  api_->SetLog(std::string(kPods) + "/pt-master-0", "s");  // rank 0 writes

  SyncResult healthy = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(healthy.status.ok());
  std::vector<kube::HttpRequest> probes =
      api_->Requests("GET", std::string(kPods) + "/pt-master-0/log");
  ASSERT_EQ(probes.size(), 1u);  // the master wrote: one request is enough
  EXPECT_NE(probes[0].path.find("sinceSeconds=40"), std::string::npos) << probes[0].path;
  EXPECT_NE(probes[0].path.find("limitBytes=1"), std::string::npos) << probes[0].path;
  ASSERT_TRUE(healthy.requeue_after);
  EXPECT_LE(*healthy.requeue_after, Duration(10000));  // timeout / 4

  api_->SetLog(std::string(kPods) + "/pt-master-0", "");  // everyone goes quiet
  for (int pass = 1; pass <= 4; ++pass) {
    CatchUp(path);
    clock_.Advance(Duration(10000));
    ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    json job = *api_->Object(path);
    if (pass < 4) {
      EXPECT_NE(Condition(job, "Failed").value("status", ""), "True") << pass;
    }
  }
  json job = *api_->Object(path);
  json failed = Condition(job, "Failed");
  EXPECT_EQ(failed.value("status", ""), "True") << job["status"].dump();
  EXPECT_NE(failed.value("message", "").find("made no progress"), std::string::npos);
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "ProgressTimeout"), reasons.end());
  // 1 healthy probe, then 4 silent ones asking every running pod (3): 13 log requests.
  EXPECT_EQ(LogRequests(), 13u);
}

TEST_F(SyncTest, ProgressProbesStayWithinTheirBudgetAndStillProveSilence) {
  options_.progress_probes_per_minute = 4;
  const std::string path = RunningSilentJobWithProgressTimeout();  // silent from the start
  // Every 10 s for 3 minutes. A silent probe asks all three pods: with 4 requests a minute (one
  // every 15 s, 10 s of them at once) the second probe waits for its reserved turn at 35 s and
  // goes on the pass after it; the silence is proven later, but it is proven.
  std::vector<int> failed_at;
  for (int pass = 0; pass < 18; ++pass) {
    CatchUp(path);
    ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
    if (Condition(*api_->Object(path), "Failed").value("status", "") == "True")
      failed_at.push_back(pass * 10);
    clock_.Advance(Duration(10000));
  }
  EXPECT_EQ(LogRequests(), 6u);  // two probes of three pods, then the job has failed
  ASSERT_FALSE(failed_at.empty());
  EXPECT_EQ(failed_at.front(), 40);  // at the turn reserved for the second probe
}

// A PyTorchJob whose replicas run torchrun: rank 1 (the Worker's local rank 0) exits with 7
// and its agent waits at the exit barrier, so the pod stays Running. The operator reads the
// report from the Worker's log, names the rank in ReplicasReady, and the Master's success says
// what failed meanwhile.
TEST_F(SyncTest, AFailedRankUnderTorchrunIsReadFromTheLogAndNamed) {
  options_.progress_probes_per_minute = 0;
  const std::string path = RunningTorchrunJob();
  api_->SetLog(std::string(kPods) + "/pt-master-0", "step 1 loss 0.9\n");
  api_->SetLog(std::string(kPods) + "/pt-worker-0",
               "rank 1: loss is nan, giving up\n"
               "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7) "
               "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n");
  Settle();
  CatchUp(path);
  SyncResult probed = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(probed.status.ok());
  std::vector<kube::HttpRequest> asked =
      api_->Requests("GET", std::string(kPods) + "/pt-worker-0/log");
  ASSERT_FALSE(asked.empty());
  EXPECT_NE(asked.back().path.find("tailLines=50"), std::string::npos) << asked.back().path;
  ASSERT_TRUE(probed.requeue_after);
  EXPECT_LE(*probed.requeue_after, kRankProbePeriod);
  json ready = Condition(*api_->Object(path), "ReplicasReady");
  EXPECT_EQ(ready.value("reason", ""), "RankFailed") << ready.dump();
  const std::string message = ready.value("message", "");
  EXPECT_NE(message.find("pt-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Last output:\nrank 1: loss is nan, giving up"), std::string::npos)
      << message;
  std::vector<std::string> reasons = EventReasons(*api_);
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), "RankFailed"), reasons.end());

  // The failure is kept: no more log requests for that pod, and the Master's success says it.
  size_t before = LogRequests();
  PodsAre("Succeeded", 0, "pt-master");
  Settle();
  CatchUp(path);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json done = Condition(*api_->Object(path), "Succeeded");
  EXPECT_EQ(done.value("status", ""), "True") << api_->Object(path)->dump();
  EXPECT_NE(done.value("message", "")
                .find("While it ran, a process failed: pt-worker-0 (Worker "
                      "0): rank 1 (local_rank 0) exited with code 7"),
            std::string::npos)
      << done.dump();
  EXPECT_EQ(LogRequests(), before) << "the worker's failure is known; the master is done";
}

TEST_F(SyncTest, RankProbesTakeTurnsWithinTheSharedBudget) {
  options_.progress_probes_per_minute = 6;  // one request every 10 s, 10 s of them at once
  const std::string path = RunningTorchrunJob();
  for (const char* pod : {"pt-master-0", "pt-worker-0"})
    api_->SetLog(std::string(kPods) + "/" + pod, "step 1\n");
  Settle();
  std::vector<size_t> asked;  // log requests after each pass, every 10 s for a minute
  std::vector<Duration> again;
  for (int pass = 0; pass <= 6; ++pass) {
    CatchUp(path);
    SyncResult r = Sync("pytorchjobs/ns/pt");
    ASSERT_TRUE(r.status.ok());
    asked.push_back(LogRequests());
    again.push_back(r.requeue_after.value_or(Duration::zero()));
    clock_.Advance(Duration(10000));
  }
  // Two pods a probe: at 0 s (the burst), 10 s, then at the turns reserved at 20 s and 40 s
  // (30 s, 50 s); at 60 s the next turn (70 s) is not yet due.
  EXPECT_EQ(asked, (std::vector<size_t>{2, 4, 4, 6, 6, 8, 8}));
  EXPECT_EQ(again[2], Duration(10000)) << "a job over the budget comes back at its turn";
  EXPECT_EQ(again[6], Duration(10000));
}

TEST(RankProbeTest, OnlyTorchrunReplicasAreAskedInTurnsAtMostEveryPeriod) {
  std::string yaml = kPyTorch;
  yaml.replace(yaml.find("replicas: 2"), 11, "replicas: 6");
  size_t last = yaml.rfind("image: x}");
  yaml.replace(last, 9, "image: x, args: [python3, -m, torch.distributed.run, t.py]}");
  auto loaded = api::LoadJobsFromText(yaml, "t.yaml");
  ASSERT_TRUE(loaded.ok());
  api::Job job = (*loaded)[0].job;
  EXPECT_FALSE(RunsTorchrun(job, "Master"));
  EXPECT_TRUE(RunsTorchrun(job, "Worker"));
  std::vector<engine::ReplicaObservation> observed;
  for (int i = 0; i < 6; ++i) {
    engine::ReplicaObservation o;
    o.type = "Worker";
    o.index = i;
    o.uid = "u" + std::to_string(i);
    o.name = "pt-worker-" + std::to_string(i);
    o.phase = engine::Phase::kRunning;
    observed.push_back(o);
  }
  engine::ReplicaObservation master;
  master.type = "Master";
  master.uid = "m";
  master.phase = engine::Phase::kRunning;
  observed.push_back(master);
  const Time t0{Duration(1700000000000)};
  RankProbeState state;
  state.failures["u1"] = {};
  RankProbePlan first = PlanRankProbe(job, observed, state, t0);
  ASSERT_TRUE(first.due);
  EXPECT_EQ(first.pods, (std::vector<size_t>{0, 2, 3, 4}));  // not the master, not u1's
  state.last_probe = t0;
  state.turn = 4;
  RankProbePlan soon = PlanRankProbe(job, observed, state, t0 + Duration(4000));
  EXPECT_FALSE(soon.due);
  EXPECT_EQ(soon.next, Duration(6000));
  RankProbePlan next = PlanRankProbe(job, observed, state, t0 + kRankProbePeriod);
  ASSERT_TRUE(next.due);
  EXPECT_EQ(next.pods, (std::vector<size_t>{5, 0, 2, 3}));  // the rest first, in turn
  // A job without torchrun is never asked.
  auto plain = api::LoadJobsFromText(kPyTorch, "t.yaml");
  ASSERT_TRUE(plain.ok());
  RankProbePlan none = PlanRankProbe((*plain)[0].job, observed, {}, t0);
  EXPECT_FALSE(none.due);
  EXPECT_EQ(none.next, Duration::zero());
}

TEST(ProbePlanTest, RankOrderAndTheWindowSinceTheLastProbe) {
  auto loaded = api::LoadJobsFromText(kPyTorch, "t.yaml");
  ASSERT_TRUE(loaded.ok());
  api::Job job = (*loaded)[0].job;
  api::ProgressPolicy policy{Duration(120000), api::ProgressAction::kWarn};
  std::vector<engine::ReplicaObservation> observed(3);
  observed[0].name = "pt-worker-1";
  observed[0].type = "Worker";
  observed[0].index = 1;
  observed[1].name = "pt-worker-0";
  observed[1].type = "Worker";
  observed[1].index = 0;
  observed[2].name = "pt-master-0";
  observed[2].type = "Master";
  observed[2].index = 0;
  for (auto& o : observed) o.phase = engine::Phase::kRunning;
  Time t0 = Time(std::chrono::seconds(1700000000));
  ProbePlan first = PlanProbe(job, policy, observed, {}, t0);
  EXPECT_TRUE(first.due);
  EXPECT_EQ(first.since_seconds, 120);
  EXPECT_EQ(first.pods, (std::vector<std::string>{"pt-master-0", "pt-worker-0", "pt-worker-1"}));
  ProbeState state{t0, t0, std::nullopt};
  ProbePlan early = PlanProbe(job, policy, observed, state, t0 + std::chrono::seconds(10));
  EXPECT_FALSE(early.due);
  EXPECT_EQ(early.next, Duration(20000));  // every timeout / 4 = 30 s
  ProbePlan late = PlanProbe(job, policy, observed, state, t0 + std::chrono::seconds(95));
  EXPECT_TRUE(late.due);
  EXPECT_EQ(late.since_seconds, 95);  // covers everything since the last probe
}

TEST_F(SyncTest, StatusConflictIsRetriedAndMetricsWaitForAWriteThatSticks) {
  Make();
  api_->Fail("PUT", std::string(kPyTorchJobs) + "/pt/status", 409, "Conflict", "modified", 1);
  AddJob(kPyTorch);
  SyncResult first = Sync("pytorchjobs/ns/pt");
  EXPECT_EQ(first.status.code(), StatusCode::kConflict) << first.status.message();
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 0);

  SyncResult second = Sync("pytorchjobs/ns/pt");
  ASSERT_TRUE(second.status.ok()) << second.status.message();
  EXPECT_EQ(JobsCounted("training_operator_jobs_created_total"), 1);
  EXPECT_EQ(api_->Requests("POST", kPods).size(), 3u);  // not created twice
  EXPECT_EQ(api_->Requests("PUT", std::string(kPyTorchJobs) + "/pt/status").size(), 2u);
}

TEST_F(SyncTest, JobManagedElsewhereOrBeingDeletedIsLeftAlone) {
  Make();
  std::string foreign = kPyTorch;
  foreign += "  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\n";
  AddJob(foreign);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());

  json deleting = Yaml(kPyTorch);
  deleting["metadata"]["name"] = "gone";
  deleting["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
  controller_->JobCache(api::Kind::kPyTorchJob)
      ->Apply(kube::WatchEventType::kAdded,
              api_->Seed(std::string(kPyTorchJobs) + "/gone", deleting));
  ASSERT_TRUE(Sync("pytorchjobs/ns/gone").status.ok());
  ASSERT_TRUE(Sync("pytorchjobs/ns/unknown").status.ok());
  ASSERT_TRUE(Sync("tfjobs/ns/pt").status.ok());  // kind not enabled
  EXPECT_TRUE(api_->Requests().empty())
      << api_->Requests()[0].method << " " << api_->Requests()[0].path;
}

TEST_F(SyncTest, InvalidJobIsMarkedCreatedFalseOnceWithAWarningEvent) {
  Make();
  std::string yaml = kPyTorch;
  yaml.replace(yaml.find("replicas: 1"), 11, "replicas: 2");  // two Masters
  AddJob(yaml);
  SyncResult result = Sync("pytorchjobs/ns/pt");
  EXPECT_EQ(result.status.code(), StatusCode::kInvalid);
  EXPECT_TRUE(api_->Objects(kPods).empty());
  json job = *api_->Object(std::string(kPyTorchJobs) + "/pt");
  json created = Condition(job, "Created");
  EXPECT_EQ(created.value("status", ""), "False");
  EXPECT_EQ(created.value("reason", ""), "PyTorchJobFailedValidation");
  EXPECT_NE(
      created.value("message", "").find("spec.pytorchReplicaSpecs[Master].replicas: Forbidden"),
      std::string::npos)
      << created.dump();
  EXPECT_EQ(EventReasons(*api_), (std::vector<std::string>{"PyTorchJobFailedValidation"}));
  // Retried with back-off: the same verdict is not written again.
  EXPECT_EQ(Sync("pytorchjobs/ns/pt").status.code(), StatusCode::kInvalid);
  EXPECT_EQ(api_->Requests("PUT", std::string(kPyTorchJobs) + "/pt/status").size(), 1u);
}

TEST_F(SyncTest, MpiJobGetsItsConfigAndRbacAndTheLauncherWaitsForRunningWorkers) {
  Make({api::Kind::kMPIJob});
  const std::string jobs = "/apis/kubeflow.org/v1/namespaces/ns/mpijobs";
  AddJob(testing::kMpiJob, jobs);
  ASSERT_TRUE(Sync("mpijobs/ns/mpi").status.ok());
  EXPECT_TRUE(api_->Object("/api/v1/namespaces/ns/configmaps/mpi-config").has_value());
  EXPECT_TRUE(api_->Object("/api/v1/namespaces/ns/serviceaccounts/mpi-launcher").has_value());
  EXPECT_TRUE(api_->Object("/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles/mpi-launcher")
                  .has_value());
  EXPECT_TRUE(
      api_->Object("/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/mpi-launcher")
          .has_value());
  EXPECT_EQ(Names(api_->Objects(kPods)),
            (std::vector<std::string>{"mpi-worker-0", "mpi-worker-1", "mpi-worker-2"}));

  CatchUp(jobs + "/mpi");
  PodsAre("Running");
  ASSERT_TRUE(Sync("mpijobs/ns/mpi").status.ok());
  EXPECT_EQ(
      Names(api_->Objects(kPods)),
      (std::vector<std::string>{"mpi-launcher", "mpi-worker-0", "mpi-worker-1", "mpi-worker-2"}));
  json config = *api_->Object("/api/v1/namespaces/ns/configmaps/mpi-config");
  EXPECT_NE(config["data"].value("hostfile", "").find("mpi-worker-2"), std::string::npos)
      << config.dump();
}

// A second client over the same in-memory API (the history recorder has its own client).
class SharedApi final : public kube::Transport {
 public:
  explicit SharedApi(kube::FakeApi* api) : api_(api) {}
  StatusOr<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    return api_->Do(request);
  }
  std::shared_ptr<kube::Stream> OpenStream(
      const kube::HttpRequest& request, std::function<bool(std::string_view)> on_data,
      std::function<void(StatusOr<kube::HttpResponse>)> on_done) override {
    return api_->OpenStream(request, std::move(on_data), std::move(on_done));
  }
  long ConnectionsOpened() const override { return 0; }

 private:
  kube::FakeApi* api_;
};

// A finished job is recorded from what the controller already has: its pods from the cache,
// the events it recorded itself; only rank 0's log is read from the API, nothing is listed.
TEST_F(SyncTest, AFinishedJobIsRecordedFromTheCachesReadingOnlyItsLog) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("trainctl-history-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  StatusOr<std::unique_ptr<history::HistoryStore>> store =
      history::HistoryStore::Open((dir / "h.db").string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  kube::ClientOptions options;
  options.qps = -1;
  options.max_retries = 0;
  kube::Client history_client(std::make_unique<SharedApi>(api_), options, &clock_);
  recording::HistoryRecorder history(std::move(*store), &history_client, history::Limits{}, &clock_,
                                     nullptr);
  Make();
  controller_->SetHistory(&history);
  recorder_->SetTap([&](const kube::EventInput& e) { history.events().Add(e); });
  history.Start();

  std::string yaml = kPyTorch;
  yaml += "  runPolicy: {cleanPodPolicy: All}\n";
  AddJob(yaml);
  const std::string path = std::string(kPyTorchJobs) + "/pt";
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  CatchUp(path);
  ServicesCaughtUp();
  PodsAre("Succeeded");
  api_->SetLog(std::string(kPods) + "/pt-master-0", "step=1 loss=0.5\nstep=2 loss=0.25\n");
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());  // finishes; the pods are held
  EXPECT_TRUE(api_->Requests("DELETE", kPods).empty()) << "cleanPodPolicy waits for the record";
  CatchUp(path);
  api_->ClearRequests();
  const int64_t shared_before = history.shared_cpu_nanos()->load();
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());  // the final status is stored: record
  EXPECT_GT(history.shared_cpu_nanos()->load(), shared_before)
      << "the snapshot made in the sync is counted as the history's CPU";
  for (int i = 0; i < 500 && history.written() + history.failed() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(history.written(), 1u);

  // (The sync itself deletes the services: cleanPodPolicy holds only the pods.)
  std::vector<kube::HttpRequest> reads = api_->Requests("GET", "");
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(reads[0].path.substr(0, reads[0].path.find('?')),
            std::string(kPods) + "/pt-master-0/log");
  StatusOr<std::unique_ptr<history::HistoryStore>> reader =
      history::HistoryStore::Open((dir / "h.db").string());
  ASSERT_TRUE(reader.ok());
  std::string uid = (*api_->Object(path))["metadata"].value("uid", "");
  StatusOr<std::optional<json>> record = (*reader)->Get(uid);
  ASSERT_TRUE(record.ok() && record->has_value());
  const json& r = **record;
  EXPECT_EQ(r["job"]["kind"], "PyTorchJob");
  EXPECT_EQ(r["replicas"].size(), 3u);
  EXPECT_EQ(r["replicas"][0]["name"], "pt-master-0");
  EXPECT_EQ(r["replicas"][0]["state"], "Succeeded");
  EXPECT_EQ(r["logs"]["master-0"]["tail"], "step=1 loss=0.5\nstep=2 loss=0.25\n");
  EXPECT_EQ(r["metrics"]["series"]["loss"]["value"], json::array({0.5, 0.25}));
  std::vector<std::string> reasons;
  for (const json& e : r["events"]) reasons.push_back(e["reason"]);
  EXPECT_EQ(reasons.back(), "PyTorchJobSucceeded") << r["events"].dump();
  history.Stop();

  // Recorded: the hold ends and cleanPodPolicy removes the pods.
  CatchUp(path);
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  EXPECT_EQ(api_->Requests("DELETE", kPods).size(), 3u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainctl::op

namespace trainctl::op {
namespace {

// Kueue holds a job (its webhook suspended it; its Workload waits for quota): the job's
// ReplicasReady says what the Workload says, with its LocalQueue's ClusterQueue, and a change
// of the Workload is a change of the job (it is synced again and the why follows).
TEST_F(SyncTest, AJobKueueHoldsSaysWhatItsWorkloadSays) {
  options_.kueue = true;
  Make();
  controller_->kueue()->TestOnlyWatched();
  std::string yaml = kPyTorch;
  const std::string metadata = "metadata: {name: pt, namespace: ns}";
  yaml.replace(yaml.find(metadata), metadata.size(),
               "metadata: {name: pt, namespace: ns, labels: {kueue.x-k8s.io/queue-name: team}}");
  yaml += "  runPolicy: {suspend: true}\n";
  json job = AddJob(yaml);
  const std::string uid = job["metadata"].value("uid", "");
  ASSERT_FALSE(uid.empty());
  controller_->kueue()->LocalQueueCache()->Apply(
      kube::WatchEventType::kAdded,
      {{"metadata", {{"namespace", "ns"}, {"name", "team"}}}, {"spec", {{"clusterQueue", "cq"}}}});
  json workload = {
      {"metadata",
       {{"namespace", "ns"},
        {"name", "pytorchjob-pt-1a2b3"},
        {"ownerReferences",
         json::array({{{"kind", "PyTorchJob"}, {"uid", uid}, {"controller", true}}})}}},
      {"spec", {{"queueName", "team"}}},
      {"status",
       {{"conditions",
         json::array(
             {{{"type", "QuotaReserved"},
               {"status", "False"},
               {"reason", "Pending"},
               {"message", "insufficient unused quota for cpu in flavor f, 1 more needed"}}})}}}};
  // The job's own add queued it; taken, the queue is empty until the Workload comes.
  std::optional<std::string> key = controller_->queue().Get();
  ASSERT_EQ(key, "pytorchjobs/ns/pt");
  controller_->queue().Done(*key);
  ASSERT_EQ(controller_->queue().stats().depth, 0u);
  controller_->kueue()->WorkloadCache()->Apply(kube::WatchEventType::kAdded, workload);
  EXPECT_EQ(controller_->queue().stats().depth, 1u) << "the Workload's job enqueued";
  ASSERT_TRUE(Sync("pytorchjobs/ns/pt").status.ok());
  json stored = CatchUp(std::string(kPyTorchJobs) + "/pt");
  json ready = Condition(stored, "ReplicasReady");
  EXPECT_EQ(ready.value("reason", ""), "KueuePending") << stored["status"].dump();
  EXPECT_NE(ready.value("message", "")
                .find("in LocalQueue \"team\" (ClusterQueue \"cq\"): insufficient unused quota"),
            std::string::npos)
      << ready.dump();
  EXPECT_TRUE(api_->Requests("POST", kPods).empty()) << "no pods while Kueue holds it";
}

}  // namespace
}  // namespace trainctl::op
