#include "operator/manager.h"

#include <memory>
#include <thread>

#include "operator/log.h"

namespace trainctl::op {

bool Manager::StartAll(bool leader_only) {
  for (const Runnable& r : runnables_) {
    if (r.leader_only != leader_only) continue;
    Status st = r.start ? r.start() : Status::Ok();
    if (!st.ok()) {
      LogError("{}: {}", r.name, st.message());
      return false;
    }
    started_.push_back(&r);
  }
  return true;
}

void Manager::StopAll(bool leader_only) {
  for (auto it = started_.rbegin(); it != started_.rend(); ++it)
    if ((*it)->leader_only == leader_only && (*it)->stop) (*it)->stop();
}

int Manager::Run(std::atomic<bool>* stop) {
  if (!StartAll(/*leader_only=*/false)) {
    StopAll(false);
    return 2;
  }
  std::unique_ptr<kube::LeaderElector> elector;
  std::thread election;
  std::atomic<bool> lost{false};
  if (election_) {
    const kube::LeaderElectionConfig& lec = election_->config;
    kube::LeaderElector::Callbacks callbacks;
    callbacks.on_started_leading = [&] {
      LogInfo("became leader ({}/{})", lec.namespace_, lec.name);
      leading_ = true;
    };
    callbacks.on_stopped_leading = [&] {
      if (!*stop) lost = true;
      *stop = true;
    };
    callbacks.on_new_leader = [](const std::string& id) { LogInfo("the leader is {}", id); };
    elector = std::make_unique<kube::LeaderElector>(election_->client, clock_, lec, callbacks);
    election = std::thread([&] { elector->Run(); });
    LogInfo("waiting to lead {}/{} as {}", lec.namespace_, lec.name, lec.identity);
    while (!leading_ && !*stop) clock_->SleepFor(Duration(100));
  }
  bool failed = !*stop && !StartAll(/*leader_only=*/true);
  while (!*stop && !failed) clock_->SleepFor(Duration(100));
  LogInfo("stopping");
  StopAll(true);
  if (elector) {
    elector->Stop();
    if (election.joinable()) election.join();
  }
  // What the other parts still hold (queued events) is written after the lease is released:
  // a successor need not wait for it.
  StopAll(false);
  if (failed) return 2;
  if (lost) {
    LogError("lost the leader lease");
    return 1;
  }
  return 0;
}

}  // namespace trainctl::op
