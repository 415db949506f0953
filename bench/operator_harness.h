// What the operator benchmarks (operator_scale_bench, operator_latency_bench) share: clients for
// the admin and the audited identity, PyTorchJob documents, a pod watch that notes when each pod
// was seen in each state, namespaces that are really gone before the next run, and starting,
// readying and stopping either operator (trainctl or the upstream binary) the same way.
//
// Environment (set by bench/operator_scale.sh and bench/operator_latency.sh):
//   TRAINCTL_CLUSTER_DIR                 the private test cluster (its admin kubeconfig)
//   TRAINCTL_BENCH_OPERATOR_KUBECONFIG   the audited identity the operators and the floor use
//   TRAINCTL_BENCH_AUDIT_LOG, TRAINCTL_BENCH_AUDIT_USER   the API server's audit log, that identity
// Benchmark helpers: errors end the process with a message (Die), nothing is returned half-done.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "kube/client.h"
#include "kube/pod_summary.h"
#include "kube/reflector.h"
#include "kube/store.h"

namespace trainctl::bench {

using Steady = std::chrono::steady_clock;

inline const kube::Resource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs"};

double Since(Steady::time_point t);
std::string Env(const char* name);
[[noreturn]] void Die(const std::string& message);
std::string Number(double v);                                            // shortest form: 20, 0.5
std::vector<std::string> SplitList(const std::string& comma_separated);  // empty items dropped
// Fails (exit 2, naming them) when the variables above are not set.
void RequireBenchEnvironment();

std::string AdminKubeconfig();
std::string OperatorKubeconfig();
// qps < 0: unthrottled.
std::unique_ptr<kube::Client> MakeClient(const Clock* clock, const std::string& kubeconfig,
                                         double qps, int burst);

struct JobShape {
  int replicas = 8;  // 1 Master + replicas-1 Workers
  std::string restart_policy = "OnFailure";
  std::map<std::string, std::string> pod_annotations;  // kwok's trainctl.dev/kwok-* controls
};
nlohmann::json JobDoc(const std::string& name, const std::string& ns, const JobShape& shape);

// Watches one namespace's pods and notes, per pod name, when it was first seen at all, Running
// (or past it) and Succeeded; `on_pod` (optional) sees every pod update with the time it came,
// `on_gone` every pod deleted.
class PodWatch {
 public:
  using OnPod = std::function<void(const kube::PodSummary&, Steady::time_point)>;
  PodWatch(kube::Client* client, const std::string& ns, OnPod on_pod = nullptr,
           OnPod on_gone = nullptr);
  ~PodWatch();
  struct Counts {
    size_t created = 0, running = 0, succeeded = 0;
  };
  Counts counts();
  // When each pod was first seen, first seen bound to a node (spec.nodeName: the scheduler's
  // part) and first seen Running or past it (kwok's part); a stage not seen is time_point{}.
  struct Stages {
    Steady::time_point created, bound, running;
  };
  std::map<std::string, Stages> stages();

 private:
  void Note(const kube::PodSummary& p);
  OnPod on_pod_;
  std::mutex mu_;
  std::set<std::string> created_, running_, succeeded_;
  std::map<std::string, Stages> stages_;
  kube::Store<kube::PodSummary> store_;
  std::unique_ptr<kube::Reflector> reflector_;
};

// The bytes the API server has allocated since it started (its Go runtime's counter, from its
// /metrics); -1 when it cannot be read. A difference of two readings is the work a run asked of
// it (prometheus_text.h).
double ApiServerAllocatedBytes(kube::Client* admin);

void CreateNamespace(kube::Client* admin, const std::string& ns);
// Deletes it and waits until it is gone (its pods' garbage collection would load the next run).
void DeleteNamespace(kube::Client* admin, const std::string& ns);

// CPU seconds used so far by each process of the private cluster (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager, kwok): those whose command line names
// $TRAINCTL_CLUSTER_DIR, by program name. A difference of two readings is what a run cost them.
std::map<std::string, double> ControlPlaneCpu();

struct OperatorFlags {
  // "trainctl", "baseline" (another trainctl build), "upstream" (the Training Operator) or
  // "mpi-operator"
  std::string impl;
  std::string binary;
  std::string namespace_;
  double qps = 20;  // mpi-operator takes whole numbers only
  int burst = 30;
  int threads = 1;                 // mpi-operator: --threadiness
  std::vector<std::string> extra;  // more flags, after the common ones
};

struct Operator {
  std::string impl;
  pid_t pid = 0;
  std::string log;
};

// Starts the operator with the same flags for either side, as the audited identity, its output
// in $TRAINCTL_CLUSTER_DIR/scale-<impl>.log (appended: restarts keep what came before).
// mpi-operator spells them its way (--kubeConfig, --threadiness, --monitoring-port), takes its
// leader-election Lease in trainctl-bench (it always elects) and serves its health check on
// :8080, which it does not let one move; KUBECONFIG, which it prefers to --kubeConfig, is set to
// the audited identity's for it.
Operator StartOperator(const OperatorFlags& flags);
// Waits until it is ready: /readyz answers 200 (trainctl: informers synced; upstream: certificates
// in place and the webhook server up) and, for upstream, its PyTorchJob workers have started;
// mpi-operator, which serves no /readyz: its log says "Started workers" (informers synced).
// Upstream's certificate files are copied from its Secret meanwhile. Returns the seconds waited.
double WaitReady(const Operator& op, kube::Client* admin, double limit_seconds = 300);
// How many jobs (PyTorchJobs unless `resource` says) in `ns` have condition `type` True; -1
// when they cannot be listed.
int JobsWithCondition(kube::Client* admin, const std::string& ns, const std::string& type,
                      const kube::Resource& resource = kPyTorchJobs);

// Watches one namespace's jobs of `resource` and notes when each was first seen with condition
// Running True (or already Succeeded) and with Succeeded True.
class JobConditionWatch {
 public:
  JobConditionWatch(kube::Client* client, const kube::Resource& resource, const std::string& ns);
  ~JobConditionWatch();
  struct Counts {
    size_t running = 0, succeeded = 0;
  };
  Counts counts();

 private:
  struct Seen {
    bool running = false, succeeded = false;
  };
  std::mutex mu_;
  std::set<std::string> running_, succeeded_;
  kube::Store<Seen> store_;
  std::unique_ptr<kube::Reflector> reflector_;
};

struct ProcessFigures {
  double peak_rss_mib = 0, cpu_seconds = 0;
  // controller_runtime_reconcile_total summed over its labels, from the operator's /metrics
  // (both sides export it under that name); -1 when it could not be read.
  double reconciles = -1;
  // CPU seconds by thread name (the history's threads are "hist-capture" and "hist-writer").
  std::map<std::string, double> cpu_by_thread;
  // trainctl's trainctl_history_shared_cpu_seconds_total: the history's CPU on threads it
  // shares with the controller and the event recorder; -1 when not exported.
  double history_shared_cpu = -1;
};
// Reads the figures from /proc/<pid> (the same way for both sides) and its reconcile count, then
// SIGTERMs it and reaps it.
ProcessFigures StopOperator(const Operator& op);
// SIGKILLs it and reaps it (a crash: no clean shutdown).
void KillOperator(const Operator& op);

}  // namespace trainctl::bench
