// The decisions of one Controller::Sync, pure (no I/O, no clock reads): what Sync read goes in,
// what it must write comes out. Sync is read → DecideSync → child writes → DecideStatus →
// status, the TTL delete, then the events and metrics (a TTL deletion only once made). Thread-safe
// (stateless).
//
// - DecideSync: the engine's plan, the API calls on the job's children (PlanChildren), the
//   history hold (a finished job without its history record keeps its pods and its TTL waits,
//   for up to kHistoryHold: the record needs their logs; a job with nothing to delete is not
//   held or looked at again), and the
//   steps around them that used to be decided inside Sync: the gang step (remove the PodGroup
//   once the job is finished or suspended, otherwise ensure it), the MPI step (ensure the
//   launcher's ConfigMap/RBAC, with the workers that are Running, while the job is active) and
//   the PyTorch HPA step (while the job is active).
// - HoldForGang: what the PodGroup write's answer means for this sync: no pods and no services
//   while the gang is not admitted (or the PodGroup could not be written), and a look again in
//   one second (PodGroups are not watched).
// - DecideStatus: after the writes, the status to store: the planned status with a
//   FailedCreatePod/FailedCreateService mark when a child write failed, written only when it
//   differs from what is stored (lastReconcileTime aside), and a change of replica counts alone
//   held back for a bounded window that grows with the job and is longer while its replicas
//   are not all running (CountCoalescing, CountWindowFor, NotReadyCountWindowFor); a new job's
//   first status held a moment for its pods' first states.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "engine/diagnosis.h"
#include "engine/plan.h"
#include "operator/decide.h"
#include "operator/gang.h"
#include "operator/mpi_v2_launcher.h"

namespace trainctl::op {

struct SyncInput {
  api::Job job;           // decoded, defaulted, validated; status prepared for the engine
  api::JobStatus stored;  // the status as stored (before PrepareStatusForEngine)
  std::vector<engine::ReplicaObservation> observed;  // expectations overlaid
  std::vector<std::string> services;                 // names of the services the job owns
  Time now{};
  // MPIJob v2beta1 whose launcher Job failed: the Failed condition's reason and message.
  std::optional<LauncherFailure> launcher_failed;
  // The job history is on (--history) and has no record of this job yet: a finished job keeps
  // its pods and is not TTL-deleted until it has one (at most kHistoryHold after it finished).
  bool hold_for_history = false;
};

// How long a finished job waits for its history record before cleanPodPolicy and the TTL go
// ahead without one.
inline constexpr Duration kHistoryHold{60000};
// How often a held job is looked at again if the recorder has not woken it.
inline constexpr Duration kHistoryRecheck{10000};

struct SyncOptions {
  bool pod_groups = false;  // a gang scheduler that uses PodGroups is configured
  ChildOptions children;
};

enum class GangStep { kNone, kEnsure, kRemove };

struct SyncPlan {
  engine::Plan plan;
  ChildActions actions;
  GangStep gang = GangStep::kNone;
  bool ensure_mpi = false;
  std::vector<std::string> mpi_running_workers;  // for the launcher's hostfile
  bool sync_hpa = false;
  // The job has finished and its final status is stored: the history should record it now.
  bool record = false;
  // A deletion (pods, the job) waits for that record: sync again once it is written.
  bool held = false;
};

// An MPIJob of v2beta1 is judged with its launcher's restart policy Never (MpiV2EngineView: the
// launcher Job retries) and, when its launcher Job failed, with that Job's reason.
SyncPlan DecideSync(const SyncInput& input, const SyncOptions& options);

// `ensured`: the PodGroup write's answer (true: the gang is held). Clears the child creations
// when held or failed; returns the error to retry with, and sets `*requeue` when held.
Status HoldForGang(const StatusOr<GangHold>& ensured, ChildActions* actions,
                   std::optional<Duration>* requeue);

// Replica counts that change while nothing else does (pods starting or finishing one by one)
// are written at most once per `window`: the first such change is held until `window` after it
// was first seen, and goes out with whatever came after it. A change of a condition, a time, the
// restart count, or a failed child write is written at once, with the counts held so far.
//
// While the job's replicas are not all running yet for one reason (ReplicasReady False with
// the same reason stored and planned: Starting, Unschedulable, …), the counts and the details
// of that condition's message (its message and update time, which the engine refreshes at
// most every kReadinessRefresh) are held `not_ready_window` instead (the larger of the two):
// under a slow scheduler or node, or a full cluster, a job's pods start minutes apart, and
// each start would otherwise cost a write. The longer the job has waited, the longer that hold
// (NotReadyHoldFor). Any other condition change (Running, ReplicasReady True, another reason)
// is written at once.
//
// A new job's first status (Created, its start time, its replicas' counts and that they are
// starting: OnlyFirstStatus) is held `first_status_window` after it was first decided, so that
// the pods just created can report their first states in the same write: a job whose pods start
// within that time is written Created, ReplicasReady and Running at once, not Created first.
// Created and the start time keep the time it was first decided. Anything else new in the
// meantime (a pod failed, a failed child write, a gang held) is written at once.
struct CountCoalescing {
  Duration window{0};               // 0: every change is written at once
  Duration not_ready_window{0};     // while not all running; 0: `window`
  std::optional<Time> held_since;   // when the change still held back was first seen
  Duration first_status_window{0};  // 0: a first status is written at once
};

// The window grows with the job: `base` (--status-count-window-ms) for every
// kReplicasPerCountWindow replicas begun, at most kMaxCountWindow (and never below `base`). A
// job's pods start about as fast as the scheduler binds them whatever its size, so a start-up
// costs a few count writes whatever the size: 2,000 replicas hold their counts 20 × `base`.
inline constexpr int32_t kReplicasPerCountWindow = 100;
inline constexpr Duration kMaxCountWindow{60000};
Duration CountWindowFor(Duration base, int32_t replicas);

// The window while not all running: kNotReadyCountWindowFactor × `base`, at most
// kMaxCountWindow, and never below CountWindowFor (30 s with the default 1-s base; 0 when
// `base` is 0).
inline constexpr int64_t kNotReadyCountWindowFactor = 30;
Duration NotReadyCountWindowFor(Duration base, int32_t replicas);

// How long a change of the not-ready details first seen at `since` is held: `window`, or as long
// as the job had already waited by then (ReplicasReady False in `stored` since its
// lastTransitionTime) when that is longer, at most kMaxNotReadyHold (never below `window`;
// 0 when `window` is 0). A job that waits for minutes has its details written at waits of
// about 30 s, 1, 2, 4, 6, … minutes, not every 30 s; a new reason is still written at once.
inline constexpr Duration kMaxNotReadyHold{120000};
Duration NotReadyHoldFor(Duration window, const api::JobStatus& stored, Time since);

struct StatusDecision {
  std::optional<api::JobStatus> write;  // nullopt: the stored status already says this (or held)
  Status error = Status::Ok();          // the child write that failed, to retry with
  std::vector<engine::Event> events;    // a new ReplicasReady reason learnt from the writes
  // When to look again: a ReplicasReady message waits for its refresh, or held counts are due.
  std::optional<Duration> requeue_after;
  std::optional<Time> held_since;  // set: a count-only change is held back since then
  // The job's first status is held (first_status_window): its Created metric waits for the
  // write, and the look again is due in the prompt lane.
  bool first_status_held = false;
};

// `pods`/`services`: the outcome of the child writes (the MPI step's error counts as pods').
// `gang_held`: why the gang holds the pods back ("" when it does not). A failed pod create
// (QuotaExceeded when a ResourceQuota refused it, else FailedCreatePod) or a held gang
// (GangNotAdmitted) becomes the job's ReplicasReady reason. `coalescing`: see CountCoalescing.
// `queue_why`: what Kueue says of a suspended job it holds (operator/kueue_workload.h), the
// ReplicasReady reason when none of the above is.
StatusDecision DecideStatus(const api::Job& job, const api::JobStatus& planned,
                            const api::JobStatus& stored, const Status& pods,
                            const Status& services, Time now, const std::string& gang_held = "",
                            const CountCoalescing& coalescing = {},
                            const std::optional<engine::Readiness>& queue_why = std::nullopt);

// A TTL deletion that did not take effect (the job was gone already: an earlier pass deleted it
// and its watch event had not arrived) is not reported again: drops its event and its
// jobs_deleted count from a pass's metrics and events.
void DropUnmadeDeletion(std::vector<engine::Metric>* metrics, std::vector<engine::Event>* events);

// Workers of an MPIJob that are Running and not being deleted (the launcher's hosts).
std::vector<std::string> RunningMpiWorkers(const std::vector<engine::ReplicaObservation>& observed);

}  // namespace trainctl::op
