// MPIJob kubeflow.org/v2beta1 through the loader (decode, validate, default) and the plugin:
// mpi-operator v0.8.0's defaults, checks with field paths, hostfile lines and env per MPI
// implementation; v1alpha2 converted by the local loader only.
#include "kinds/mpi_v2.h"

#include <gtest/gtest.h>

#include "api/kind_plugin.h"
#include "api/manifest.h"
#include "api/mpi_v1alpha2.h"

namespace trainctl::kinds {
namespace {

std::string V2(const std::string& spec_extra, const std::string& worker = "      replicas: 2\n",
               const std::string& name = "pi") {
  return "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: " + name + "}\nspec:\n" +
         spec_extra +
         "  mpiReplicaSpecs:\n"
         "    Launcher:\n      template:\n        spec:\n          containers:\n"
         "          - {name: launcher, image: mpi-pi, command: [mpirun, -n, '2', pi]}\n"
         "    Worker:\n" +
         worker +
         "      template:\n        spec:\n          containers:\n"
         "          - {name: worker, image: mpi-pi}\n";
}

StatusOr<std::vector<api::LoadedJob>> LoadText(const std::string& yaml,
                                               api::ManifestExtras* extras = nullptr) {
  return api::LoadJobsFromText(yaml, "pi.yaml", extras);
}

api::Job Load(const std::string& yaml) {
  auto jobs = LoadText(yaml);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? (*jobs)[0].job : api::Job{};
}

std::string LoadError(const std::string& yaml, api::ManifestExtras* extras = nullptr) {
  auto jobs = LoadText(yaml, extras);
  return jobs.ok() ? "<loaded>" : jobs.status().message();
}

class NoEndpoints : public api::Endpoints {
 public:
  std::string Host(const std::string&, int) const override { return "h"; }
  std::string ServiceHost(const std::string&, int) const override { return "h"; }
  int Port(const std::string&, int, int declared) const override { return declared; }
};

std::map<std::string, std::string> EnvMap(const std::vector<api::EnvVar>& env) {
  std::map<std::string, std::string> out;
  for (const api::EnvVar& e : env) out[e.name] = e.value;
  return out;
}

TEST(MpiV2Test, DefaultsAreMpiOperators) {
  api::Job job = Load(V2(""));
  EXPECT_TRUE(job.IsMpiV2());
  EXPECT_EQ(job.api_version, "kubeflow.org/v2beta1");
  EXPECT_EQ(job.slots_per_worker, 1);
  EXPECT_EQ(job.ssh_auth_mount_path, "/root/.ssh");
  EXPECT_EQ(job.mpi_implementation, "OpenMPI");
  EXPECT_EQ(job.launcher_creation_policy, "AtStartup");
  EXPECT_EQ(job.run_policy.clean_pod_policy, "None");
  EXPECT_EQ(job.run_policy.backoff_limit, 6);
  EXPECT_EQ(job.replica_specs.at("Launcher").restart_policy, "OnFailure");
  EXPECT_EQ(job.replica_specs.at("Launcher").replicas, 1);
  EXPECT_EQ(job.replica_specs.at("Worker").restart_policy, "Never");
  nlohmann::json encoded = api::EncodeJob(job);
  EXPECT_EQ(encoded["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_EQ(encoded["spec"]["mpiImplementation"], "OpenMPI");
  EXPECT_EQ(encoded["spec"]["sshAuthMountPath"], "/root/.ssh");
  EXPECT_FALSE(encoded["spec"].contains("cleanPodPolicy"));  // v1's legacy field only
}

TEST(MpiV2Test, SpecFieldsDecode) {
  api::Job job = Load(V2(
      "  slotsPerWorker: 4\n  runLauncherAsWorker: true\n  sshAuthMountPath: /home/mpiuser/.ssh\n"
      "  launcherCreationPolicy: WaitForWorkersReady\n  mpiImplementation: MPICH\n"));
  EXPECT_EQ(job.slots_per_worker, 4);
  EXPECT_EQ(job.run_launcher_as_worker, true);
  EXPECT_EQ(job.ssh_auth_mount_path, "/home/mpiuser/.ssh");
  EXPECT_EQ(job.launcher_creation_policy, "WaitForWorkersReady");
  EXPECT_EQ(job.mpi_implementation, "MPICH");
}

TEST(MpiV2Test, BadInputNamesTheFieldPath) {
  EXPECT_NE(LoadError(V2("  mpiImplementation: LAM\n"))
                .find("spec.mpiImplementation: Unsupported value: \"LAM\": supported values: "
                      "\"Intel\", \"MPICH\", \"OpenMPI\""),
            std::string::npos)
      << LoadError(V2("  mpiImplementation: LAM\n"));
  EXPECT_NE(LoadError(V2("  slotsPerWorker: two\n")).find("spec.slotsPerWorker"),
            std::string::npos);
  EXPECT_NE(LoadError(V2("  slotsPerWorker: -1\n")).find("spec.slotsPerWorker: Invalid value: -1"),
            std::string::npos);
  EXPECT_NE(LoadError(V2("  launcherCreationPolicy: Later\n"))
                .find("spec.launcherCreationPolicy: Unsupported value: \"Later\""),
            std::string::npos);
  // No replicas: mpi-operator defaults a Worker to 0, then requires at least 1.
  EXPECT_NE(LoadError(V2("", ""))
                .find("spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: "
                      "must be greater than or equal to 1"),
            std::string::npos)
      << LoadError(V2("", ""));
  EXPECT_NE(LoadError(V2("", "      replicas: 1\n      restartPolicy: Always\n"))
                .find("spec.mpiReplicaSpecs[Worker].restartPolicy: Unsupported value: \"Always\""),
            std::string::npos);
  EXPECT_NE(LoadError(V2("  runPolicy: {managedBy: kubeflow.org/training-operator}\n"))
                .find("supported values: \"kubeflow.org/mpi-operator\""),
            std::string::npos);
  std::string long_name(60, 'a');
  EXPECT_NE(LoadError(V2("", "      replicas: 12\n", long_name))
                .find("invalid DNS label \"" + long_name + "-worker-11\""),
            std::string::npos);
  EXPECT_NE(LoadError("apiVersion: kubeflow.org/v3\nkind: MPIJob\nmetadata: {name: x}\n")
                .find("MPIJob is served as \"kubeflow.org/v1\" or \"kubeflow.org/v2beta1\""),
            std::string::npos);
  // v2beta1 is an MPIJob version only.
  EXPECT_NE(LoadError("apiVersion: kubeflow.org/v2beta1\nkind: PyTorchJob\nmetadata: {name: x}\n")
                .find("PyTorchJob is served as \"kubeflow.org/v1\""),
            std::string::npos);
}

TEST(MpiV2Test, HostfileLinePerImplementation) {
  api::Job job = Load(V2("  slotsPerWorker: 2\n"));
  EXPECT_EQ(MpiV2HostfileLine(job, "pi-worker-0.pi.ns.svc", 2), "pi-worker-0.pi.ns.svc slots=2\n");
  job.mpi_implementation = "Intel";
  EXPECT_EQ(MpiV2HostfileLine(job, "pi-worker-0.pi.ns.svc", 2), "pi-worker-0.pi.ns.svc:2\n");
  job.mpi_implementation = "MPICH";
  EXPECT_EQ(MpiV2HostfileLine(job, "h", 3), "h:3\n");
}

TEST(MpiV2Test, LauncherEnvPerImplementation) {
  api::Job job = Load(V2("  slotsPerWorker: 2\n"));
  auto open_mpi = EnvMap(MpiV2LauncherEnv(job, "/etc/mpi"));
  EXPECT_EQ(open_mpi["K_MPI_JOB_ROLE"], "launcher");
  EXPECT_EQ(open_mpi["OMPI_MCA_orte_default_hostfile"], "/etc/mpi/hostfile");
  EXPECT_EQ(open_mpi["OMPI_MCA_orte_keep_fqdn_hostnames"], "true");
  EXPECT_EQ(open_mpi["OMPI_MCA_plm_rsh_args"], "-o ConnectionAttempts=10");
  EXPECT_EQ(open_mpi["OMPI_MCA_orte_set_default_slots"], "2");
  EXPECT_TRUE(open_mpi.count("NVIDIA_VISIBLE_DEVICES"));
  EXPECT_FALSE(open_mpi.count("I_MPI_HYDRA_HOST_FILE"));

  job.mpi_implementation = "Intel";
  auto intel = EnvMap(MpiV2LauncherEnv(job, "/etc/mpi"));
  EXPECT_EQ(intel["I_MPI_HYDRA_HOST_FILE"], "/etc/mpi/hostfile");
  EXPECT_EQ(intel["I_MPI_PERHOST"], "2");
  EXPECT_FALSE(intel.count("OMPI_MCA_orte_default_hostfile"));

  job.mpi_implementation = "MPICH";
  job.run_launcher_as_worker = true;
  auto mpich = EnvMap(MpiV2LauncherEnv(job, "/etc/mpi"));
  EXPECT_EQ(mpich["HYDRA_HOST_FILE"], "/etc/mpi/hostfile");
  EXPECT_EQ(mpich["HYDRA_LAUNCH_EXTRA_ARGS"], "-o ConnectionAttempts=10");
  EXPECT_FALSE(mpich.count("NVIDIA_VISIBLE_DEVICES"));  // the launcher is a worker: GPUs stay

  auto worker = api::PluginFor(api::Kind::kMPIJob).EnvFor(job, "Worker", 0, NoEndpoints{});
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(EnvMap(worker->env)["K_MPI_JOB_ROLE"], "worker");
}

TEST(MpiV1alpha2Test, TheLocalLoaderConvertsToV1WithOneNote) {
  std::string yaml =
      "apiVersion: kubeflow.org/v1alpha2\nkind: MPIJob\nmetadata: {name: tensorflow-benchmarks}\n"
      "spec:\n  slotsPerWorker: 1\n  cleanPodPolicy: Running\n  backoffLimit: 3\n"
      "  mpiDistribution: OpenMPI\n  mpiReplicaSpecs:\n"
      "    Launcher:\n      replicas: 1\n      template:\n        spec:\n          containers:\n"
      "          - {name: tensorflow-benchmarks, image: tf, command: [mpirun, python]}\n"
      "    Worker:\n      replicas: 2\n      template:\n        spec:\n          containers:\n"
      "          - {name: tensorflow-benchmarks, image: tf}\n";
  api::ManifestExtras extras;
  auto jobs = LoadText(yaml, &extras);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  const api::Job& job = (*jobs)[0].job;
  EXPECT_EQ(job.api_version, "kubeflow.org/v1");
  EXPECT_EQ(job.run_policy.backoff_limit, 3);
  EXPECT_EQ(job.run_policy.clean_pod_policy, "Running");
  EXPECT_EQ(job.spec["mpiDistribution"], "OpenMPI");  // kept as written
  ASSERT_EQ(extras.notes.size(), 1u);
  EXPECT_NE(extras.notes[0].find("kubeflow.org/v1alpha2"), std::string::npos);
  EXPECT_NE(extras.notes[0].find("run as kubeflow.org/v1"), std::string::npos);
  EXPECT_NE(extras.notes[0].find("spec.backoffLimit moved under spec.runPolicy"),
            std::string::npos);
  // Without the local loader's extras (a cluster path), v1alpha2 is not served.
  EXPECT_NE(LoadError(yaml).find("apiVersion: Unsupported value: \"kubeflow.org/v1alpha2\""),
            std::string::npos);
  // A moved field of the wrong type is reported where the manifest wrote it.
  std::string bad = yaml;
  bad.replace(bad.find("backoffLimit: 3"), 15, "backoffLimit: x");
  EXPECT_NE(LoadError(bad, &extras).find("spec.backoffLimit: Invalid value: \"x\""),
            std::string::npos)
      << LoadError(bad, &extras);
}

}  // namespace
}  // namespace trainctl::kinds
