// MPIJob v2beta1's children as mpi-operator v0.8.0 builds them: names, labels, the hostfile per
// implementation with FQDNs, the Service, the SSH Secret and mounts, the workers' sshd, and
// the launcher Job with runPolicy.
#include "operator/mpi_v2_children.h"

#include <gtest/gtest.h>

#include "kube/base64.h"
#include "operator/mpi_v2_test_job.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

api::Job Load(const std::string& spec_extra, const std::string& worker_extra = "") {
  return LoadMpiV2TestJob(spec_extra, worker_extra);
}

std::map<std::string, std::string> Env(const json& container) {
  std::map<std::string, std::string> out;
  for (const json& e : container.value("env", json::array()))
    out[e["name"].get<std::string>()] = e.value("value", "");
  return out;
}

TEST(MpiV2ChildrenTest, HostfileListsEveryWorkerByItsFqdnInTheImplementationsFormat) {
  api::Job job = Load("  slotsPerWorker: 2\n");
  json cm = MpiV2ConfigMap(job, "", {"pi-worker-1", "pi-worker-0"});
  EXPECT_EQ(cm["metadata"]["name"], "pi-config");
  EXPECT_EQ(cm["data"]["hostfile"],
            "pi-worker-0.pi.ns.svc slots=2\npi-worker-1.pi.ns.svc slots=2\n");
  EXPECT_EQ(cm["data"]["discover_hosts.sh"],
            "#!/bin/sh\necho pi-worker-0.pi.ns.svc\necho pi-worker-1.pi.ns.svc\n");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["uid"], "u1");

  api::Job mpich = Load("  mpiImplementation: MPICH\n  runLauncherAsWorker: true\n");
  json cm2 = MpiV2ConfigMap(mpich, "cluster.local", {});
  EXPECT_EQ(cm2["data"]["hostfile"],
            "pi-launcher.pi.ns.svc.cluster.local:1\npi-worker-0.pi.ns.svc.cluster.local:1\n"
            "pi-worker-1.pi.ns.svc.cluster.local:1\n");
  EXPECT_EQ(cm2["data"]["discover_hosts.sh"],
            "#!/bin/sh\necho pi-launcher.pi.ns.svc.cluster.local\n");
}

TEST(MpiV2ChildrenTest, ServiceIsHeadlessOverTheJobsPods) {
  json svc = MpiV2Service(Load(""));
  EXPECT_EQ(svc["metadata"]["name"], "pi");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["selector"]["training.kubeflow.org/job-name"], "pi");
  EXPECT_EQ(svc["spec"]["selector"]["training.kubeflow.org/operator-name"], "mpi-operator");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], false);
  EXPECT_EQ(MpiV2Service(Load("  runLauncherAsWorker: true\n"))["spec"]["publishNotReadyAddresses"],
            true);
}

TEST(MpiV2ChildrenTest, SecretHoldsTheKeyPairForSsh) {
  json secret = MpiV2SshSecret(Load(""), {"PRIVATE", "ecdsa-sha2-nistp521 AAAA\n"});
  EXPECT_EQ(secret["metadata"]["name"], "pi-ssh");
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_EQ(kube::Base64Decode(secret["data"]["ssh-privatekey"].get<std::string>()), "PRIVATE");
  EXPECT_EQ(kube::Base64Decode(secret["data"]["ssh-publickey"].get<std::string>()),
            "ecdsa-sha2-nistp521 AAAA\n");
}

TEST(MpiV2ChildrenTest, WorkersRunSshdWithTheKeysAndResolveEachOther) {
  auto worker = BuildMpiV2Worker(Load(""), 1);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  const json& pod = worker->pod;
  EXPECT_EQ(pod["metadata"]["name"], "pi-worker-1");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels["team"], "a");
  EXPECT_EQ(labels["training.kubeflow.org/job-role"], "worker");
  EXPECT_EQ(labels["training.kubeflow.org/replica-index"], "1");
  EXPECT_EQ(labels["training.kubeflow.org/operator-name"], "mpi-operator");
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["hostname"], "pi-worker-1");
  EXPECT_EQ(spec["subdomain"], "pi");
  EXPECT_EQ(spec["dnsConfig"]["searches"], json::array({"pi.ns.svc.cluster.local"}));
  EXPECT_EQ(spec["restartPolicy"], "Never");
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["command"], json::array({"/usr/sbin/sshd", "-De"}));
  EXPECT_EQ(Env(c)["K_MPI_JOB_ROLE"], "worker");
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/root/.ssh");
  EXPECT_EQ(spec["volumes"][0]["secret"]["secretName"], "pi-ssh");
  EXPECT_EQ(spec["volumes"][0]["secret"]["defaultMode"], 0600);
  EXPECT_EQ(spec["volumes"][0]["secret"]["items"][2]["path"], "authorized_keys");

  // Another mount path keeps the Secret's default mode; the launcher as a worker shifts indexes.
  auto other = BuildMpiV2Worker(
      Load("  sshAuthMountPath: /home/mpiuser/.ssh\n  runLauncherAsWorker: true\n"), 0);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->pod["spec"]["volumes"][0]["secret"].contains("defaultMode"));
  EXPECT_EQ(other->pod["metadata"]["labels"]["training.kubeflow.org/replica-index"], "1");
}

TEST(MpiV2ChildrenTest, LauncherIsABatchJobWithTheRunPolicy) {
  api::Job job = Load(
      "  runPolicy: {ttlSecondsAfterFinished: 60, activeDeadlineSeconds: 600, suspend: true}\n");
  auto launcher = BuildMpiV2Launcher(job);
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  const json& j = launcher->job;
  EXPECT_EQ(j["apiVersion"], "batch/v1");
  EXPECT_EQ(j["metadata"]["name"], "pi-launcher");
  // Selected by the operator's informer as the job's pods are.
  EXPECT_EQ(j["metadata"]["labels"]["training.kubeflow.org/job-name"], "pi");
  EXPECT_EQ(j["spec"]["ttlSecondsAfterFinished"], 60);
  EXPECT_EQ(j["spec"]["activeDeadlineSeconds"], 600);
  EXPECT_EQ(j["spec"]["backoffLimit"], 6);
  EXPECT_EQ(j["spec"]["suspend"], true);
  const json& tmpl = j["spec"]["template"];
  EXPECT_EQ(tmpl["metadata"]["labels"]["training.kubeflow.org/job-role"], "launcher");
  EXPECT_FALSE(tmpl["metadata"]["labels"].contains("training.kubeflow.org/replica-index"));
  EXPECT_EQ(tmpl["spec"]["hostname"], "pi-launcher");
  EXPECT_EQ(tmpl["spec"]["restartPolicy"], "OnFailure");
  std::map<std::string, std::string> env = Env(tmpl["spec"]["containers"][0]);
  EXPECT_EQ(env["K_MPI_JOB_ROLE"], "launcher");
  EXPECT_EQ(env["OMPI_MCA_orte_default_hostfile"], "/etc/mpi/hostfile");
  EXPECT_TRUE(env.count("NVIDIA_VISIBLE_DEVICES"));
  json mounts = tmpl["spec"]["containers"][0]["volumeMounts"];
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0]["mountPath"], "/root/.ssh");
  EXPECT_EQ(mounts[1]["mountPath"], "/etc/mpi");
  EXPECT_TRUE(launcher->events.empty());
}

TEST(MpiV2ChildrenTest, ATemplateWithoutContainersIsRefusedWithItsPath) {
  api::Job job = Load("");
  job.replica_specs["Worker"].pod_template = json::object();
  auto worker = BuildMpiV2Worker(job, 0);
  ASSERT_FALSE(worker.ok());
  EXPECT_NE(worker.status().message().find("spec.mpiReplicaSpecs[Worker].template.spec.containers"),
            std::string::npos);
}

}  // namespace
}  // namespace trainctl::op
