// The env and master role of every kind (upstream values pinned), through the plugins.
#include <gtest/gtest.h>

#include "api/kind_plugin.h"
#include "api/manifest.h"
#include "kinds/mpi.h"

namespace trainctl::kinds {
namespace {

using api::DeclaredPort;
using api::Endpoints;
using api::EnvVar;
using api::ReplicaName;
using api::ServiceEndpoints;

api::Job Load(const std::string& yaml) {
  auto jobs = api::LoadJobsFromText(yaml, "t.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return (*jobs)[0].job;
}

std::map<std::string, std::string> EnvMap(const api::Job& job, const std::string& type, int index,
                                          const Endpoints& ep) {
  auto env = api::PluginFor(job.kind).EnvFor(job, type, index, ep);
  EXPECT_TRUE(env.ok()) << env.status().ToString();
  std::map<std::string, std::string> out;
  for (const EnvVar& e : env->env) out[e.name] = e.value;
  return out;
}

std::vector<std::string> Names(const api::Job& job, const std::string& type, int index,
                               const Endpoints& ep) {
  std::vector<std::string> out;
  auto env = api::PluginFor(job.kind).EnvFor(job, type, index, ep);
  for (const EnvVar& e : env->env) out.push_back(e.name);
  return out;
}

std::string Replica(const std::string& type, const std::string& container, int replicas,
                    const std::string& extra = "") {
  return "    " + type + ":\n      replicas: " + std::to_string(replicas) + "\n" + extra +
         "      template:\n        spec:\n          containers:\n          - name: " + container +
         "\n            image: img\n";
}

class FixedEndpoints : public Endpoints {
 public:
  std::string Host(const std::string& type, int index) const override { return "127.0.0.1"; }
  std::string ServiceHost(const std::string& type, int index) const override { return "127.0.0.1"; }
  int Port(const std::string& type, int index, int declared) const override {
    return 40000 + (type == "Worker" ? 100 : 0) + index;
  }
};

TEST(PyTorchTest, MasterWorkerEnvOnKubernetes) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: mnist, namespace: ns}\n"
      "spec:\n  pytorchReplicaSpecs:\n" +
      Replica("Master", "pytorch", 1) + Replica("Worker", "pytorch", 3));
  ServiceEndpoints ep("mnist", "ns");
  auto w = EnvMap(job, "Worker", 1, ep);
  EXPECT_EQ(w["MASTER_ADDR"], "mnist-master-0");
  EXPECT_EQ(w["PET_MASTER_ADDR"], "mnist-master-0");
  EXPECT_EQ(w["MASTER_PORT"], "23456");
  EXPECT_EQ(w["WORLD_SIZE"], "4");
  EXPECT_EQ(w["RANK"], "2");
  EXPECT_EQ(w["PET_NODE_RANK"], "2");
  EXPECT_EQ(w["PET_NPROC_PER_NODE"], "auto");
  EXPECT_EQ(w["PET_NNODES"], "4");
  EXPECT_EQ(w["PYTHONUNBUFFERED"], "1");
  EXPECT_EQ(EnvMap(job, "Master", 0, ep)["RANK"], "0");
  EXPECT_EQ(Names(job, "Master", 0, ep),
            (std::vector<std::string>{"PYTHONUNBUFFERED", "MASTER_PORT", "PET_MASTER_PORT",
                                      "MASTER_ADDR", "PET_MASTER_ADDR", "WORLD_SIZE", "RANK",
                                      "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_NNODES"}));
  EXPECT_TRUE(api::PluginFor(job.kind).IsMasterRole(job, "Master", 0));
  EXPECT_FALSE(api::PluginFor(job.kind).IsMasterRole(job, "Worker", 0));
}

TEST(PyTorchTest, NprocPerNodeMultipliesWorldSizeAndLocalEndpointsRewrite) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: t}\nspec:\n  nprocPerNode: "
      "'2'\n  pytorchReplicaSpecs:\n" +
      Replica("Master", "pytorch", 1) + Replica("Worker", "pytorch", 1));
  FixedEndpoints ep;
  auto w = EnvMap(job, "Worker", 0, ep);
  EXPECT_EQ(w["WORLD_SIZE"], "4");
  EXPECT_EQ(w["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(w["MASTER_PORT"], "40000");
  EXPECT_EQ(w["PET_NPROC_PER_NODE"], "2");
}

TEST(PyTorchTest, ElasticEnv) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: el}\nspec:\n"
      "  elasticPolicy: {minReplicas: 1, maxReplicas: 3, maxRestarts: 5, rdzvId: abc, "
      "rdzvConf: [{key: a, value: '1'}, {key: b, value: '2'}], standalone: true}\n"
      "  pytorchReplicaSpecs:\n" +
      Replica("Worker", "pytorch", 2));
  ServiceEndpoints ep("el", "default");
  auto w = EnvMap(job, "Worker", 1, ep);
  EXPECT_EQ(w["PET_RDZV_ENDPOINT"], "el-worker-0:23456");
  EXPECT_EQ(w["PET_RDZV_BACKEND"], "c10d");
  EXPECT_EQ(w["PET_NNODES"], "1:3");
  EXPECT_EQ(w["PET_MAX_RESTARTS"], "5");
  EXPECT_EQ(w["PET_RDZV_ID"], "abc");
  EXPECT_EQ(w["PET_RDZV_CONF"], "a=1,b=2");
  EXPECT_TRUE(w.count("PET_STANDALONE"));
  EXPECT_FALSE(w.count("MASTER_ADDR"));  // no Master spec ⇒ no MASTER_*/RANK
  EXPECT_TRUE(api::PluginFor(job.kind).IsMasterRole(job, "Worker", 0));
}

TEST(TensorFlowTest, TfConfigMatchesUpstreamExactly) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: test-tfjob, namespace: ns3}\n"
      "spec:\n  tfReplicaSpecs:\n" +
      Replica("Worker", "tensorflow", 1) + Replica("PS", "tensorflow", 1) +
      Replica("Evaluator", "tensorflow", 1));
  ServiceEndpoints ep("test-tfjob", "ns3");
  auto env = api::PluginFor(job.kind).EnvFor(job, "Worker", 0, ep);
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->default_container_only);
  ASSERT_EQ(env->env.size(), 1u);
  EXPECT_EQ(env->env[0].value,
            R"({"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc:2222"],"ps":["test-tfjob-ps-0.ns3.svc:2222"],"worker":["test-tfjob-worker-0.ns3.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"})");
}

TEST(TensorFlowTest, CustomDomainSparseFormAndSingleReplica) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: tf, namespace: ns}\n"
      "spec:\n  enableDynamicWorker: true\n  tfReplicaSpecs:\n" +
      Replica("Worker", "tensorflow", 2) + Replica("PS", "tensorflow", 2));
  ServiceEndpoints ep("tf", "ns", "cluster.local");
  EXPECT_EQ(EnvMap(job, "Worker", 1, ep)["TF_CONFIG"],
            R"({"cluster":{"worker":{"1":"tf-worker-1.ns.svc.cluster.local:2222"},"ps":["tf-ps-0.ns.svc.cluster.local:2222","tf-ps-1.ns.svc.cluster.local:2222"]},"task":{"type":"worker","index":1}})");
  EXPECT_EQ(EnvMap(job, "PS", 0, ep)["TF_CONFIG"],
            R"({"cluster":{"worker":{},"ps":["tf-ps-0.ns.svc.cluster.local:2222"]},"task":{"type":"ps","index":0}})");
  api::Job single = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: one}\nspec:\n  tfReplicaSpecs:\n" +
      Replica("Worker", "tensorflow", 1));
  EXPECT_TRUE(api::PluginFor(single.kind).EnvFor(single, "Worker", 0, ep)->env.empty());
}

TEST(XGBoostTest, RanksAndLightGbmVars) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: xgb}\nspec:\n"
      "  xgbReplicaSpecs:\n" +
      Replica("Master", "xgboost", 1) + Replica("Worker", "xgboost", 2));
  ServiceEndpoints ep("xgb", "default");
  auto w = EnvMap(job, "Worker", 1, ep);
  EXPECT_EQ(w["MASTER_ADDR"], "xgb-master-0");
  EXPECT_EQ(w["MASTER_PORT"], "9999");
  EXPECT_EQ(w["WORLD_SIZE"], "3");
  EXPECT_EQ(w["RANK"], "2");
  EXPECT_EQ(w["WORKER_PORT"], "9999");
  EXPECT_EQ(w["WORKER_ADDRS"], "xgb-worker-0,xgb-worker-1");
  EXPECT_EQ(Names(job, "Master", 0, ep),
            (std::vector<std::string>{"MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK",
                                      "PYTHONUNBUFFERED", "WORKER_PORT", "WORKER_ADDRS"}));
}

TEST(PaddleTest, CollectiveAndParameterServerModes) {
  api::Job collective = Load(
      "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: pd}\nspec:\n"
      "  paddleReplicaSpecs:\n" +
      Replica("Worker", "paddle", 2));
  ServiceEndpoints ep("pd", "default");
  auto first = api::PluginFor(collective.kind).EnvFor(collective, "Worker", 0, ep);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->env[3].name, "POD_IP_DUMMY");
  EXPECT_EQ(first->env[3].value_from["fieldRef"]["fieldPath"], "status.podIP");
  EXPECT_EQ(first->env[4].value, "$(POD_IP_DUMMY):36543");
  EXPECT_EQ(EnvMap(collective, "Worker", 1, ep)["PADDLE_MASTER"], "pd-worker-0:36543");
  EXPECT_EQ(EnvMap(collective, "Worker", 1, ep)["PADDLE_NNODES"], "2");
  api::Job ps = Load(
      "apiVersion: kubeflow.org/v1\nkind: PaddleJob\nmetadata: {name: pd}\nspec:\n"
      "  paddleReplicaSpecs:\n" +
      Replica("Master", "paddle", 1) + Replica("Worker", "paddle", 2));
  EXPECT_EQ(EnvMap(ps, "Worker", 0, ep)["PADDLE_MASTER"], "pd-master-0:36543");
  EXPECT_EQ(EnvMap(ps, "Worker", 0, ep)["PADDLE_TRAINER_NUM"], "1");
  EXPECT_EQ(EnvMap(ps, "Master", 0, ep)["PADDLE_SERVER_NUM"], "1");
}

TEST(JaxTest, CoordinatorEnv) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: JAXJob\nmetadata: {name: jx}\nspec:\n  jaxReplicaSpecs:\n" +
      Replica("Worker", "jax", 3));
  ServiceEndpoints ep("jx", "default");
  auto w = EnvMap(job, "Worker", 2, ep);
  EXPECT_EQ(w["COORDINATOR_ADDRESS"], "jx-worker-0");
  EXPECT_EQ(w["COORDINATOR_PORT"], "6666");
  EXPECT_EQ(w["NUM_PROCESSES"], "3");
  EXPECT_EQ(w["PROCESS_ID"], "2");
}

TEST(MxnetTest, MxConfigAndDmlc) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: MXJob\nmetadata: {name: mx}\nspec:\n  mxReplicaSpecs:\n" +
      Replica("Scheduler", "mxnet", 1) + Replica("Server", "mxnet", 1) +
      Replica("Worker", "mxnet", 2));
  ServiceEndpoints ep("mx", "default");
  auto w = EnvMap(job, "Worker", 1, ep);
  EXPECT_EQ(w["MX_CONFIG"],
            R"({"cluster":{"scheduler":[{"url":"mx-scheduler-0","port":9091}],"server":[{"url":"mx-server-0","port":9091}],"worker":[{"url":"mx-worker-0","port":9091},{"url":"mx-worker-1","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},"task":{"type":"worker","index":1}})");
  EXPECT_EQ(w["DMLC_PS_ROOT_URI"], "mx-scheduler-0");
  EXPECT_EQ(w["DMLC_PS_ROOT_PORT"], "9091");
  EXPECT_EQ(w["DMLC_NUM_SERVER"], "1");
  EXPECT_EQ(w["DMLC_NUM_WORKER"], "2");
  EXPECT_EQ(w["DMLC_ROLE"], "worker");
  EXPECT_EQ(w["DMLC_WORKER_ID"], "1");
}

TEST(MpiTest, HostfileAndLauncherEnv) {
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: pi}\nspec:\n  slotsPerWorker: 2\n"
      "  mpiReplicaSpecs:\n" +
      Replica("Launcher", "mpi", 1) + Replica("Worker", "mpi", 2));
  ServiceEndpoints ep("pi", "default");
  EXPECT_EQ(MpiHostfile(job, ep, false), "pi-worker-0 slots=2\npi-worker-1 slots=2\n");
  EXPECT_EQ(MpiHostfile(job, ep, true),
            "pi-launcher slots=2\npi-worker-0 slots=2\npi-worker-1 slots=2\n");
  EXPECT_EQ(MpiDiscoverHosts(job, {"pi-worker-1", "pi-worker-0"}, false),
            "#!/bin/sh\necho pi-worker-0:2\necho pi-worker-1:2\n");
  auto env = EnvMap(job, "Launcher", 0, ep);
  EXPECT_EQ(env["OMPI_MCA_plm_rsh_agent"], "/etc/mpi/kubexec.sh");
  EXPECT_EQ(env["OMPI_MCA_orte_default_hostfile"], "/etc/mpi/hostfile");
  EXPECT_EQ(env["I_MPI_HYDRA_BOOTSTRAP"], "rsh");
  EXPECT_TRUE(EnvMap(job, "Worker", 0, ep).empty());
}

TEST(FrameworkTest, ReplicaNamesAndMissingPort) {
  EXPECT_EQ(ReplicaName("a/b", "Worker", 3), "a-b-worker-3");
  api::Job job = Load(
      "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: pi}\nspec:\n"
      "  mpiReplicaSpecs:\n" +
      Replica("Launcher", "mpi", 1));
  EXPECT_FALSE(DeclaredPort(job, "Launcher").ok());
}

TEST(ReplicaNameTest, OneRuleForBothSubstratesWithTheMpiLauncherAsUpstream) {
  api::Job mpi = Load(
      "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: pi, namespace: ns}\n"
      "spec:\n  mpiReplicaSpecs:\n" +
      Replica("Launcher", "mpi", 1) + Replica("Worker", "mpi", 2));
  EXPECT_EQ(ReplicaName(mpi, "Launcher", 0), "pi-launcher");
  EXPECT_EQ(ReplicaName(mpi, "Worker", 1), "pi-worker-1");
  api::Job tf = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t, namespace: ns}\n"
      "spec:\n  tfReplicaSpecs:\n" +
      Replica("Chief", "tensorflow", 1));
  EXPECT_EQ(ReplicaName(tf, "Chief", 0), "t-chief-0");
}

}  // namespace
}  // namespace trainctl::kinds
