// A TrainJob on an MPI runtime on this machine (local/mpi_local.h): its trainer step is the
// launcher and its `node` job the workers, with mpi-operator v2beta1's mechanics — forked ranks
// as processes, SSH to each node's own sshd port in containers.
#include <gtest/gtest.h>

#include "api/kind_plugin.h"
#include "api/manifest.h"
#include "local/mpi_local.h"

namespace trainctl::local::mpi_trainjob_test {
namespace {

const char* kRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: mpi-rt}
spec:
  mlPolicy: {numNodes: 1, mpi: {numProcPerNode: 1, runLauncherAsNode: true}}
  template:
    spec:
      successPolicy: {operator: All, targetReplicatedJobs: [launcher]}
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - {name: node, image: mpi, command: [/usr/sbin/sshd, -De]}
      - name: launcher
        dependsOn: [{name: node, status: Ready}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: mpi}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: pi}
spec:
  runtimeRef: {name: mpi-rt}
  trainer: {numNodes: 3, numProcPerNode: 2, command: [mpirun, python3, pi.py]}
)";

api::Job Load(const std::string& yaml) {
  api::ManifestExtras extras;
  auto jobs = api::LoadJobsFromText(yaml, "tj.yaml", &extras);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() && !jobs->empty() ? (*jobs)[0].job : api::Job{};
}

class Here : public api::Endpoints {
 public:
  std::string Host(const std::string&, int) const override { return "127.0.0.1"; }
  std::string ServiceHost(const std::string& t, int i) const override { return Host(t, i); }
  int Port(const std::string&, int, int declared) const override { return declared; }
};

std::string EnvOf(const std::vector<api::EnvVar>& env, const std::string& name) {
  for (const api::EnvVar& e : env)
    if (e.name == name) return e.value;
  return "<unset>";
}

TEST(MpiTrainJobLocalTest, TheLauncherForksEveryRankAndTheNodesHoldTheirPlace) {
  api::Job job = Load(kRuntime);
  ASSERT_TRUE(job.IsMpiTrainJob());
  EXPECT_EQ(LocalMpiModeOf(job, false), LocalMpiMode::kFork);
  EXPECT_TRUE(IsIdleReplica(job, "node", false));
  EXPECT_FALSE(IsIdleReplica(job, "launcher", false));
  EXPECT_TRUE(ServesLauncherOnly(job, "node"));
  // Two `node` hosts and the launcher, 2 slots each: 6 ranks here.
  EXPECT_EQ(LocalMpiSlots(job), 6);
  EXPECT_EQ(LocalMpiHostfile(job, LocalMpiMode::kFork), "localhost slots=6\n");
  StatusOr<api::ReplicaEnv> upstream = api::PluginFor(job.kind).EnvFor(job, "launcher", 0, Here());
  ASSERT_TRUE(upstream.ok());
  EXPECT_EQ(EnvOf(upstream->env, "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
  std::vector<api::EnvVar> env =
      LocalMpiLauncherEnv(job, upstream->env, "/state/hostfile", false, 8, LocalMpiMode::kFork);
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_default_hostfile"), "/state/hostfile");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_orte_set_default_slots"), "2");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm"), "isolated");
  EXPECT_EQ(EnvOf(env, "OMPI_MCA_plm_rsh_args"), "<unset>");
  StatusOr<api::ReplicaEnv> node = api::PluginFor(job.kind).EnvFor(job, "node", 1, Here());
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE(node->env.empty()) << "a node's sshd gets no MPI env";
  std::optional<std::string> note = LocalMpiWorkerNote(job, LocalMpiMode::kFork);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("not run here"), std::string::npos) << *note;
}

TEST(MpiTrainJobLocalTest, InContainersTheLauncherReachesEachNodeByItsPodName) {
  api::Job job = Load(kRuntime);
  EXPECT_EQ(LocalMpiModeOf(job, true), LocalMpiMode::kSsh);
  EXPECT_FALSE(IsIdleReplica(job, "node", true));
  EXPECT_EQ(LocalMpiWorkerHost(job, 1), "pi-node-0-1.pi");
  EXPECT_EQ(LocalMpiHostfile(job, LocalMpiMode::kSsh),
            "localhost slots=2\npi-node-0-0.pi slots=2\npi-node-0-1.pi slots=2\n");
  std::string config = LocalSshConfig(job, {30001, 30002});
  EXPECT_NE(config.find("Host pi-node-0-1.pi pi-node-0-1\n  HostName 127.0.0.1\n  Port 30002\n"),
            std::string::npos)
      << config;
}

TEST(MpiTrainJobLocalTest, OtherTrainJobsHaveNoMpiRoles) {
  std::string torch = kRuntime;
  torch.replace(torch.find("mpi: {numProcPerNode: 1, runLauncherAsNode: true}"), 49, "torch: {}");
  api::Job job = Load(torch);
  EXPECT_FALSE(job.IsMpiTrainJob());
  EXPECT_EQ(job.MpiLauncherGroup(), "");
  EXPECT_EQ(LocalMpiModeOf(job, false), LocalMpiMode::kNone);
  EXPECT_FALSE(ServesLauncherOnly(job, "node"));
}

}  // namespace
}  // namespace trainctl::local::mpi_trainjob_test
