#include "api/job.h"

#include <gtest/gtest.h>

#include "api/defaults.h"
#include "api/manifest.h"
#include "api/yaml.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

const char* kPyTorch = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
  namespace: ns1
  labels: {team: a}
spec:
  futureField: {keep: me}
  pytorchReplicaSpecs:
    MASTER:
      replicas: 1
      template:
        metadata: {annotations: {a: b}}
        spec:
          nodeSelector: {x: z}
          containers:
          - name: pytorch
            image: img
            command: [python3, train.py]
            unknownContainerField: 7
    worker:
      replicas: 3
      template:
        spec:
          containers:
          - name: pytorch
            image: img
            ports: [{name: other, containerPort: 1}]
)";

Job Load(const char* text) {
  auto jobs = LoadJobsFromText(text, "job.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? (*jobs)[0].job : Job();
}

TEST(JobTest, DefaultsNormaliseTypesAndAddPortsAndPolicies) {
  // Upstream's webhook sees undefaulted objects and rejects unknown case, so decode + default
  // without validation here.
  auto docs = ParseYamlDocuments(kPyTorch, "job.yaml");
  ASSERT_TRUE(docs.ok());
  auto job = DecodeJob((*docs)[0]);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ApplyDefaults(&*job);
  ASSERT_TRUE(job->HasType("Master"));
  ASSERT_TRUE(job->HasType("Worker"));
  EXPECT_EQ(job->replica_specs["Worker"].restart_policy, "OnFailure");
  EXPECT_EQ(job->run_policy.clean_pod_policy, "None");
  EXPECT_EQ(job->nproc_per_node, "auto");
  json ports = job->replica_specs["Worker"].pod_template["spec"]["containers"][0]["ports"];
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[1], json({{"name", "pytorchjob-port"}, {"containerPort", 23456}}));
  json encoded = EncodeJob(*job);
  EXPECT_TRUE(encoded["spec"]["pytorchReplicaSpecs"].contains("Master"));
  EXPECT_FALSE(encoded["spec"]["pytorchReplicaSpecs"].contains("MASTER"));
  EXPECT_FALSE(encoded["spec"]["pytorchReplicaSpecs"].contains("worker"));
  // Defaulting twice changes nothing.
  Job again = *job;
  ApplyDefaults(&again);
  EXPECT_EQ(EncodeJob(again), encoded);
}

TEST(JobTest, ClaimsAreEveryValidClaimNameOnceWithTheFirstFieldNamingIt) {
  Job job = Load(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ft}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: i}]
          volumes:
          - {name: a, persistentVolumeClaim: {claimName: ft}}
          - {name: b, emptyDir: {}}
          - {name: c, persistentVolumeClaim: {claimName: ../../etc}}
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: i}]
          volumes:
          - {name: s, persistentVolumeClaim: {claimName: shared.data}}
          - {name: a, persistentVolumeClaim: {claimName: ft}}
)");
  std::vector<ClaimRef> claims = JobClaims(job);
  ASSERT_EQ(claims.size(), 2u) << "../../etc is not a claim name; ft is named once";
  EXPECT_EQ(claims[0].claim, "ft");
  EXPECT_EQ(claims[0].field, "spec.pytorchReplicaSpecs[Master].template.spec.volumes[0]");
  EXPECT_EQ(claims[1].claim, "shared.data");
  EXPECT_TRUE(IsDnsSubdomain("a.b-c"));
  for (const char* bad : {"", "-a", "a.", "a..b", "A", "a/b", "a_b"})
    EXPECT_FALSE(IsDnsSubdomain(bad)) << bad;
}

TEST(JobTest, UnknownFieldsSurviveRoundTrip) {
  auto docs = ParseYamlDocuments(kPyTorch, "job.yaml");
  auto job = DecodeJob((*docs)[0]);
  ASSERT_TRUE(job.ok());
  json out = EncodeJob(*job);
  EXPECT_EQ(out["spec"]["futureField"]["keep"], "me");
  EXPECT_EQ(out["metadata"]["labels"]["team"], "a");
  json c = out["spec"]["pytorchReplicaSpecs"]["MASTER"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["unknownContainerField"], 7);
  EXPECT_EQ(out["spec"]["pytorchReplicaSpecs"]["MASTER"]["template"]["spec"]["nodeSelector"]["x"],
            "z");
  EXPECT_EQ(
      out["spec"]["pytorchReplicaSpecs"]["MASTER"]["template"]["metadata"]["annotations"]["a"],
      "b");
}

TEST(JobTest, WrongTypesAreReportedWithPaths) {
  auto docs = ParseYamlDocuments(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: x}
spec:
  runPolicy: {backoffLimit: "three", suspend: 1}
  pytorchReplicaSpecs:
    Worker:
      replicas: "2"
      template: {spec: {containers: [{name: pytorch, image: i, command: python3}]}}
)",
                                 "j.yaml");
  auto job = DecodeJob((*docs)[0]);
  ASSERT_FALSE(job.ok());
  const std::string& m = job.status().message();
  EXPECT_NE(m.find("spec.runPolicy.backoffLimit: Invalid value: \"three\": must be of type "
                   "integer, got string"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.runPolicy.suspend: Invalid value"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: \"2\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].command: "
                   "Invalid value"),
            std::string::npos)
      << m;
}

// Found by fuzzing: a float outside the integer's range was converted (undefined behaviour).
TEST(JobTest, IntegersWrittenAsHugeFloatsAreOutOfRange) {
  auto docs = ParseYamlDocuments(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: x}
spec:
  runPolicy: {backoffLimit: 4.4e44, activeDeadlineSeconds: 3.0e3}
  pytorchReplicaSpecs:
    Worker:
      replicas: 3.0e9
      template: {spec: {containers: [{name: pytorch, image: i, command: [python3]}]}}
)",
                                 "j.yaml");
  auto job = DecodeJob((*docs)[0]);
  ASSERT_FALSE(job.ok());
  const std::string& m = job.status().message();
  EXPECT_NE(m.find("spec.runPolicy.backoffLimit: Invalid value: 4.4e+44: out of range"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 3000000000.0: "
                   "out of range"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("activeDeadlineSeconds"), std::string::npos) << m;  // 3.0e3 is 3000
}

TEST(JobTest, UnknownKindAndApiVersion) {
  auto bad_kind = DecodeJob(json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"FooJob"})"));
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_NE(bad_kind.status().message().find("kind: Unsupported value: \"FooJob\""),
            std::string::npos);
  auto bad_version =
      DecodeJob(json::parse(R"({"apiVersion":"kubeflow.org/v2","kind":"PyTorchJob"})"));
  ASSERT_FALSE(bad_version.ok());
  EXPECT_NE(
      bad_version.status().message().find("apiVersion: Unsupported value: \"kubeflow.org/v2\""),
      std::string::npos);
}

TEST(JobTest, StatusRoundTrip) {
  JobStatus s;
  Time t = TruncateToSeconds(std::chrono::system_clock::from_time_t(1700000000));
  s.conditions.push_back({"Created", "True", "PyTorchJobCreated", "m", t, t});
  s.replica_statuses["Worker"] = {2, 1, 0, "sel", 3};
  s.start_time = t;
  auto back = DecodeStatus(EncodeStatus(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, s);
  EXPECT_EQ(EncodeStatus(s)["startTime"], "2023-11-14T22:13:20Z");
}

TEST(JobTest, MpiDefaults) {
  Job job = Load(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi}
spec:
  cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: mpi, image: i}]}}}
    Worker: {template: {spec: {containers: [{name: mpi, image: i}]}}}
)");
  EXPECT_EQ(job.replica_specs["Launcher"].replicas, 1);
  EXPECT_EQ(job.replica_specs["Worker"].replicas, 0);
  EXPECT_EQ(job.run_policy.clean_pod_policy, "Running");
  EXPECT_EQ(job.replica_specs["Worker"].restart_policy, "Never");
  EXPECT_FALSE(job.replica_specs["Worker"].pod_template["spec"]["containers"][0].contains("ports"));
}

TEST(JobTest, ElasticDefaults) {
  Job job = Load(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el}
spec:
  elasticPolicy: {maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: i}]}}}
)");
  ASSERT_TRUE(job.elastic_policy);
  EXPECT_EQ(job.elastic_policy->min_replicas, 4);
  EXPECT_EQ(job.elastic_policy->max_replicas, 4);
}

// A job that passes validation, after side documents.
const char* kValidJob = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ok}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: i}]}}}
)";

TEST(ManifestTest, ClaimsAreKeptOtherCoreKindsSkippedWithANoteForTrainctlRun) {
  std::string text = std::string(R"(apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ckpt, namespace: team}
spec: {resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
---
)") + kValidJob;
  ManifestExtras extras;
  auto jobs = LoadJobsFromText(text, "f.yaml", &extras);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->size(), 1u);
  ASSERT_EQ(extras.claims.size(), 1u);
  EXPECT_EQ(extras.claims[0].namespace_, "team");
  EXPECT_EQ(extras.claims[0].name, "ckpt");
  ASSERT_EQ(extras.notes.size(), 2u);
  EXPECT_EQ(extras.notes[0].rfind("f.yaml (document 2): Service svc skipped: ", 0), 0u)
      << extras.notes[0];
  EXPECT_NE(extras.notes[1].find("PersistentVolume pv skipped"), std::string::npos);
  // Without the extras (the operator's and the SDK's paths) they stay errors, as other kinds.
  auto strict = LoadJobsFromText(text, "f.yaml");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("(document 1): kind"), std::string::npos);
  // Only side documents: no job; a nameless claim names its field.
  EXPECT_NE(LoadJobsFromText("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", "p.yaml", &extras)
                .status()
                .message()
                .find("no job found (the file holds Pod p)"),
            std::string::npos);
  EXPECT_NE(LoadJobsFromText("apiVersion: v1\nkind: PersistentVolumeClaim\n", "c.yaml", &extras)
                .status()
                .message()
                .find("metadata.name: Required value"),
            std::string::npos);
  // Other core kinds are still refused with the supported kinds.
  EXPECT_FALSE(LoadJobsFromText("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" +
                                    std::string(kValidJob),
                                "m.yaml", &extras)
                   .ok());
}

}  // namespace
}  // namespace trainctl::api
