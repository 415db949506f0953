// ChildWriter: carries out ChildActions against the API server for one job: deletes first, then
// creates each replica's service and pod (PairCreates: the two sent at once) in slow-start
// batches (1, 2, 4, … replicas in parallel, as the Job controller does) so a job whose template
// the API rejects costs one failed request, not N. A batch with a failed pod stops further
// creates; a failed service stops further services. Every write is announced to Expectations first
// and cancelled when it fails; every outcome is recorded as upstream's event
// (SuccessfulCreatePod "Created pod: <name>", FailedCreatePod "Error creating: <err>", …).
//
// Thread-safe; the client and recorder it uses are shared.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "operator/decide.h"
#include "operator/expectations.h"
#include "operator/metrics.h"
#include "operator/pod_builder.h"

namespace trainctl::op {

struct WriteOutcome {
  Status pods = Status::Ok();      // first pod creation/deletion error
  Status services = Status::Ok();  // first service creation/deletion error
  int created = 0, deleted = 0;
};

// Tells pods of namespace `ns` a checkpoint notice (api/checkpoint_notice.h): a merge patch of
// the pod annotation ("" removes it) that also removes an earlier done report. A pod gone
// meanwhile is skipped; returns the first other error (the next sync tells it again). Used for
// the v1 kinds' pods (ChildWriter::TellNotice) and for a TrainJob's JobSet pods. `metrics` may
// be null.
Status TellPodsNotice(kube::Client* client, Metrics* metrics, const std::string& ns,
                      const std::vector<engine::ReplicaRef>& pods, const std::string& notice);

// The conditional merge patch (the version decided on: `metadata`'s resourceVersion) that
// records a plan on its job: a gang restart's next attempt, the checkpoint notice ("" removes
// it) and the notice finalizer (the whole list, from that version). Used by both controllers.
nlohmann::json JobRecordPatch(const nlohmann::json& metadata, const engine::Plan& plan);

class ChildWriter {
 public:
  ChildWriter(kube::Client* client, kube::EventRecorder* recorder, Expectations* expectations,
              Metrics* metrics, const Clock* clock, PodSettings settings,
              std::string cluster_domain);

  WriteOutcome Apply(const std::string& job_key, const api::Job& job, const ChildActions& actions);

  // Tells these pods of the job the checkpoint notice (TellPodsNotice).
  Status TellNotice(const api::Job& job, const std::vector<engine::ReplicaRef>& pods,
                    const std::string& notice);

 private:
  void Event(const api::Job& job, const std::string& type, const std::string& reason,
             const std::string& message);
  // Runs `create(i)` for i in [0, n) in slow-start batches of 1, 2, 4, … up to `max_batch`;
  // returns the first error.
  Status SlowStart(size_t n, size_t max_batch, const std::function<Status(size_t)>& create);
  Status CreatePod(const std::string& job_key, const api::Job& job, const engine::ReplicaRef& ref);
  Status CreateService(const std::string& job_key, const api::Job& job,
                       const engine::ReplicaRef& ref);

  kube::Client* client_;
  kube::EventRecorder* recorder_;
  Expectations* expectations_;
  Metrics* metrics_;
  const Clock* clock_;
  // With the status endpoint: the namespace's CA ConfigMap, made (or its CA brought up to
  // date) once per namespace in this process, before the first pod there.
  Status EnsureStatusCa(const std::string& ns);

  PodSettings settings_;
  std::string cluster_domain_;
  std::mutex ca_mu_;
  std::set<std::string> ca_namespaces_;  // under ca_mu_
};

}  // namespace trainctl::op
