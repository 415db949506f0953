// TrainJobController: serves Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1) on a cluster:
// each TrainJob becomes a JobSet that the JobSet controller runs, as upstream's
// trainjob-controller does.
//
//   informers (TrainJobs in the namespace or all; JobSets, indexed by their controller's uid)
//     → WorkQueue "<ns>/<name>" → Sync:
//   read    the cached TrainJob and its JobSet; the runtime snapshot, ConfigMap
//           <job>-runtime-snapshot (key `runtime`), else the live runtime it names
//   decide  resolve the TrainJob against the snapshot (api::PrepareJob), the JobSet
//           (BuildJobSet), the status (TrainJobStatusFrom); pure
//   write   the snapshot once (owned by the TrainJob: a later runtime edit does not change the
//           job); for an MPI runtime, before its JobSet, the SSH key Secret once and the
//           hostfile ConfigMap (operator/trainjob_mpi.h); for a runtime with podGroupPolicy,
//           before its JobSet, the PodGroup (again while suspended, as upstream); the JobSet once
//           (then only its suspend kept in step; made again, with a JobSetRecreated event, when
//           deleted from outside), the status subresource when it changed (Failed/DeadlineExceeded
//           once activeDeadlineSeconds has passed, and the JobSet deleted), Warning events for what
//           stops it (no runtime, a refused JobSet, a JobSet no controller has given a status for
//           30 s: JobSetNotReconciled), and a TrainJobRestarting event each time JobSet restarts
//           the whole job (a Gang TrainJob); from the TrainJob's pods (a third informer, on
//           JobSet's jobset-name label), what the engine says about them: ReplicasReady with why
//           its nodes are not running, and the first failing node on the Failed condition
//           (operator/trainjob_why.h), counting the failed nodes whose pods were deleted
//           before the TrainJob was Failed (kept as last seen); with
//           trainctl.dev/checkpoint-notice-seconds, the
//           checkpoint notice (operator/trainjob_notice.h): recorded on the TrainJob (its
//           annotation and finalizer, written before anything it announces), told to its pods
//           (their annotation), a suspend's JobSet patch and a deletion's finalizer held until
//           the pods are done or the notice ran out
//   history with --history (SetHistory): each finished TrainJob recorded once, from its stored
//           final status and its pods in the cache (a row per node, the trainer's container
//           `node`, each initializer's own), without a hold (JobSet deletes its pods), plus the
//           failed ones kept as last seen whose pods are gone; its events
//           kept from its first sync. One finished before this leader saw it run is resolved
//           from its snapshot once for its record (a ConfigMap read; no snapshot is made for it).
//
// A TrainJob whose spec.managedBy names another controller (MultiKueue) is left alone; a
// finished one only has its status kept. Start() launches informers and workers (which handle
// nothing before every cache has synced); Stop() ends them. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/manifest.h"
#include "common/clock.h"
#include "engine/plan.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/pod_summary.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "kube/work_queue.h"
#include "operator/controller.h"
#include "operator/kueue_watch.h"
#include "recording/history_recorder.h"

namespace trainctl::op {

using kube::kClusterTrainingRuntimes;
using kube::kJobSets;
using kube::kTrainingRuntimes;
using kube::kTrainJobs;

// The field manager of the operator's writes to TrainJobs and JobSets.
inline constexpr const char* kTrainJobFieldManager = "trainctl-trainjob-controller";

class TrainJobController {
 public:
  TrainJobController(kube::Client* client, const Clock* clock, std::string namespace_, int threads,
                     kube::EventRecorder* recorder);
  ~TrainJobController();

  // Kueue's objects (the v1 controller's watch; null: Kueue not watched): a suspended TrainJob
  // Kueue holds says what its Workload waits for. Set before Start().
  void SetKueue(KueueWatch* kueue);
  void Start();
  bool WaitForSync(Duration timeout);
  bool Synced() const;
  void Stop();

  // The job history (--history): finished TrainJobs are recorded there. Set before Start().
  void SetHistory(recording::HistoryRecorder* history) { history_ = history; }

  // The runtime status endpoint the operator serves (--status-server-port): each TrainJob's
  // trainer pods get its env, token and CA (operator/status_env.h; the CA from `ca`,
  // in ConfigMap <job>-tls-config made before the JobSet). Set before Start().
  struct StatusServer {
    std::string url;                  // "https://<service>.<ns>.svc:<port>"
    std::function<std::string()> ca;  // the PEM of the CA that signed its certificate
  };
  void SetStatusServer(StatusServer server) { status_server_ = std::move(server); }

  // One reconcile of one TrainJob ("<ns>/<name>"); public for tests.
  SyncResult Sync(const std::string& key);

  // The informers' caches; tests feed them as a reflector would.
  kube::ReflectorConsumer* TrainJobCache() { return &trainjobs_; }
  kube::ReflectorConsumer* JobSetCache() { return &jobsets_; }
  kube::ReflectorConsumer* PodCache() { return &pods_; }

 private:
  void Worker();
  void Warn(const nlohmann::json& trainjob, const std::string& reason, const std::string& message);
  void Record(const nlohmann::json& trainjob, const std::string& type, const std::string& reason,
              const std::string& message);
  // A Warning TrainJobRestarting on the TrainJob that owns `jobset`, which JobSet has just
  // restarted as a whole (its status.restarts grew to `restarts`).
  void Restarted(const nlohmann::json& jobset, int64_t restarts);
  // The runtime the TrainJob runs on: its snapshot, else the live runtime (from which the
  // snapshot is made now when `make_missing`).
  StatusOr<nlohmann::json> Snapshot(const nlohmann::json& trainjob, bool make_missing = true);
  // read, for a TrainJob not finished: the runtime it runs on (its snapshot, made now when
  // missing), `resolved` (the TrainJob against it) and `jobset` (the JobSet it becomes). False:
  // this sync ends here (said in an event; `result` holds the error or when to look again).
  bool Resolve(const nlohmann::json& trainjob, std::optional<api::LoadedJob>* resolved,
               nlohmann::json* jobset, SyncResult* result);
  // The TrainJob's pods in the cache, as the engine sees them.
  std::vector<engine::ReplicaObservation> ObservePods(const api::Job& job, const std::string& key);
  // The TrainJob's pods seen ending failed (a Failed phase or a container's non-zero exit) are
  // kept as last seen, until the TrainJob is finished or gone: the Job controller deletes an
  // OnFailure node's pod when its backoff runs out, before the TrainJob is Failed.
  void RememberEnded(const std::string& key,
                     const std::vector<engine::ReplicaObservation>& observed);
  // `observed` and the kept pods it lacks (those since deleted).
  std::vector<engine::ReplicaObservation> WithEnded(
      const std::string& key, std::vector<engine::ReplicaObservation> observed);
  // write: the checkpoint notice `plan` decided (operator/trainjob_notice.h): its events and
  // requeue; the notice record and finalizer on the TrainJob (a metadata patch conditional on
  // its resourceVersion; `*trainjob` becomes the version written), then the pods to tell.
  // False: the TrainJob could not be written (nothing told; `result` holds the error).
  bool WriteNotice(nlohmann::json* trainjob, const api::Job* job, const engine::Plan& plan,
                   SyncResult* result);
  // A TrainJob being deleted that holds the notice finalizer: its pods told (Deleted), the
  // finalizer released once they are done or the notice ran out (or at once when the TrainJob
  // cannot be resolved any more: nothing to tell).
  SyncResult SyncDeletion(nlohmann::json trainjob, const std::string& key);
  // write, for a resolved TrainJob: an MPI runtime's objects and its JobSet `want` (made once,
  // never past the deadline; then only its suspend kept in step with the TrainJob's, except
  // while `hold_suspend`: its pods have a checkpoint notice). Sets `jobset` (as now stored).
  // False: this sync ends here (said in an event; `result` holds the error).
  bool ApplyJobSet(const nlohmann::json& trainjob, const std::string& key, const api::Job& job,
                   const nlohmann::json& want, bool expired, bool hold_suspend,
                   std::optional<nlohmann::json>* jobset, SyncResult* result);
  // decide: the status to write, from the JobSet, the deadline, a JobSet no controller answers
  // (a Warning event) and, for a `resolved` TrainJob with a JobSet, its pods `observed` (the
  // why and the first failure; their events recorded). Sets `result`'s requeue.
  nlohmann::json DecideStatus(const nlohmann::json& trainjob, const std::string& key,
                              const std::optional<nlohmann::json>& jobset, const api::Job* resolved,
                              const std::vector<engine::ReplicaObservation>& observed,
                              std::optional<Time> deadline, Time now, SyncResult* result);
  // The PodGroup of a TrainJob whose runtime has a podGroupPolicy (operator/trainjob_pod_group.h)
  // for the JobSet `jobset`: made, or its spec set, when it differs from what this operator last
  // wrote; nothing for other TrainJobs. kFailedPrecondition: the cluster has no such API.
  Status WritePodGroup(const nlohmann::json& trainjob, const api::Job& job,
                       const nlohmann::json& jobset);
  // An MPI TrainJob's Secret (made once) and hostfile ConfigMap (made, or its data set) for
  // the JobSet `jobset` about to be made or re-applied; nothing for other TrainJobs.
  Status WriteMpiObjects(const nlohmann::json& trainjob, const api::Job& job,
                         const nlohmann::json& jobset);
  // Enqueues the record of `trainjob` (as stored) when it has finished and the history has
  // none and none queued. `resolved`: the job against its runtime, when this sync resolved it;
  // else it is resolved from its snapshot now.
  void RecordFinished(const nlohmann::json& trainjob, const api::Job* resolved,
                      const std::string& key);

  kube::Client* client_;
  const Clock* clock_;
  std::string namespace_;
  int threads_;
  kube::EventRecorder* recorder_;
  recording::HistoryRecorder* history_ = nullptr;
  std::optional<StatusServer> status_server_;
  kube::WorkQueue queue_;
  KueueWatch* kueue_ = nullptr;
  kube::Store<nlohmann::json> trainjobs_, jobsets_;
  kube::Store<kube::PodSummary> pods_;
  std::unique_ptr<kube::Reflector> trainjob_reflector_, jobset_reflector_, pod_reflector_;
  // When each TrainJob's ReplicasReady message was last written (its refresh spacing).
  std::mutex written_mu_;
  std::map<std::string, Time> message_written_;
  // Each running TrainJob's pods seen ending failed, by pod name (RememberEnded).
  std::map<std::string, std::map<std::string, engine::ReplicaObservation>> ended_;
  // Each TrainJob's PodGroup as this operator last wrote it: "<uid> <spec>".
  std::map<std::string, std::string> pod_group_written_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stopping_{false};
};

}  // namespace trainctl::op
