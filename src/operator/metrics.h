// Metrics: the operator's Prometheus counters and gauges, rendered in the text exposition format
// (version 0.0.4) for GET /metrics.
//
// Job counters keep upstream's names and labels (training_operator_jobs_{created,deleted,
// successful,failed,restarted}_total{job_namespace,framework}); the decision core reports each
// transition once, so a counter moves once per event, not once per reconcile (upstream #2408).
// Reconcile and work-queue series are named after controller-runtime's where they mean the
// same. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/plan.h"

namespace trainctl::op {

class Metrics {
 public:
  Metrics();

  void CountJob(engine::Metric metric, const std::string& ns, const std::string& framework);
  // controller_runtime_reconcile_total{controller,result} with result success|error|requeue.
  void CountReconcile(const std::string& controller, const std::string& result);
  void CountRequest(const std::string& verb, const std::string& resource, bool ok);
  // A gauge read when rendering (e.g. the work-queue depth).
  void AddGauge(const std::string& name, const std::string& help, std::function<double()> read);

  double Value(const std::string& name, const std::map<std::string, std::string>& labels) const;
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    std::string type;
    std::map<std::map<std::string, std::string>, double> series;
  };
  void Inc(const std::string& name, std::map<std::string, std::string> labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // guarded by mu_
  std::vector<std::pair<std::string, std::pair<std::string, std::function<double()>>>> gauges_;
};

const char* MetricName(engine::Metric metric);

}  // namespace trainctl::op
