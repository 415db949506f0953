// The decisions of one Controller::Sync, pure (no I/O, no clock reads): what Sync read goes in,
// what it must write comes out. Sync is read → DecideSync → child writes → DecideStatus →
// status, events, metrics, TTL delete. Thread-safe (stateless).
//
// - DecideSync: the engine's plan, the API calls on the job's children (PlanChildren), and the
//   steps around them that used to be decided inside Sync: the gang step (remove the PodGroup
//   once the job is finished or suspended, otherwise ensure it), the MPI step (ensure the
//   launcher's ConfigMap/RBAC, with the workers that are Running, while the job is active) and
//   the PyTorch HPA step (while the job is active).
// - HoldForGang: what the PodGroup write's answer means for this sync: no pods and no services
//   while the gang is not admitted (or the PodGroup could not be written), and a look again in
//   one second (PodGroups are not watched).
// - DecideStatus: after the writes, the status to store: the planned status with a
//   FailedCreatePod/FailedCreateService mark when a child write failed, written only when it
//   differs from what is stored (lastReconcileTime aside).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "engine/plan.h"
#include "operator/decide.h"
#include "operator/gang.h"

namespace trainctl::op {

struct SyncInput {
  api::Job job;               // decoded, defaulted, validated; status prepared for the engine
  api::JobStatus stored;      // the status as stored (before PrepareStatusForEngine)
  std::vector<engine::ReplicaObservation> observed;  // expectations overlaid
  std::vector<std::string> services;                 // names of the services the job owns
  Time now{};
};

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
};

SyncPlan DecideSync(const SyncInput& input, const SyncOptions& options);

// `ensured`: the PodGroup write's answer (true: the gang is held). Clears the child creations
// when held or failed; returns the error to retry with, and sets `*requeue` when held.
Status HoldForGang(const StatusOr<GangHold>& ensured, ChildActions* actions,
                   std::optional<Duration>* requeue);

struct StatusDecision {
  std::optional<api::JobStatus> write;  // nullopt: the stored status already says this
  Status error = Status::Ok();          // the child write that failed, to retry with
  std::vector<engine::Event> events;    // a new ReplicasReady reason learnt from the writes
  std::optional<Duration> requeue_after;  // a ReplicasReady message waits for its refresh
};

// `pods`/`services`: the outcome of the child writes (the MPI step's error counts as pods').
// `gang_held`: why the gang holds the pods back ("" when it does not). A failed pod create
// (QuotaExceeded when a ResourceQuota refused it, else FailedCreatePod) or a held gang
// (GangNotAdmitted) becomes the job's ReplicasReady reason.
StatusDecision DecideStatus(const api::Job& job, const api::JobStatus& planned,
                            const api::JobStatus& stored, const Status& pods,
                            const Status& services, Time now, const std::string& gang_held = "");

// Workers of an MPIJob that are Running and not being deleted (the launcher's hosts).
std::vector<std::string> RunningMpiWorkers(const std::vector<engine::ReplicaObservation>& observed);

}  // namespace trainctl::op
