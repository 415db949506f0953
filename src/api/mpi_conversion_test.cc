// MPIJob v1 ⇄ v2beta1: each version's own fields survive a round trip through the other (in
// an annotation while there), managedBy names each version's controller, and bad objects are
// refused with what is wrong.
#include "api/mpi_conversion.h"

#include <gtest/gtest.h>

#include "api/yaml.h"

namespace trainctl::api {
namespace {

nlohmann::json Parse(const std::string& yaml) {
  auto docs = ParseYamlDocuments(yaml, "t.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return (*docs)[0];
}

const char* kV1 = R"yaml(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: pi, namespace: ns, labels: {team: a}}
spec:
  slotsPerWorker: 2
  cleanPodPolicy: Running
  mainContainer: mpi
  runPolicy: {backoffLimit: 3, managedBy: kubeflow.org/training-operator}
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: pi}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: mpi, image: pi}]}}}
status:
  conditions: [{type: Created, status: "True", reason: MPIJobCreated}]
)yaml";

const char* kV2 = R"yaml(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, annotations: {note: keep}}
spec:
  slotsPerWorker: 1
  runLauncherAsWorker: true
  sshAuthMountPath: /home/mpiuser/.ssh
  launcherCreationPolicy: WaitForWorkersReady
  mpiImplementation: MPICH
  runPolicy: {cleanPodPolicy: None}
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: l, image: pi}]}}}
)yaml";

TEST(MpiConversionTest, V1ToV2beta1KeepsV1OnlyFieldsInAnAnnotation) {
  auto v2 = ConvertMpiJob(Parse(kV1), "kubeflow.org/v2beta1");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ((*v2)["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_FALSE((*v2)["spec"].contains("mainContainer"));
  EXPECT_FALSE((*v2)["spec"].contains("cleanPodPolicy"));
  EXPECT_EQ((*v2)["spec"]["slotsPerWorker"], 2);
  EXPECT_EQ((*v2)["spec"]["runPolicy"]["backoffLimit"], 3);
  EXPECT_EQ((*v2)["spec"]["runPolicy"]["managedBy"], "kubeflow.org/mpi-operator");
  EXPECT_EQ((*v2)["status"], Parse(kV1)["status"]);
  auto kept = nlohmann::json::parse(
      (*v2)["metadata"]["annotations"][kMpiV1FieldsAnnotation].get<std::string>());
  EXPECT_EQ(kept, (nlohmann::json{{"cleanPodPolicy", "Running"}, {"mainContainer", "mpi"}}));
}

TEST(MpiConversionTest, EachVersionRoundTripsThroughTheOther) {
  nlohmann::json v1 = Parse(kV1);
  auto there = ConvertMpiJob(v1, "kubeflow.org/v2beta1");
  ASSERT_TRUE(there.ok());
  auto back = ConvertMpiJob(*there, "kubeflow.org/v1");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, v1);

  nlohmann::json v2 = Parse(kV2);
  auto down = ConvertMpiJob(v2, "kubeflow.org/v1");
  ASSERT_TRUE(down.ok());
  EXPECT_FALSE((*down)["spec"].contains("mpiImplementation"));
  EXPECT_EQ((*down)["metadata"]["annotations"]["note"], "keep");
  EXPECT_TRUE((*down)["metadata"]["annotations"].contains(kMpiV2FieldsAnnotation));
  auto up = ConvertMpiJob(*down, "kubeflow.org/v2beta1");
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(*up, v2);
}

TEST(MpiConversionTest, TheVersionAJobWasWrittenInIsKeptWithoutItsOwnFields) {
  nlohmann::json v2 = Parse(kV2);
  for (const char* f :
       {"runLauncherAsWorker", "sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation"})
    v2["spec"].erase(f);
  auto stored = ConvertMpiJob(v2, "kubeflow.org/v1");
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(WrittenAsMpiV2(*stored));
  EXPECT_EQ(*ConvertMpiJob(*stored, "kubeflow.org/v2beta1"), v2);

  nlohmann::json v1 = Parse(kV1);
  v1["spec"].erase("mainContainer");
  v1["spec"].erase("cleanPodPolicy");
  EXPECT_FALSE(WrittenAsMpiV2(v1));
  auto read = ConvertMpiJob(v1, "kubeflow.org/v2beta1");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)["metadata"]["annotations"][kMpiV1FieldsAnnotation], "{}");
  auto back = ConvertMpiJob(*read, "kubeflow.org/v1");
  EXPECT_EQ(*back, v1);
  EXPECT_FALSE(WrittenAsMpiV2(*back));
}

TEST(MpiConversionTest, SameVersionIsUnchangedAndBadObjectsAreRefused) {
  nlohmann::json v1 = Parse(kV1);
  EXPECT_EQ(*ConvertMpiJob(v1, "kubeflow.org/v1"), v1);
  nlohmann::json other = v1;
  other["kind"] = "PyTorchJob";
  EXPECT_NE(ConvertMpiJob(other, "kubeflow.org/v2beta1").status().message().find("MPIJob"),
            std::string::npos);
  EXPECT_NE(ConvertMpiJob(v1, "kubeflow.org/v3")
                .status()
                .message()
                .find("apiVersion: Unsupported value: \"kubeflow.org/v3\""),
            std::string::npos);
  nlohmann::json broken = v1;
  broken["metadata"]["annotations"][kMpiV2FieldsAnnotation] = "[1, 2";
  EXPECT_NE(ConvertMpiJob(broken, "kubeflow.org/v2beta1")
                .status()
                .message()
                .find(std::string("metadata.annotations[") + kMpiV2FieldsAnnotation + "]"),
            std::string::npos);
}

}  // namespace
}  // namespace trainctl::api
