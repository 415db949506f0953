// Resolving a TrainJob against its runtime: the runtime's JobSet template becomes the job's
// replica groups (one api::ReplicaSpec per replicated job, in the runtime's order), so the
// engine plans a TrainJob as it plans a v1 job.
//
//   group size      the trainer step: spec.trainer.numNodes, else mlPolicy.numNodes (an MPI
//                   runtime's trainer step is its launcher: its template's count); an MPI
//                   runtime's `node` job: the nodes, minus one under runLauncherAsNode (at
//                   least 1);
//                   an initializer: 1; any other job: replicas × parallelism
//   pod template    the replicated job's template, then the runtimePatches in order, then the
//                   TrainJob's trainer (image, command, args, env, resourcesPerNode) on the
//                   trainer step's `node` container and its initializers (STORAGE_URI, env,
//                   secretRef) on theirs, as upstream's plugins apply them
//   restart policy  the pod template's, else JobSet's default OnFailure
//   dependsOn       the replicated job's dependsOn (Ready or Complete), judged by the engine
//   success         the template's successPolicy
//
// Checks what only the pair can tell, as upstream's TrainJob webhook does, with field paths of
// the TrainJob: an initializer the runtime has no step for, reserved env names of the runtime's
// policy, runtimePatches naming jobs or containers the runtime lacks, or setting env of a
// container the TrainJob's own sections own, a numProcPerNode the policy cannot take.
// Pure; errors are kInvalid (`TrainJob "x" is invalid: [...]`).
#pragma once

#include "api/job.h"
#include "api/trainer_v2_types.h"
#include "common/status.h"

namespace trainctl::api {

// Fills job->replica_specs, group_order, trainer_group, success_groups/any, the backoff limit
// and job->runtime from `runtime`; an MPI runtime also fills mpi-operator's fields
// (slots_per_worker: numProcPerNode, else the runtime's, else the GPUs per node when that is 1;
// run_launcher_as_worker: runLauncherAsNode; ssh_auth_mount_path; mpi_implementation). `job` is a
// decoded TrainJob (job->train_job set).
Status ResolveTrainJob(const TrainingRuntime& runtime, Job* job);

// The processes per node torch starts on a trainer node (PET_NPROC_PER_NODE): numProcPerNode
// when set; "auto" when the node container asks for a GPU; else its CPU request (or limit),
// rounded up, at least 1.
std::string TorchProcsPerNode(const Job& job);

// The labels and annotations a TrainJob's JobSet carries (upstream's propagated metadata): the
// runtime template's metadata, then each runtimePatch's template metadata, in order, merged
// into `labels` and `annotations` (objects; entries already there are overwritten). `job` is
// resolved (job.runtime set); nothing is merged otherwise.
void TrainJobTemplateMetadata(const Job& job, nlohmann::json* labels, nlohmann::json* annotations);

// GPUs the trainer's node container asks for (any resource whose name has "gpu"), 0 if none.
int TrainerGpus(const Job& job);

}  // namespace trainctl::api
