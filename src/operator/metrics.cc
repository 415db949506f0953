#include "operator/metrics.h"

#include <fmt/format.h>

namespace trainctl::op {

const char* MetricName(engine::Metric metric) {
  switch (metric) {
    case engine::Metric::kJobCreated:
      return "training_operator_jobs_created_total";
    case engine::Metric::kJobDeleted:
      return "training_operator_jobs_deleted_total";
    case engine::Metric::kJobSucceeded:
      return "training_operator_jobs_successful_total";
    case engine::Metric::kJobFailed:
      return "training_operator_jobs_failed_total";
    case engine::Metric::kJobRestarted:
      return "training_operator_jobs_restarted_total";
  }
  return "training_operator_unknown_total";
}

Metrics::Metrics() {
  const std::pair<engine::Metric, const char*> jobs[] = {
      {engine::Metric::kJobCreated, "Counts number of jobs created"},
      {engine::Metric::kJobDeleted, "Counts number of jobs deleted"},
      {engine::Metric::kJobSucceeded, "Counts number of jobs successfully finished"},
      {engine::Metric::kJobFailed, "Counts number of jobs failed"},
      {engine::Metric::kJobRestarted, "Counts number of jobs restarted"},
  };
  for (const auto& [metric, help] : jobs) families_[MetricName(metric)] = {help, "counter", {}};
  families_["controller_runtime_reconcile_total"] = {
      "Total number of reconciliations per controller", "counter", {}};
  families_["trainctl_api_requests_total"] = {
      "API requests the operator sent, by verb, resource and outcome", "counter", {}};
}

void Metrics::Inc(const std::string& name, std::map<std::string, std::string> labels) {
  std::lock_guard<std::mutex> lock(mu_);
  families_[name].series[std::move(labels)] += 1;
}

void Metrics::CountJob(engine::Metric metric, const std::string& ns, const std::string& framework) {
  Inc(MetricName(metric), {{"job_namespace", ns}, {"framework", framework}});
}

void Metrics::CountReconcile(const std::string& controller, const std::string& result) {
  Inc("controller_runtime_reconcile_total", {{"controller", controller}, {"result", result}});
}

void Metrics::CountRequest(const std::string& verb, const std::string& resource, bool ok) {
  Inc("trainctl_api_requests_total",
      {{"verb", verb}, {"resource", resource}, {"result", ok ? "ok" : "error"}});
}

void Metrics::AddGauge(const std::string& name, const std::string& help,
                       std::function<double()> read) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_.push_back({name, {help, std::move(read)}});
}

double Metrics::Value(const std::string& name,
                      const std::map<std::string, std::string>& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(labels);
  return s == f->second.series.end() ? 0 : s->second;
}

namespace {
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, family.help, name, family.type);
    for (const auto& [labels, value] : family.series) {
      std::string l;
      for (const auto& [k, v] : labels)
        l += fmt::format("{}{}=\"{}\"", l.empty() ? "" : ",", k, Escape(v));
      out += fmt::format("{}{{{}}} {}\n", name, l, value);
    }
  }
  for (const auto& [name, gauge] : gauges_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, gauge.first, name, name,
                       gauge.second());
  }
  return out;
}

}  // namespace trainctl::op
