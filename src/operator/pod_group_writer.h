// PodGroupWriter: keeps a job's PodGroup as gang.h decides while the job runs — created when
// missing, updated in place when the computed spec changes (e.g. minAvailable edited) — and
// deletes it when the job has finished or is suspended (events JobTerminated and
// SuccessfulDeletePodGroup / FailedDeletePodGroup, as upstream). Reports whether Volcano still
// holds the job's pods back. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "api/job.h"
#include "common/status.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "operator/gang.h"
#include "operator/metrics.h"

namespace trainctl::op {

class PodGroupWriter {
 public:
  PodGroupWriter(kube::Client* client, kube::EventRecorder* recorder, Metrics* metrics,
                 GangConfig gang)
      : client_(client), recorder_(recorder), metrics_(metrics), gang_(std::move(gang)) {}

  // True while Volcano holds the pods back (PodGroup phase empty or Pending).
  StatusOr<GangHold> Ensure(const api::Job& job);
  Status Remove(const api::Job& job);
  void Forget(const std::string& uid);

 private:
  void Count(const std::string& verb, bool ok);
  void Event(const api::Job& job, const std::string& type, const std::string& reason,
             const std::string& message);

  kube::Client* client_;
  kube::EventRecorder* recorder_;
  Metrics* metrics_;
  GangConfig gang_;
  std::mutex mu_;
  std::map<std::string, std::string> written_;  // uid → spec last written; "" once removed
};

}  // namespace trainctl::op
