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
// Made with the v1 controller, which starts it with its own informers when Kueue's CRDs are
// served at the operator's start; otherwise the composition root starts it once they are (Kueue
// installed after the operator: it looks every 30 s). Until it is started, Why() says nothing.
// Listeners are added before Start(); everything else is thread-safe.
#pragma once

#include <atomic>
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
  void Start();  // once; later calls do nothing
  bool started() const { return started_.load(); }
  bool Synced() const;
  bool WaitForSync(Duration timeout);
  void Stop();
  // The informers, once started (none before).
  std::vector<const kube::Reflector*> Reflectors() const;

  // nullopt when Kueue does not hold the job (operator/kueue_workload.h).
  std::optional<engine::Readiness> Why(const api::Job& job, const std::string& uid,
                                       bool suspended) const;

  // The caches; unit tests feed them as a reflector would, after TestOnlyWatched() (Why()
  // answers only for a watch that was started).
  void TestOnlyWatched() { started_ = true; }
  kube::ReflectorConsumer* WorkloadCache() { return &workloads_; }
  kube::ReflectorConsumer* LocalQueueCache() { return &local_queues_; }

 private:
  void Notify(const kube::Uid& owner) const;

  std::atomic<bool> started_{false};
  std::vector<std::function<void(const kube::Uid&)>> listeners_;
  kube::Store<KueueWorkloadSummary> workloads_;
  kube::Store<LocalQueueSummary> local_queues_;
  std::unique_ptr<kube::Reflector> workload_reflector_, local_queue_reflector_;
};

}  // namespace trainctl::op
