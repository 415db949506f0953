// HpaWriter: keeps an elastic PyTorchJob's HorizontalPodAutoscaler as hpa.h decides — created,
// updated when the job's elasticPolicy changes, deleted while the job is suspended. What was
// last made true is remembered per job uid, so a steady job costs no request and a job without
// `elasticPolicy.metrics` costs none at all. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "api/job.h"
#include "common/status.h"
#include "kube/client.h"
#include "operator/metrics.h"

namespace trainctl::op {

inline const kube::Resource kHorizontalPodAutoscalers{"autoscaling", "v2",
                                                      "horizontalpodautoscalers"};

class HpaWriter {
 public:
  HpaWriter(kube::Client* client, Metrics* metrics) : client_(client), metrics_(metrics) {}

  Status Sync(const api::Job& job);
  void Forget(const std::string& uid);

 private:
  void Count(const std::string& verb, bool ok);

  kube::Client* client_;
  Metrics* metrics_;
  std::mutex mu_;
  std::map<std::string, std::string> done_;  // uid → the desired spec made true, or "absent"
};

}  // namespace trainctl::op
