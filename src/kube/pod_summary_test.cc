// Unit tests for the pod projection's readers: ProjectPodList (simdjson, whole list pages) and
// ProjectPodEvent (simdjson, one watch event) must give exactly what ProjectPod (nlohmann-json,
// one object) gives, pod by pod, on ordinary, stuck, ended and malformed pods; and they must
// decline what they cannot read.
#include "kube/pod_summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "kube/store.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

const std::vector<std::string> kKeep = {"training.kubeflow.org/job-name",
                                        "training.kubeflow.org/replica-type"};

// Everything a summary holds, as text, so that a difference shows where it is.
std::string Dump(const PodSummary& s) {
  std::ostringstream out;
  out << s.namespace_ << "/" << s.name << " rv=" << s.resource_version << " node=" << s.node_name
      << " uid=" << FormatUid(s.uid) << " owner=" << FormatUid(s.owner_uid)
      << " phase=" << static_cast<int>(s.phase) << " terminating=" << s.terminating << " labels=";
  for (const std::string& v : s.label_values) out << "[" << v << "]";
  for (const ContainerSummary& c : s.containers)
    out << " c(" << c.name << "," << c.restart_count << "," << c.exit_code << "," << c.terminated
        << "," << c.running_since << ")";
  if (const PodDetail* d = s.detail.get()) {
    out << " detail(" << d->unschedulable << "|" << d->scheduler_name << "|" << d->scheduled
        << d->scheduling_seen << "|" << d->waiting_container << "|" << d->waiting_init << "|"
        << d->waiting_reason << "|" << d->waiting_message << "|" << d->pod_reason << "|"
        << d->pod_message;
    for (const ContainerEnd& e : d->ends)
      out << " end(" << e.container << "," << e.reason << "," << e.message.size() << ","
          << e.finished_at << ")";
    out << ")";
  }
  return out.str();
}

json Base(const std::string& name) {
  return json::parse(R"({"metadata":{"name":")" + name + R"(","namespace":"team","uid":
    "6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f","resourceVersion":"42","labels":{
    "training.kubeflow.org/job-name":"j","training.kubeflow.org/replica-type":"worker",
    "other":"x"},"ownerReferences":[{"uid":"0a1b2c3d-0000-4000-8000-00000000000a",
    "controller":true}],"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]},
    "spec":{"nodeName":"kwok-node-1","schedulerName":"default-scheduler",
    "containers":[{"name":"pytorch","env":[{"name":"A","value":"é \u00e9 \"q\""}]}]},
    "status":{"phase":"Running","containerStatuses":[{"name":"pytorch","restartCount":2,
    "state":{"running":{}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled",
    "finishedAt":"2026-11-22T09:00:00Z"}}}]}})");
}

std::vector<json> Corpus() {
  std::vector<json> pods;
  pods.push_back(Base("running"));
  json unschedulable = Base("unschedulable");
  unschedulable["status"] = json::parse(R"({"phase":"Pending","conditions":[{"type":
    "PodScheduled","status":"False","reason":"Unschedulable","message":"0/4 nodes: cpu"}]})");
  unschedulable["spec"].erase("nodeName");
  pods.push_back(unschedulable);
  json gang = Base("gang");
  gang["spec"]["schedulerName"] = "volcano";
  gang["spec"].erase("nodeName");
  gang["status"] = {{"phase", "Pending"}};
  pods.push_back(gang);
  json init = Base("init");
  init["status"] = json::parse(R"({"phase":"Pending","initContainerStatuses":[
    {"name":"done","state":{"terminated":{"exitCode":0}}},
    {"name":"fetch","state":{"running":{}}}]})");
  pods.push_back(init);
  json crash = Base("crash");
  crash["status"]["containerStatuses"][0]["state"] =
      json::parse(R"({"waiting":{"reason":"CrashLoopBackOff","message":"back-off 10s"}})");
  pods.push_back(crash);
  json ended = Base("ended");
  ended["status"] = json::parse(R"({"phase":"Failed","reason":"Evicted","message":"low memory",
    "containerStatuses":[{"name":"pytorch","restartCount":0,"state":{"terminated":
    {"exitCode":3,"reason":"Error","finishedAt":"2026-11-22T09:00:05Z"}}}]})");
  ended["status"]["containerStatuses"][0]["state"]["terminated"]["message"] =
      std::string(5000, 'm');
  ended["metadata"]["deletionTimestamp"] = "2026-11-22T09:01:00Z";
  pods.push_back(ended);
  json odd = json::parse(R"({"metadata":{"name":"odd","uid":"not-a-uid","deletionTimestamp":null,
    "ownerReferences":"garbage","labels":{"training.kubeflow.org/job-name":1,
    "training.kubeflow.org/replica-type":""}},"spec":[],"status":{"phase":"Weird",
    "conditions":{"no":"array"},"initContainerStatuses":[
    {"name":"h","state":{"terminated":{"exitCode":-1e300}}},{"name":"i","state":{"terminated":
    {"exitCode":true}}},
    {"name":"j","state":{"terminated":{"exitCode":0.0}}}],
    "containerStatuses":[{"restartCount":"x","state":{"terminated":{"exitCode":4294967297}}},
    {"restartCount":1.5,"lastState":{"terminated":"no"}},7]}})");
  pods.push_back(odd);
  // A float exit code of 0 counts as completed: the second init container is the one waited on.
  json float_exit = Base("float-exit");
  float_exit["status"] = json::parse(R"({"phase":"Pending","initContainerStatuses":[
    {"name":"first","state":{"terminated":{"exitCode":0.0},"waiting":{"reason":"Stale"}}},
    {"name":"second","state":{"waiting":{"reason":"ImagePullBackOff"}}}]})");
  pods.push_back(float_exit);
  pods.push_back(json::parse(R"({"metadata":{"name":"bare"}})"));
  pods.push_back(json::parse(R"({"metadata":{"name":"status-not-object","namespace":""},
    "status":"x"})"));
  pods.push_back(json::parse(R"({"metadata":{"name":""}})"));  // no name: not cached
  pods.push_back(json::parse(R"({"metadata":{"name":5}})"));
  pods.push_back(json::parse(R"({"kind":"Pod"})"));
  pods.push_back(json::parse(R"("not an object")"));
  return pods;
}

TEST(ProjectPodListTest, GivesWhatProjectPodGivesPodByPod) {
  std::vector<json> pods = Corpus();
  json list = {{"kind", "PodList"},
               {"metadata", {{"resourceVersion", "42"}, {"continue", "t"}}},
               {"items", pods}};
  auto page = ProjectPodList(list.dump(), kKeep);
  ASSERT_TRUE(page.has_value());
  std::vector<std::string> want, got;
  for (const json& pod : pods) {
    if (std::optional<PodSummary> s = ProjectPod(pod, kKeep)) {
      std::string key = s->namespace_.empty() ? s->name : s->namespace_ + "/" + s->name;
      want.push_back(key + " => " + Dump(*s));
    }
  }
  for (const auto& [key, summary] : *page) got.push_back(key + " => " + Dump(summary));
  EXPECT_EQ(got, want);
  ASSERT_EQ(got.size(), 10u) << "the four pods without a name are left out";
  // Spot checks that the corpus reaches the parts it is meant to.
  EXPECT_NE(got[1].find("0/4 nodes: cpu"), std::string::npos) << got[1];
  EXPECT_NE(got[3].find("PodInitializing"), std::string::npos) << got[3];
  EXPECT_NE(got[4].find("CrashLoopBackOff"), std::string::npos) << got[4];
  EXPECT_NE(got[5].find("end(pytorch,Error,2048,"), std::string::npos) << got[5];
  EXPECT_NE(got[7].find("|second|1|ImagePullBackOff|"), std::string::npos) << got[7];
  EXPECT_EQ(got[8],
            "bare => /bare rv= node= uid=00000000-0000-0000-0000-000000000000 owner="
            "00000000-0000-0000-0000-000000000000 phase=0 terminating=0 labels=");
}

TEST(ProjectPodEventTest, GivesWhatProjectPodGivesWithTheStoreKey) {
  std::vector<json> pods = Corpus();
  size_t taken = 0;
  for (const json& pod : pods) {
    std::string text = json{{"type", "MODIFIED"}, {"object", pod}}.dump();
    std::optional<EventProjection<PodSummary>> event = ProjectPodEvent(text, kKeep);
    if (!pod.is_object()) {
      EXPECT_FALSE(event) << "an event whose object is not an object is declined: " << text;
      continue;
    }
    ASSERT_TRUE(event) << text;
    ++taken;
    std::optional<PodSummary> want = ProjectPod(pod, kKeep);
    EXPECT_EQ(event->key, ObjectKey(pod)) << text;
    ASSERT_EQ(event->value.has_value(), want.has_value()) << text;
    if (want) {
      EXPECT_EQ(Dump(*event->value), Dump(*want));
    }
  }
  EXPECT_EQ(taken, pods.size() - 1);
}

TEST(ProjectPodEventTest, AKeyGivenTwiceCountsOnceAsTheLastOne) {
  std::string text = R"({"type":"ADDED","object":{"metadata":{"name":"first","namespace":"a",
    "name":"last"},"status":{"phase":"Failed","phase":"Running"}}})";
  std::optional<EventProjection<PodSummary>> event = ProjectPodEvent(text, kKeep);
  std::optional<PodSummary> want = ProjectPod(json::parse(text)["object"], kKeep);
  ASSERT_TRUE(event && event->value && want);
  EXPECT_EQ(event->key, "a/last");
  EXPECT_EQ(Dump(*event->value), Dump(*want));
  EXPECT_EQ(event->value->phase, PodPhase::kRunning);
}

TEST(ProjectPodEventTest, DeclinesWhatSimdjsonCannotRead) {
  EXPECT_FALSE(ProjectPodEvent("", kKeep));
  EXPECT_FALSE(ProjectPodEvent(R"({"type":"ADDED","object":{"metadata":{"name":"a"}})", kKeep));
  EXPECT_FALSE(ProjectPodEvent(R"({"type":"ADDED"})", kKeep));
  // A number beyond 64 bits: nlohmann-json reads it (as a float), simdjson does not.
  EXPECT_FALSE(ProjectPodEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"a"},"x":123456789012345678901234567890}})",
      kKeep));
  // Nesting up to the API server's limit is read.
  std::string deep = std::string(5000, '[') + std::string(5000, ']');
  std::optional<EventProjection<PodSummary>> event = ProjectPodEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"a"},"x":)" + deep + "}}", kKeep);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->key, "a");
}

TEST(ProjectPodListTest, AMistypedInitExitCodeIsNotAnException) {
  // exitCode true: an init container that has not completed (not a crash of the reader).
  json pod = json::parse(R"({"metadata":{"name":"p"},"status":{"phase":"Pending",
    "initContainerStatuses":[{"name":"i","state":{"terminated":{"exitCode":true}},
    "lastState":{}}]}})");
  std::optional<PodSummary> s;
  ASSERT_NO_THROW(s = ProjectPod(pod, {}));
  ASSERT_TRUE(s);
}

TEST(ProjectPodListTest, DeclinesWhatItCannotRead) {
  EXPECT_FALSE(ProjectPodList("", kKeep));
  EXPECT_FALSE(ProjectPodList(R"({"items":[{"metadata":{"name":"a"}} oops)", kKeep));
  EXPECT_FALSE(ProjectPodList(R"({"metadata":{}})", kKeep));
  EXPECT_FALSE(ProjectPodList(R"({"items":{"a":1}})", kKeep));
  EXPECT_FALSE(ProjectPodList(R"([{"metadata":{"name":"a"}}])", kKeep));
  EXPECT_FALSE(ProjectPodList(std::string(2000, '[') + std::string(2000, ']'), kKeep));
  auto empty = ProjectPodList(R"({"items":[]})", kKeep);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace trainctl::kube
