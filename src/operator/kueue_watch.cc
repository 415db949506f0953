#include "operator/kueue_watch.h"

#include <utility>

namespace trainctl::op {

namespace {

constexpr const char* kOwnerIndex = "owner";

}  // namespace

KueueWatch::KueueWatch(kube::Client* client, const std::string& namespace_)
    : workloads_(ProjectKueueWorkload), local_queues_(ProjectLocalQueue) {
  workloads_.AddIndexer(kOwnerIndex, [](const KueueWorkloadSummary& w) {
    return w.owner_uid != kube::Uid{} ? std::vector<std::string>{kube::FormatUid(w.owner_uid)}
                                      : std::vector<std::string>{};
  });
  workloads_.SetHandlers({
      [this](const std::string&, const KueueWorkloadSummary& w) { Notify(w.owner_uid); },
      [this](const std::string&, const KueueWorkloadSummary& o, const KueueWorkloadSummary& n) {
        if (WorkloadWhyChanged(o, n)) Notify(n.owner_uid);
        if (o.owner_uid != n.owner_uid) Notify(o.owner_uid);
      },
      [this](const std::string&, const KueueWorkloadSummary& w) { Notify(w.owner_uid); },
  });
  kube::ReflectorOptions options;
  options.namespace_ = namespace_;
  workload_reflector_ =
      std::make_unique<kube::Reflector>(client, kKueueWorkloads, options, &workloads_);
  local_queue_reflector_ =
      std::make_unique<kube::Reflector>(client, kKueueLocalQueues, options, &local_queues_);
}

void KueueWatch::AddListener(std::function<void(const kube::Uid&)> listener) {
  listeners_.push_back(std::move(listener));
}

void KueueWatch::Notify(const kube::Uid& owner) const {
  if (owner == kube::Uid{}) return;
  for (const auto& listener : listeners_) listener(owner);
}

void KueueWatch::Start() {
  if (started_.exchange(true)) return;
  workload_reflector_->Start();
  local_queue_reflector_->Start();
}

bool KueueWatch::Synced() const {
  return started_.load() && workload_reflector_->HasSynced() && local_queue_reflector_->HasSynced();
}

bool KueueWatch::WaitForSync(Duration timeout) {
  return started_.load() && workload_reflector_->WaitForSync(timeout) &&
         local_queue_reflector_->WaitForSync(timeout);
}

void KueueWatch::Stop() {
  workload_reflector_->Stop();
  local_queue_reflector_->Stop();
}

std::vector<const kube::Reflector*> KueueWatch::Reflectors() const {
  if (!started_.load()) return {};
  return {workload_reflector_.get(), local_queue_reflector_.get()};
}

std::optional<engine::Readiness> KueueWatch::Why(const api::Job& job, const std::string& uid,
                                                 bool suspended) const {
  if (!started_.load()) return std::nullopt;  // not watched (yet): the engine's own words
  std::optional<KueueWorkloadSummary> workload;
  workloads_.VisitIndex(kOwnerIndex, uid, [&workload](const KueueWorkloadSummary& w) {
    if (!workload || (workload->finished.is_true && !w.finished.is_true)) workload = w;
  });
  const KueueWorkloadSummary* found = workload ? &*workload : nullptr;
  std::string cluster_queue;
  if (std::string queue = KueueQueueOf(job, found); !queue.empty())
    if (std::optional<LocalQueueSummary> lq = local_queues_.Get(job.namespace_ + "/" + queue))
      cluster_queue = lq->cluster_queue;
  return KueueReadiness(job, suspended, found, cluster_queue);
}

}  // namespace trainctl::op
