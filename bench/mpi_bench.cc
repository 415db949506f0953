#include "mpi_bench.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "api/manifest.h"
#include "common/ssh_keys.h"
#include "operator/mpi_v2_children.h"

namespace trainctl::bench {

using nlohmann::json;

namespace {

using Steady = std::chrono::steady_clock;

double SecondsSince(Steady::time_point t) {
  return std::chrono::duration<double>(Steady::now() - t).count();
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "bench: %s\n", message.c_str());
  std::exit(1);
}

json Replica(int replicas, const json& annotations, const char* container, const json& command) {
  json c = {{"name", container}, {"image", "example.invalid/mpi:1"}};
  if (!command.is_null()) c["command"] = command;
  return {{"replicas", replicas},
          {"template",
           {{"metadata", {{"annotations", annotations}}},
            {"spec", {{"containers", json::array({c})}}}}}};
}

// The served version names and conversion strategy: two CRDs with the same serve the same.
std::string Serving(const json& crd) {
  std::string out;
  for (const json& v : crd["spec"].value("versions", json::array()))
    out += v.value("name", "") + (v.value("storage", false) ? "*" : "") + ",";
  return out + crd["spec"].value("conversion", json::object()).value("strategy", "None");
}

}  // namespace

json MpiJobV2Doc(const std::string& name, const std::string& ns, int workers, int run_seconds) {
  json launcher = Replica(1, {{"trainctl.dev/kwok-run-seconds", std::to_string(run_seconds)}},
                          "launcher", json::array({"mpirun", "-n", std::to_string(workers), "pi"}));
  json worker = Replica(workers, {{"trainctl.dev/kwok-run-forever", "true"}}, "worker", nullptr);
  return {{"apiVersion", "kubeflow.org/v2beta1"},
          {"kind", "MPIJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          // Pods stay after the job ends (as in the floor), so every run ends the same way.
          {"spec",
           {{"slotsPerWorker", 1},
            {"runPolicy", {{"cleanPodPolicy", "None"}}},
            {"mpiReplicaSpecs", {{"Launcher", launcher}, {"Worker", worker}}}}}};
}

StatusOr<std::vector<std::pair<const kube::Resource*, json>>> MpiV2FloorObjects(const json& doc) {
  json with_uid = doc;
  with_uid["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000";
  StatusOr<api::LoadedJob> prepared = api::PrepareJob(with_uid);
  if (!prepared.ok()) return prepared.status();
  const api::Job& job = prepared->job;
  if (!job.IsMpiV2()) return InvalidError("not an MPIJob of kubeflow.org/v2beta1");
  const int workers = job.ReplicasOf("Worker");
  StatusOr<SshKeyPair> keys = GenerateSshKeyPair();
  if (!keys.ok()) return keys.status();
  std::vector<std::string> names;
  std::vector<json> pods;
  for (int i = 0; i < workers; ++i) {
    StatusOr<op::BuiltPod> pod = op::BuildMpiV2Worker(job, i);
    if (!pod.ok()) return pod.status();
    names.push_back(pod->pod["metadata"].value("name", ""));
    pods.push_back(std::move(pod->pod));
  }
  StatusOr<op::BuiltJob> launcher = op::BuildMpiV2Launcher(job);
  if (!launcher.ok()) return launcher.status();

  std::vector<std::pair<const kube::Resource*, json>> out = {
      {&kube::kSecrets, op::MpiV2SshSecret(job, *keys)},
      {&kube::kConfigMaps, op::MpiV2ConfigMap(job, "", names)},
      {&kube::kServices, op::MpiV2Service(job)}};
  for (json& pod : pods) out.push_back({&kube::kPods, std::move(pod)});
  out.push_back({&kube::kBatchJobs, std::move(launcher->job)});
  for (auto& [resource, object] : out) object["metadata"].erase("ownerReferences");
  return out;
}

StatusOr<json> PointConversionAt(json crd, const std::string& url) {
  json* conversion = crd.contains("spec") ? &crd["spec"]["conversion"] : nullptr;
  if (!conversion || !conversion->is_object() || conversion->value("strategy", "") != "Webhook")
    return InvalidError("the CRD converts without a webhook");
  (*conversion)["webhook"]["clientConfig"] = {{"url", url}};
  return crd;
}

void InstallCrd(kube::Client* admin, const json& crd) {
  StatusOr<json> current = admin->Get(kube::kCustomResourceDefinitions, "", kMpiJobsCrd);
  const auto start = Steady::now();
  if (current.ok() && Serving(*current) == Serving(crd)) {
    // The same versions: only the webhook's address may differ (its CA stays the operator's).
    json want = crd["spec"].value("conversion", json::object());
    json& have = (*current)["spec"]["conversion"];
    if (want.contains("webhook") && have.contains("webhook") &&
        have["webhook"]["clientConfig"].value("url", "") !=
            want["webhook"]["clientConfig"].value("url", "")) {
      have["webhook"]["clientConfig"]["url"] = want["webhook"]["clientConfig"]["url"];
      have["webhook"]["clientConfig"].erase("service");
      if (!admin->Update(kube::kCustomResourceDefinitions, "", *current).ok())
        Fail("cannot update the conversion webhook of mpijobs.kubeflow.org");
    }
    return;
  }
  if (current.ok()) {
    (void)admin->Delete(kube::kCustomResourceDefinitions, "", kMpiJobsCrd);
    while (admin->Get(kube::kCustomResourceDefinitions, "", kMpiJobsCrd).status().code() !=
           StatusCode::kNotFound) {
      if (SecondsSince(start) > 300) Fail("mpijobs.kubeflow.org not deleted after 300 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  json fresh = crd;
  fresh["metadata"] = {{"name", kMpiJobsCrd}};
  fresh.erase("status");
  StatusOr<json> created = admin->Create(kube::kCustomResourceDefinitions, "", fresh);
  if (!created.ok()) Fail("cannot create mpijobs.kubeflow.org: " + created.status().message());
  for (;;) {
    StatusOr<json> now = admin->Get(kube::kCustomResourceDefinitions, "", kMpiJobsCrd);
    if (now.ok())
      for (const json& c :
           (*now).value("status", json::object()).value("conditions", json::array()))
        if (c.value("type", "") == "Established" && c.value("status", "") == "True") {
          std::fprintf(stderr, "mpijobs.kubeflow.org (%s) installed in %.1f s\n",
                       Serving(crd).c_str(), SecondsSince(start));
          return;
        }
    if (SecondsSince(start) > 300) Fail("mpijobs.kubeflow.org not Established after 300 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

double WaitV2Creatable(kube::Client* admin, const std::string& ns, double limit_seconds) {
  const auto start = Steady::now();
  const json probe = MpiJobV2Doc("bench-v2-probe", ns, 1, 1);
  std::string last;
  while (SecondsSince(start) < limit_seconds) {
    StatusOr<json> created = admin->Create(kMpiJobsV2, ns, probe);
    if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) {
      (void)admin->Delete(kMpiJobsV2, ns, "bench-v2-probe");
      return SecondsSince(start);
    }
    last = created.status().message();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  Fail("a v2beta1 MPIJob cannot be created in " + ns + " after " +
       std::to_string(static_cast<int>(limit_seconds)) + " s: " + last);
}

}  // namespace trainctl::bench
