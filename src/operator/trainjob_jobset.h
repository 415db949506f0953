// What the TrainJob reconciler decides, as Kubeflow Trainer v2.3.0's trainjob-controller does,
// without I/O: the JobSet (jobset.x-k8s.io/v1alpha2) a resolved TrainJob becomes, and the
// TrainJob status read back from that JobSet.
//
// BuildJobSet(job) — `job` resolved against its runtime (api/trainjob_resolve.h):
//   metadata   name and namespace of the TrainJob; labels and annotations of the runtime's
//              template metadata, then of each runtimePatch's template metadata in order; a
//              controller owner reference to the TrainJob (blockOwnerDeletion)
//   spec       the runtime's JobSet template spec, every field kept (network, successPolicy,
//              failurePolicy, startupPolicy, volumeClaimPolicies, …), and per replicated job:
//                template.metadata   the runtimePatches' job-template labels and annotations
//                template.spec.template   the resolved group's pod template (overrides,
//                                    patches, initializers applied) with its restartPolicy
//                parallelism, completions   the trainer step (and an MPI runtime's `node`
//                                    job): the group's node count; any other job: its own
//                                    parallelism (default 1)
//                replicas            1 for an ancestor step (trainer, initializers)
//              the trainer step's `node` container gets the policy's env (KindPlugin::EnvFor
//              over JobSetEndpoints, upserted by name, the rank as a fieldRef) and container
//              port 29500 — torch, jax and xgboost, only when the TrainJob has a `trainer`
//              section, as upstream; torch's envInjection targets get the torch env too;
//              mpi: the launcher's OMPI_* env (trainer section or not, no port) and the SSH
//              and hostfile volumes (operator/trainjob_mpi.h); with a checkpoint-notice
//              policy, every pod the notice volume (operator/pod_builder.h AddCheckpointNotice);
//              with a runtime podGroupPolicy, every pod the PodGroup's label or annotation
//              (operator/trainjob_pod_group.h);
//              `suspend` is the TrainJob's; with trainctl.dev/restart-scope: Gang, JobSet's
//              failurePolicy.maxRestarts is the job's backoff limit (unless the runtime has a
//              failurePolicy), every Job's backoffLimit 0 and its pods' restartPolicy Never,
//              so one failed pod restarts every node together, counted once; every container
//              gets TRAINCTL_RESTART_ATTEMPT from JobSet's restart-attempt pod label; every
//              container without a terminationMessagePolicy gets FallbackToLogsOnError (a
//              failed node's last output for the first failure's text)
//   errors     kFailedPrecondition for an unresolved job and for mlPolicy flux (not served
//              on a cluster yet); kInvalid for an envInjection target that is missing
//
// TrainJobStatusFrom(trainjob, jobset, now): the TrainJob's status, starting from its own:
//   Suspended  True/Suspended/"TrainJob is suspended" while spec.suspend; False/Resumed/
//              "TrainJob is resumed" once spec.suspend is false after a True
//   Complete   the JobSet's Completed=True, renamed; Failed its Failed=True (reason, message,
//              lastTransitionTime and observedGeneration the JobSet's)
//   jobsStatus the JobSet's status.replicatedJobsStatus, field for field (absent when empty)
// A condition's lastTransitionTime moves only when its status changes (metav1.Condition's
// rule; `now` when the source has none); other conditions and fields are kept, and so is
// everything when the JobSet is gone (a finished TrainJob whose JobSet was deleted keeps its
// status). At most 8 conditions (the CRD's limit; the oldest others go first). Null when the
// status would be empty (the CRD wants at least one property: nothing to write).
//
// TrainJobDeadline(trainjob): when activeDeadlineSeconds runs out, counted from the TrainJob's
// creation or from its last resume (the Suspended condition's False transition), as upstream;
// none without a deadline, while suspended, or once Complete or Failed. WithDeadlineExceeded
// adds upstream's Failed condition for it (DeadlineExceeded, "TrainJob exceeded its active
// deadline").
//
// JobSetUnanswered(jobset, now, grace): the JobSet has had no status at all for `grace` since
// it was made — no JobSet controller is reconciling it.
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/job.h"
#include "api/replica_env.h"
#include "common/clock.h"
#include "common/status.h"

namespace trainctl::op {

inline constexpr const char* kJobSetApiVersion = "jobset.x-k8s.io/v1alpha2";
// The label JobSet gives each pod with the JobSet's restart count.
inline constexpr const char* kJobSetRestartAttempt = "jobset.sigs.k8s.io/restart-attempt";

// Where a JobSet's pods are reached: the pod of node `i` of replicated job `type` (one Job
// per replicated job, an ancestor's replicas being 1) is "<job>-<type>-0-<i>.<job>" (the pod's
// hostname and the JobSet's subdomain, its name); ports are as declared; every node of a group
// shares one template, so a node reads its rank from its pod.
class JobSetEndpoints final : public api::Endpoints {
 public:
  explicit JobSetEndpoints(std::string job_name) : job_name_(std::move(job_name)) {}
  std::string Host(const std::string& type, int index) const override;
  std::string ServiceHost(const std::string& type, int index) const override {
    return Host(type, index);
  }
  int Port(const std::string&, int, int declared) const override { return declared; }
  bool IndexFromPod() const override { return true; }

 private:
  std::string job_name_;
};

// The controller owner reference to TrainJob `name` (uid `uid`) that each object the operator
// makes for it carries (blockOwnerDeletion: deleted with it, after its finalizers).
nlohmann::json TrainJobOwnerReference(const std::string& name, const std::string& uid);

// The JobSet for a resolved TrainJob (job.runtime set); `trainjob_uid` is its owner's uid.
StatusOr<nlohmann::json> BuildJobSet(const api::Job& job, const std::string& trainjob_uid);

// The status to write for `trainjob` (the whole object) given its JobSet (null: none).
nlohmann::json TrainJobStatusFrom(const nlohmann::json& trainjob, const nlohmann::json* jobset,
                                  Time now);

std::optional<Time> TrainJobDeadline(const nlohmann::json& trainjob);
nlohmann::json WithDeadlineExceeded(nlohmann::json status, Time now);
bool JobSetUnanswered(const nlohmann::json& jobset, Time now, Duration grace);

}  // namespace trainctl::op
