#include "api/validation.h"

#include <gtest/gtest.h>

#include "api/manifest.h"
#include "api/yaml.h"

namespace trainctl::api {
namespace {

std::string Errors(const std::string& yaml) {
  auto docs = ParseYamlDocuments(yaml, "v.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  auto job = DecodeJob((*docs)[0]);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return JoinFieldErrors(ValidateJob(*job).errors);
}

const char* kContainer = "{spec: {containers: [{name: pytorch, image: img}]}}";

std::string PyTorch(const std::string& specs, const std::string& extra = "") {
  return "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: job}\nspec:\n" + extra +
         "  pytorchReplicaSpecs:\n" + specs;
}

TEST(ValidationTest, ValidPyTorchJobHasNoErrors) {
  EXPECT_EQ(Errors(PyTorch(std::string("    Master: {replicas: 1, template: ") + kContainer +
                           "}\n    Worker: {replicas: 2, template: " + kContainer + "}\n")),
            "[]");
}

TEST(ValidationTest, MasterReplicasMustBeOne) {
  EXPECT_EQ(
      Errors(PyTorch(std::string("    Master: {replicas: 2, template: ") + kContainer + "}\n")),
      "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1");
}

TEST(ValidationTest, MissingReplicaSpecs) {
  EXPECT_EQ(Errors("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: job}\nspec: {}\n"),
            "spec.tfReplicaSpecs: Required value: must be required");
}

TEST(ValidationTest, EmptyImageAndMissingDefaultContainer) {
  EXPECT_EQ(
      Errors(PyTorch("    Worker: {template: {spec: {containers: [{name: main, image: ''}]}}}\n")),
      "[spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].image: Required value: "
      "must be required, spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required "
      "value: must have at least one container with name pytorch]");
}

TEST(ValidationTest, ZeroContainersGivesTwoErrorsOnTheSamePath) {
  EXPECT_EQ(Errors(PyTorch("    Worker: {template: {spec: {containers: []}}}\n")),
            "[spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must be "
            "specified, spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: "
            "must have at least one container with name pytorch]");
}

TEST(ValidationTest, UnknownTypeAndManagedBy) {
  std::string e = Errors(PyTorch(std::string("    Chief: {template: ") + kContainer + "}\n",
                                 "  runPolicy: {managedBy: me}\n"));
  EXPECT_NE(e.find("spec.runPolicy.managedBy: Unsupported value: \"me\": supported values: "
                   "\"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\""),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("spec.pytorchReplicaSpecs: Unsupported value: \"Chief\": supported values: "
                   "\"Master\", \"Worker\""),
            std::string::npos)
      << e;
}

TEST(ValidationTest, JaxJobManagedByIsCheckedToo) {
  std::string e = Errors(
      "apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata: {name: j}\nspec:\n  "
      "runPolicy: {managedBy: someone}\n  "
      "jaxReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: jax, image: i}]}}}\n");
  EXPECT_NE(e.find("spec.runPolicy.managedBy: Unsupported value: \"someone\""), std::string::npos)
      << e;
}

TEST(ValidationTest, NameMustBeDns1035) {
  std::string e = Errors(
      "apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata: {name: 1Bad}\nspec:\n  "
      "jaxReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: jax, image: i}]}}}\n");
  EXPECT_EQ(e.rfind("metadata.name: Invalid value: \"1Bad\": should match: a DNS-1035 label", 0),
            0u)
      << e;
}

TEST(ValidationTest, XGBoostNeedsMaster) {
  EXPECT_EQ(Errors("apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: x}\nspec:\n  "
                   "xgbReplicaSpecs:\n    Worker: {template: {spec: {containers: [{name: xgboost, "
                   "image: i}]}}}\n"),
            "spec.xgbReplicaSpecs[Master]: Required value: must be present");
}

TEST(ValidationTest, TFChiefAndMasterTogether) {
  std::string c = "{template: {spec: {containers: [{name: tensorflow, image: i}]}}}";
  EXPECT_EQ(Errors("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\nspec:\n  "
                   "tfReplicaSpecs:\n    Chief: " +
                   c + "\n    Master: " + c + "\n"),
            "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role");
}

TEST(ValidationTest, ElasticNeedsWorkerAndWarnsOnDeprecatedField) {
  auto docs = ParseYamlDocuments(
      PyTorch(std::string("    Master: {replicas: 1, template: ") + kContainer + "}\n",
              "  nprocPerNode: '2'\n  elasticPolicy: {nProcPerNode: 2}\n"),
      "e.yaml");
  auto job = DecodeJob((*docs)[0]);
  ValidationResult r = ValidateJob(*job);
  EXPECT_EQ(JoinFieldErrors(r.errors),
            "[spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic "
            "policy is used, spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with "
            "spec.nprocPerNode]");
  ASSERT_EQ(r.warnings.size(), 1u);
}

TEST(ValidationTest, RestartPolicyEnumIsChecked) {
  EXPECT_EQ(Errors(PyTorch(std::string("    Worker: {restartPolicy: Sometimes, template: ") +
                           kContainer + "}\n")),
            "spec.pytorchReplicaSpecs[Worker].restartPolicy: Unsupported value: \"Sometimes\": "
            "supported values: \"Always\", \"OnFailure\", \"Never\", \"ExitCode\"");
}

TEST(ValidationTest, MpiLauncherRules) {
  std::string e = Errors(
      "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: m}\nspec:\n  mpiReplicaSpecs:\n"
      "    Launcher: {replicas: 2, template: {spec: {containers: [{name: mpi, image: ''}]}}}\n");
  EXPECT_NE(e.find("spec.mpiReplicaSpecs[Launcher].replicas: Forbidden: there must be only 1 "
                   "launcher replica"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("containers[0].image: Required value"), std::string::npos) << e;
}

TEST(ValidationTest, LoaderReportsFileAndAllErrors) {
  auto jobs = LoadJobsFromText(PyTorch(std::string("    Master: {replicas: 2, template: ") +
                                       "{spec: {containers: [{name: pytorch, image: ''}]}}}\n"),
                               "f.yaml");
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            "f.yaml: PyTorchJob \"job\" is invalid: "
            "[spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: "
            "must be required, spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1]");
}

}  // namespace
}  // namespace trainctl::api
