// KueueWatch: Kueue's Workloads and LocalQueues as the operator watches them, for the why of the
// jobs Kueue holds, shared by the v1 controller and the TrainJob controller (one watch each, not
// one per controller). Made when Kueue's CRDs are served at the operator's start.
//
//   informers (Workloads, indexed by their controller owner's uid; LocalQueues by ns/name)
//     → listeners, called with a Workload's owner uid when what its job's why says may have
//       changed (operator/kueue_workload.h: WorkloadWhyChanged); each controller enqueues the
//       jobs it knows and ignores the others
//   Why(job, uid, suspended): the ReplicasReady of a job Kueue holds, from the caches (pure
//     over them: KueueReadiness)
//
// Its informers are started, synced and stopped by its owner (the v1 controller, with its own
// child informers: Reflectors()). Listeners are added before they start; everything else is
// thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "engine/diagnosis.h"
#include "kube/client.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "operator/kueue_workload.h"

namespace trainctl::op {

class KueueWatch {
 public:
  KueueWatch(kube::Client* client, const std::string& namespace_);

  void AddListener(std::function<void(const kube::Uid& owner)> listener);
  std::vector<kube::Reflector*> Reflectors();

  // nullopt when Kueue does not hold the job (operator/kueue_workload.h).
  std::optional<engine::Readiness> Why(const api::Job& job, const std::string& uid,
                                       bool suspended) const;

  // The caches; unit tests feed them as a reflector would.
  kube::ReflectorConsumer* WorkloadCache() { return &workloads_; }
  kube::ReflectorConsumer* LocalQueueCache() { return &local_queues_; }

 private:
  void Notify(const kube::Uid& owner) const;

  std::vector<std::function<void(const kube::Uid&)>> listeners_;
  kube::Store<KueueWorkloadSummary> workloads_;
  kube::Store<LocalQueueSummary> local_queues_;
  std::unique_ptr<kube::Reflector> workload_reflector_, local_queue_reflector_;
};

}  // namespace trainctl::op
