// Controller: reconciles kubeflow.org/v1 jobs of the enabled kinds on a Kubernetes API server.
//
//   informers (jobs per kind, the jobs' pods and services, label-selected, compact caches; with
//     MPIJob enabled also the batch Jobs that launch v2beta1 MPIJobs, whose pods' events go to
//     the MPIJob that owns the Job)
//     → event handlers enqueue the owning job's key ("<plural>/<ns>/<name>"); a job whose last
//       sync was expensive waits a multiple of its cost first (sync_spacing.h)
//     → WorkQueue (de-duplicated, N workers, back-off on errors, timed requeue; a job whose
//       pod failed or vanished is served first, then one whose pod started or finished, then
//       routine changes, unless its syncs are spaced)
//     → Sync(key): cached job → decode/validate/default → observations (+ Expectations)
//                  → engine::Reconcile → PlanChildren → ChildWriter → status subresource
//                  → events, metrics, TTL delete, requeue for deadline/TTL
//
// Finished jobs are not resynced periodically: only an event or a timed requeue (TTL) wakes
// them. Jobs whose runPolicy.managedBy names another controller are left alone (no status
// write). Start() launches informers and workers; Stop() ends them. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/kinds.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "kube/work_queue.h"
#include "operator/cache_types.h"
#include "operator/child_writer.h"
#include "operator/expectations.h"
#include "operator/hpa_writer.h"
#include "operator/kueue_watch.h"
#include "operator/metrics.h"
#include "operator/mpi_v2_launcher.h"
#include "operator/mpi_writer.h"
#include "operator/pod_group_writer.h"
#include "operator/progress_probe.h"
#include "operator/rank_probe.h"
#include "recording/history_recorder.h"

namespace trainctl::op {

// A pod that started or finished has its job synced this long after, in the work queue's prompt
// lane: the pods of a job that start together (within a second on kwok; measured at 1,000 × 8,
// docs/benchmarks.md) are then seen by one sync, and `Running` and `ReplicasReady` go out in one
// status write instead of two. A failure is not held.
inline constexpr Duration kPhaseChangeSettle{1000};

struct ControllerOptions {
  std::string namespace_;  // empty = all namespaces
  std::vector<api::Kind> kinds;
  int threads = 1;
  PodSettings pod_settings;
  std::string cluster_domain;  // CUSTOM_CLUSTER_DOMAIN
  ChildOptions children;
  int progress_probes_per_minute = 120;  // 0: no limit
  Duration status_count_window{0};       // CountCoalescing's window (0: no holding)
  // How long a new job's first status (Created) waits for its pods' first states
  // (CountCoalescing::first_status_window; 0: written at once). The operator uses
  // kPhaseChangeSettle.
  Duration first_status_settle{0};
  // Kueue's Workloads and LocalQueues are served: a suspended job that Kueue holds says what
  // its Workload waits for (operator/kueue_workload.h); watched from the start.
  bool kueue = false;
};

// The outcome of one sync, for the worker loop.
struct SyncResult {
  Status status = Status::Ok();  // non-OK: retried with back-off
  std::optional<Duration> requeue_after;
  // The lane requeue_after is due in: prompt while a first status is held for its pods' first
  // states (routine syncs wait behind a burst of creations).
  kube::Lane requeue_lane = kube::Lane::kRoutine;
  // How long reading the job's pods and deciding took (not the API calls): what grows with the
  // job's size, and what spaces its next sync (sync_spacing.h).
  Duration read_and_decide{0};
};

// "caches synced in 5.91 s: pods 10000 (20 pages, 4.10 s), …, 6 kinds empty": what the start
// waited for, so that a slow start says which list it waited on.
std::string SyncSummary(Duration took,
                        const std::vector<std::pair<std::string, kube::ReflectorStats>>& informers);

class Controller {
 public:
  Controller(kube::Client* client, const Clock* clock, ControllerOptions options, Metrics* metrics,
             kube::EventRecorder* recorder);
  ~Controller();

  void Start();
  bool WaitForSync(Duration timeout);
  bool Synced() const;
  void Stop();

  // One reconcile of one job key; public for tests.
  SyncResult Sync(const std::string& key);
  // The job history (--history): finished jobs are held until it records them. Set before
  // Start(); null: off.
  void SetHistory(recording::HistoryRecorder* history);

  kube::WorkQueue& queue() { return queue_; }
  // The informers' caches; unit tests feed them as a reflector would (Replace/Apply) and then
  // call Sync without starting anything. Null for a kind that is not enabled.
  kube::ReflectorConsumer* JobCache(api::Kind kind);
  kube::ReflectorConsumer* PodCache() { return &pods_; }
  kube::ReflectorConsumer* ServiceCache() { return &services_; }
  // The MPIJob v2beta1 launchers' batch Jobs (informer started only when MPIJob is enabled).
  kube::ReflectorConsumer* LauncherJobCache() { return &launcher_jobs_; }
  // Kueue's objects, which the TrainJob controller reads too: started with this controller's
  // children when ControllerOptions::kueue, else by whoever learns that Kueue is served.
  KueueWatch* kueue() { return kueue_.get(); }
  size_t cached_pods() const { return pods_.size(); }
  // The informers' list and watch counts, summed (zero before Start).
  kube::ReflectorStats watch_stats() const;
  // Each informer's own counts, named by its resource's plural: pods, services, then the kinds.
  std::vector<std::pair<std::string, kube::ReflectorStats>> informer_stats() const;

 private:
  struct KindInformer {
    api::Kind kind;
    std::unique_ptr<kube::Store<CachedJob>> store;
    std::unique_ptr<kube::Reflector> reflector;
  };
  void Worker();
  // `lane`: the work queue's lane for the job (urgent: a failed or lost pod; prompt: a pod that
  // started or finished, kPhaseChangeSettle later), after the job's sync spacing if it is spaced.
  void EnqueueOwner(const kube::Uid& owner, kube::Lane lane = kube::Lane::kRoutine);
  std::optional<nlohmann::json> LatestJob(const KindInformer& informer, const std::string& key);
  // A job being deleted that holds the checkpoint-notice finalizer: tells its running pods
  // (engine::ReconcileDeletion) and releases the finalizer once they are done or the notice ran
  // out. A job that cannot be read any more has its finalizer released at once.
  SyncResult SyncDeletion(const KindInformer& informer, nlohmann::json object,
                          const std::string& qkey);
  // Records the engine's events on the job.
  void RecordEvents(const api::Job& job, const std::string& uid,
                    const std::vector<engine::Event>& events);
  SyncResult SyncInvalid(const KindInformer& informer, const nlohmann::json& object,
                         const std::string& message);
  Status WriteStatus(const KindInformer& informer, nlohmann::json object,
                     const nlohmann::json& status);
  // Keeps `written` (what the API server returned for our write of job ns/name, without its
  // managedFields) until the informer's cache catches up (LatestJob).
  void Remember(const KindInformer& informer, const std::string& ns, const std::string& name,
                nlohmann::json written);
  // Records a gang restart's next attempt on the job (a conditional merge patch of its
  // annotation); `object` becomes the version written.
  // Records a gang restart's next attempt and/or a checkpoint notice (Plan::restart_attempt,
  // Plan::notice_record) on the job, conditional on its resourceVersion; `*object` becomes the
  // patched job.
  Status RecordOnJob(const KindInformer& informer, nlohmann::json* object,
                     const engine::Plan& plan);
  // Names of the services of `job` (its uid) in the cache.
  std::vector<std::string> ServiceNames(const api::Job& job, const std::string& uid) const;
  // Pod name → node name of the job's pods in the cache.
  std::map<std::string, std::string> NodesOf(const std::string& uid) const;
  // The job's pods in the cache, observed in place (no copies of the cached pods).
  std::vector<engine::ReplicaObservation> ObservePods(const api::Job& job,
                                                      const std::string& uid) const;
  // MPIJob v2beta1: its launcher Job (`<job>-launcher`, controlled by the job) and that Job's
  // pods, observed.
  struct LauncherView {
    std::optional<LauncherJobSummary> job;
    std::vector<engine::ReplicaObservation> pods;
  };
  LauncherView ViewLauncher(const api::Job& job, const std::string& uid) const;
  // The child informers that exist (pods, services; launcher Jobs when MPIJob is enabled).
  std::vector<kube::Reflector*> ChildReflectors() const;

  kube::Client* client_;
  const Clock* clock_;
  ControllerOptions options_;
  Metrics* metrics_;
  kube::EventRecorder* recorder_;
  recording::HistoryRecorder* history_ = nullptr;
  kube::WorkQueue queue_;
  Expectations expectations_;
  ChildWriter writer_;
  MpiWriter mpi_writer_;
  ProbeBudget probe_budget_;  // pods/log requests of both probers, together
  ProgressProber prober_;
  RankProber rank_prober_;  // failed ranks under torchrun, from the replicas' logs
  HpaWriter hpa_writer_;
  PodGroupWriter pod_group_writer_;

  std::vector<KindInformer> jobs_;
  kube::Store<kube::PodSummary> pods_;
  kube::Store<ServiceSummary> services_;
  std::unique_ptr<kube::Reflector> pod_reflector_, service_reflector_;
  kube::Store<LauncherJobSummary> launcher_jobs_;
  std::unique_ptr<kube::Reflector> launcher_job_reflector_;  // null: MPIJob not enabled
  std::unique_ptr<KueueWatch> kueue_;

  mutable std::mutex mu_;
  std::map<std::string, std::string> owner_keys_;  // job uid → queue key; guarded by mu_
  // Objects returned by our own status writes, newer than the cache until the watch catches up.
  std::map<std::string, nlohmann::json> written_;  // guarded by mu_
  // Jobs whose replica-count change is held back, and since when (CountCoalescing).
  std::map<std::string, Time> counts_held_;  // guarded by mu_
  // Jobs whose child events wait after an expensive sync, and until when (sync_spacing.h).
  std::map<std::string, Time> quiet_until_;  // guarded by mu_
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
};

}  // namespace trainctl::op
