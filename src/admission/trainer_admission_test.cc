// Trainer v2's validating admission: a TrainJob checked on its own and against the live runtime
// it names (a lookup standing in for the API server), a runtime checked as upstream's webhook.
#include "admission/trainer_admission.h"

#include <gtest/gtest.h>

#include "kube/base64.h"

namespace trainctl::admission::trainer_test {
namespace {

using nlohmann::json;

const char* kRuntime = R"({"apiVersion": "trainer.kubeflow.org/v1alpha1",
  "kind": "ClusterTrainingRuntime", "metadata": {"name": "torch-distributed"},
  "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [
    {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
     "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}]}}}})";

std::string Review(const json& object, const std::string& operation = "CREATE") {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request", {{"uid", "u1"}, {"operation", operation}, {"object", object}}}}
      .dump();
}

json TrainJob(const json& trainer) {
  json tj = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
             {"kind", "TrainJob"},
             {"metadata", {{"name", "tj"}, {"namespace", "ns"}}},
             {"spec", {{"runtimeRef", {{"name", "torch-distributed"}}}}}};
  if (!trainer.is_null()) tj["spec"]["trainer"] = trainer;
  return tj;
}

StatusOr<json> Found(const api::RuntimeRef& ref, const std::string&) {
  if (ref.name == "torch-distributed" && ref.kind == "ClusterTrainingRuntime")
    return json::parse(kRuntime);
  return NotFoundError("not found");
}

// PriorityClasses the API server has.
Status PriorityClassExists(const std::string& name) {
  return name == "high" ? Status::Ok() : NotFoundError("not found");
}

const TrainJobLookups kApi{Found, PriorityClassExists};

TEST(TrainerAdmissionTest, AGoodTrainJobIsAllowed) {
  json r = ReviewTrainJob(Review(TrainJob({{"numNodes", 2}})), kApi);
  EXPECT_EQ(r["response"]["uid"], "u1");
  EXPECT_EQ(r["response"]["allowed"], true) << r.dump();
}

TEST(TrainerAdmissionTest, AMissingRuntimeIsDeniedAsUpstream) {
  json tj = TrainJob(nullptr);
  tj["spec"]["runtimeRef"] = {{"name", "mine"}, {"kind", "TrainingRuntime"}};
  json r = ReviewTrainJob(Review(tj), kApi);
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_EQ(r["response"]["status"]["message"],
            "spec.runtimeRef: Invalid value: \"mine\": TrainingRuntime ns/mine not found: "
            "specified trainingRuntime must be created before the TrainJob is created");
}

// The runtime was deleted after the TrainJob was made (it runs on its snapshot): an update of
// its metadata alone (the checkpoint notice's record, its finalizer's release) is allowed; a
// spec change is still checked against the live runtime.
TEST(TrainerAdmissionTest, AMetadataUpdateNeedsNoLiveRuntime) {
  json old_tj = TrainJob(nullptr);
  old_tj["spec"]["runtimeRef"] = {{"name", "gone"}, {"kind", "TrainingRuntime"}};
  json new_tj = old_tj;
  new_tj["metadata"]["finalizers"] = json::array();
  new_tj["metadata"]["annotations"] = {{"trainctl.dev/checkpoint-notice", ""}};
  auto review = [&](const json& object) {
    json r = json::parse(Review(object, "UPDATE"));
    r["request"]["oldObject"] = old_tj;
    return ReviewTrainJob(r.dump(), kApi);
  };
  EXPECT_EQ(review(new_tj)["response"]["allowed"], true) << review(new_tj).dump();
  json changed = new_tj;
  changed["spec"]["suspend"] = true;
  json r = review(changed);
  EXPECT_EQ(r["response"]["allowed"], false) << "a spec change meets the live runtime";
  EXPECT_NE(r["response"]["status"]["message"].get<std::string>().find("gone not found"),
            std::string::npos);
  json bad = new_tj;
  bad["metadata"]["annotations"]["trainctl.dev/checkpoint-notice-seconds"] = "forever";
  EXPECT_EQ(review(bad)["response"]["allowed"], false) << "the job's own checks still run";
}

TEST(TrainerAdmissionTest, WhatOnlyThePairTellsIsDenied) {
  json r = ReviewTrainJob(
      Review(TrainJob({{"env", json::array({{{"name", "PET_NNODES"}, {"value", "3"}}})}})), kApi);
  EXPECT_EQ(r["response"]["allowed"], false);
  std::string message = r["response"]["status"]["message"];
  EXPECT_NE(message.find("must not have reserved envs, invalid envs configured: [PET_NNODES]"),
            std::string::npos)
      << message;
  json bad_name = TrainJob(nullptr);
  bad_name["metadata"]["name"] = "Bad_Name";
  r = ReviewTrainJob(Review(bad_name), kApi);
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_NE(r["response"]["status"]["message"].get<std::string>().find(
                "metadata.name must match RFC 1035 DNS label format"),
            std::string::npos);
  json other = TrainJob(nullptr);
  other["spec"]["runtimeRef"]["apiGroup"] = "example.com";
  r = ReviewTrainJob(Review(other), kApi);
  EXPECT_EQ(r["response"]["status"]["message"],
            "unsupported runtime: ClusterTrainingRuntime.example.com");
}

TEST(TrainerAdmissionTest, DeleteIsAllowedAndGarbageDenied) {
  EXPECT_EQ(ReviewTrainJob(Review(TrainJob(nullptr), "DELETE"), kApi)["response"]["allowed"], true);
  EXPECT_EQ(ReviewTrainJob("not json", kApi)["response"]["allowed"], false);
  EXPECT_EQ(ReviewTrainingRuntime("{}")["response"]["allowed"], false);
}

TEST(TrainerAdmissionTest, RuntimesAreCheckedAsUpstreamsWebhook) {
  json good = json::parse(kRuntime);
  EXPECT_EQ(ReviewTrainingRuntime(Review(good))["response"]["allowed"], true);
  json bad = good;
  bad["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 2;
  json r = ReviewTrainingRuntime(Review(bad));
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_NE(
      r["response"]["status"]["message"].get<std::string>().find(
          "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"),
      std::string::npos);
}

// The JSONPatch operations of a mutating review (empty when it has none).
json PatchOf(const json& review) {
  EXPECT_TRUE(review["response"]["allowed"].get<bool>()) << review.dump();
  if (!review["response"].contains("patch")) return json::array();
  EXPECT_EQ(review["response"]["patchType"], "JSONPatch");
  std::optional<std::string> text =
      kube::Base64Decode(review["response"]["patch"].get<std::string>());
  EXPECT_TRUE(text.has_value());
  return json::parse(*text);
}

json WithPatches(json patches) {
  json tj = TrainJob(nullptr);
  tj["spec"]["runtimePatches"] = std::move(patches);
  return tj;
}

TEST(TrainerAdmissionTest, RuntimePatchesGetTheirTimeAsUpstreamsDefaulter) {
  const Time now = *ParseRfc3339("2026-11-30T05:00:00Z");
  const json one = {{"manager", "test.io/one"}, {"time", "2026-01-01T00:00:00Z"}};
  const json two = {{"manager", "kueue.k8s.io/manager"},
                    {"trainer", {{"spec", {{"serviceAccountName", "a"}}}}}};
  // CREATE: an entry without a time gets now; one with a time keeps it.
  json created = PatchOf(DefaultTrainJob(Review(WithPatches({one, two})), now));
  EXPECT_EQ(created, json::parse(R"([{"op": "add", "path": "/spec/runtimePatches/1/time",
                                      "value": "2026-11-30T05:00:00Z"}])"));
  EXPECT_EQ(PatchOf(DefaultTrainJob(Review(TrainJob(nullptr)), now)), json::array());

  // UPDATE: unchanged keeps its old time (even if the user sent another); changed gets now; a
  // new entry without a time gets now, with one keeps it.
  json two_then = two;
  two_then["time"] = "2026-06-01T00:00:00Z";
  json one_sent = one;
  one_sent["time"] = "2030-01-01T00:00:00Z";
  json two_changed = two_then;
  two_changed["trainer"]["spec"]["serviceAccountName"] = "b";
  const json three = {{"manager", "new.io/three"}};
  const json four = {{"manager", "new.io/four"}, {"time", "2025-01-01T00:00:00Z"}};
  json review = json::parse(Review(WithPatches({one_sent, two_changed, three, four}), "UPDATE"));
  review["request"]["oldObject"] = WithPatches({one, two_then});
  json updated = PatchOf(DefaultTrainJob(review.dump(), now));
  EXPECT_EQ(updated, json::parse(R"([
    {"op": "add", "path": "/spec/runtimePatches/0/time", "value": "2026-01-01T00:00:00Z"},
    {"op": "add", "path": "/spec/runtimePatches/1/time", "value": "2026-11-30T05:00:00Z"},
    {"op": "add", "path": "/spec/runtimePatches/2/time", "value": "2026-11-30T05:00:00Z"}])"))
      << updated.dump();
}

// A runtime asking for a Volcano PodGroup: upstream's Volcano plugin denies an empty queue name
// and a PriorityClass the cluster lacks, from the runtime's template or a runtimePatch.
TEST(TrainerAdmissionTest, VolcanoQueueAndPriorityClassAreChecked) {
  json runtime = json::parse(kRuntime);
  runtime["metadata"]["name"] = "volcano";
  runtime["spec"]["podGroupPolicy"] = {{"volcano", json::object()}};
  runtime["spec"]["template"]["metadata"] = {
      {"annotations", {{"scheduling.volcano.sh/queue-name", "research"}}}};
  TrainJobLookups api = kApi;
  api.runtime = [&](const api::RuntimeRef& ref, const std::string& ns) -> StatusOr<json> {
    if (ref.name == "volcano") return runtime;
    return Found(ref, ns);
  };
  auto review = [&](const json& patches) {
    json tj = TrainJob(nullptr);
    tj["spec"]["runtimeRef"]["name"] = "volcano";
    if (!patches.is_null()) tj["spec"]["runtimePatches"] = patches;
    return ReviewTrainJob(Review(tj), api)["response"];
  };
  EXPECT_EQ(review(nullptr)["allowed"], true) << review(nullptr).dump();

  json empty_queue = json::array(
      {{{"manager", "example.com/me"},
        {"trainingRuntimeSpec",
         {{"template",
           {{"metadata", {{"annotations", {{"scheduling.volcano.sh/queue-name", ""}}}}}}}}}}});
  json r = review(empty_queue);
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["message"],
            "TrainJob \"tj\" is invalid: spec.annotations[scheduling.volcano.sh/queue-name]: "
            "Invalid value: \"\": Volcano queue name must not be empty");

  // The runtime's pod template names it (runtimePatches cannot: upstream's PodSpecPatch has no
  // priorityClassName).
  auto with_priority = [&](const std::string& name) {
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
           ["priorityClassName"] = name;
    return nullptr;
  };
  r = review(with_priority("urgent"));
  EXPECT_EQ(r["allowed"], false);
  const std::string message = r["status"]["message"];
  EXPECT_NE(message.find("spec.templateSpec.priorityClassName: Invalid value: \"urgent\": "
                         "PriorityClass \"urgent\" doesn't exist: "
                         "priorityclasses.scheduling.k8s.io \"urgent\" not found"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("replicated job node"), std::string::npos) << message;
  EXPECT_EQ(review(with_priority("high"))["allowed"], true);
  EXPECT_EQ(review(with_priority("system-node-critical"))["allowed"], true);

  // Without a Volcano policy neither is checked (upstream's plugin is not in the way).
  runtime["spec"].erase("podGroupPolicy");
  EXPECT_EQ(review(empty_queue)["allowed"], true);
  EXPECT_EQ(review(with_priority("urgent"))["allowed"], true)
      << review(with_priority("urgent")).dump();
}

}  // namespace
}  // namespace trainctl::admission::trainer_test
