// The operator's own decisions around the decision core, all pure (no I/O, no clock reads):
//
// - PlanChildren: from the engine's plan to the API calls on a job's children: pods to create
//   and delete, and the per-replica headless services (the engine plans replicas; services
//   follow them: created for every index below `replicas`, deleted with their pod when the job
//   finishes per cleanPodPolicy, all deleted while suspended, and deleted on scale-down).
// - The job's surface for problems the engine does not see: a job that fails validation gets
//   Created=False with reason <Kind>FailedValidation and the field errors; a job whose pods or
//   services cannot be created gets Created=False with reason FailedCreatePod/FailedCreateService
//   and the API's message. Both are undone once the problem is gone (without counting the job as
//   created twice). Upstream leaves such jobs with no condition at all (kubeflow/trainer#2351).
//
// Thread-safe (stateless).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "engine/plan.h"

namespace trainctl::op {

// A pod to delete: the incarnation observed (uid, when known), not whatever has its name now.
struct PodDelete {
  std::string name;
  std::string uid;
  bool operator==(const PodDelete&) const = default;
};

struct ChildActions {
  std::vector<engine::ReplicaRef> create_pods;  // names filled in
  std::vector<PodDelete> delete_pods;
  std::vector<engine::ReplicaRef> create_services;
  std::vector<std::string> delete_services;
  bool launcher_held = false;  // MPIJob: the launcher waits for its workers to be Running
  // MPIJob v2beta1: create the launcher's batch Job (its pod is the Job's; never in
  // create_pods or delete_pods). Held (launcher_held) under launcherCreationPolicy
  // WaitForWorkersReady until every worker runs; created at once under AtStartup.
  bool create_launcher_job = false;
};

// One step of creating a job's children: a replica's service (when it is to be created) and
// its pod (when it is), sent together. See PairCreates.
struct ChildCreate {
  std::optional<engine::ReplicaRef> service;
  std::optional<engine::ReplicaRef> pod;
  bool operator==(const ChildCreate&) const = default;
};

// The creates of `actions` in the order they are made: services whose pod is not created now
// come first, each alone; then each pod in plan order, paired with its own service (same type
// and index) when that is created too. A pod's own service is there long before it runs, and
// the scheduler gets a job's first pod with one service rather than after all of them.
std::vector<ChildCreate> PairCreates(const ChildActions& actions);

struct ChildOptions {
  // MPIJob: create the launcher only once every worker pod is Running (or has already ended);
  // upstream creates it at once, and mpirun then fails against workers that are not up yet.
  bool mpi_launcher_waits_for_workers = true;
};

// `services`: names of the services the job owns now; `observed`: its pods as the engine saw
// them (for the MPI launcher's wait).
ChildActions PlanChildren(const api::Job& job, const engine::Plan& plan,
                          const std::vector<std::string>& services,
                          const std::vector<engine::ReplicaObservation>& observed = {},
                          const ChildOptions& options = {});

// Prepares the stored status for the engine: drops a FailedValidation mark (the job is valid
// now) and turns a creation-failure mark back into Created=True.
void PrepareStatusForEngine(api::Job* job);

// Marks `status` as unable to create children (`reason` FailedCreatePod|FailedCreateService).
void MarkCreateFailure(const api::Job& job, api::JobStatus* status, const std::string& reason,
                       const std::string& message, Time now);

// The status (JSON) to write for a stored job that cannot be decoded or validated; nullopt when
// the stored status already says exactly this. `kind` is the job's kind name.
std::optional<nlohmann::json> InvalidJobStatus(const nlohmann::json& object,
                                               const std::string& kind, const std::string& message,
                                               Time now);

// Equal except for lastReconcileTime.
bool SameStatus(api::JobStatus a, api::JobStatus b);

// Equal except for lastReconcileTime and the replica counts active/succeeded/failed: the change
// from `b` to `a` is pods starting or finishing, nothing a condition, a time or the restart
// count (backoffLimit's ledger) records.
bool OnlyReplicaCountsDiffer(api::JobStatus a, api::JobStatus b);

// Both say the replicas are not all running yet for the same reason (ReplicasReady False:
// Starting, Unschedulable, …; not Suspended or WaitingForAdmission, whose replicas are
// stopping), and differ only in the replica counts and in that condition's message and update
// time: more or fewer of them are at that step since `b`, and nothing new (another reason,
// another condition) happened.
bool OnlyNotReadyDetailsDiffer(api::JobStatus a, api::JobStatus b);

// `a` is a job's first status over `b`, which has no Created condition yet: all `a` adds is
// Created, the start time, the replica statuses and ReplicasReady False Starting (a reason with
// no event of its own), or, for a job created suspended, Suspended True (ReplicasReady False
// Suspended, Running False). Nothing else happened to the job: no other condition (Running,
// a problem such as Unschedulable, a failure, …) is new. (A client that creates a job
// suspended and at once updates it with the object its create returned, as mpi-operator's e2e
// suite does, then does not meet a Conflict from a status written in between.)
bool OnlyFirstStatus(api::JobStatus a, api::JobStatus b);

}  // namespace trainctl::op
