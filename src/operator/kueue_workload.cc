#include "operator/kueue_workload.h"

#include "api/json_fields.h"
#include "common/text.h"
#include "operator/cache_types.h"

namespace trainctl::op {

namespace {

using nlohmann::json;

// A ReplicasReady message stays within what the engine writes for one.
constexpr size_t kMaxMessage = 1024;

WorkloadCondition ConditionOf(const json& status, const char* type) {
  WorkloadCondition out;
  const json& conditions = api::ChildAt(status, "conditions");
  if (!conditions.is_array()) return out;
  for (const json& c : conditions) {
    if (!c.is_object() || api::StringAt(c, "type") != type) continue;
    out.present = true;
    out.is_true = api::StringAt(c, "status") == "True";
    out.reason = api::StringAt(c, "reason");
    out.message = api::StringAt(c, "message");
  }
  return out;
}

bool SameCondition(const WorkloadCondition& a, const WorkloadCondition& b) {
  return a.present == b.present && a.is_true == b.is_true && a.reason == b.reason &&
         a.message == b.message;
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// ` in LocalQueue "q" (ClusterQueue "cq")`, as far as known.
std::string Queues(const std::string& queue, const std::string& cluster_queue) {
  std::string out;
  if (!queue.empty()) out += " in LocalQueue " + Quoted(queue);
  if (!cluster_queue.empty()) out += " (ClusterQueue " + Quoted(cluster_queue) + ")";
  return out;
}

}  // namespace

bool IsKueueReason(const std::string& reason) {
  return reason == "WaitingForAdmission" || reason == "KueuePending" || reason == "Inadmissible" ||
         reason == "Preempted" || reason == "Evicted" || reason == "WaitingForAdmissionChecks" ||
         reason == "Admitted";
}

std::optional<KueueWorkloadSummary> ProjectKueueWorkload(const json& object) {
  const json& meta = api::ChildAt(object, "metadata");
  KueueWorkloadSummary out;
  out.namespace_ = api::StringAt(meta, "namespace");
  out.name = api::StringAt(meta, "name");
  if (out.namespace_.empty() || out.name.empty()) return std::nullopt;
  if (std::optional<kube::Uid> owner = kube::ParseUid(ControllerOwnerUid(object)))
    out.owner_uid = *owner;
  out.queue_name = api::StringAt(api::ChildAt(object, "spec"), "queueName");
  const json& status = api::ChildAt(object, "status");
  out.cluster_queue = api::StringAt(api::ChildAt(status, "admission"), "clusterQueue");
  out.quota_reserved = ConditionOf(status, "QuotaReserved");
  out.admitted = ConditionOf(status, "Admitted");
  out.evicted = ConditionOf(status, "Evicted");
  out.finished = ConditionOf(status, "Finished");
  return out;
}

std::optional<LocalQueueSummary> ProjectLocalQueue(const json& object) {
  const json& meta = api::ChildAt(object, "metadata");
  LocalQueueSummary out;
  out.namespace_ = api::StringAt(meta, "namespace");
  out.name = api::StringAt(meta, "name");
  if (out.namespace_.empty() || out.name.empty()) return std::nullopt;
  out.cluster_queue = api::StringAt(api::ChildAt(object, "spec"), "clusterQueue");
  return out;
}

bool WorkloadWhyChanged(const KueueWorkloadSummary& a, const KueueWorkloadSummary& b) {
  return a.owner_uid != b.owner_uid || a.queue_name != b.queue_name ||
         a.cluster_queue != b.cluster_queue || !SameCondition(a.quota_reserved, b.quota_reserved) ||
         !SameCondition(a.admitted, b.admitted) || !SameCondition(a.evicted, b.evicted) ||
         !SameCondition(a.finished, b.finished);
}

std::string KueueQueueOf(const api::Job& job, const KueueWorkloadSummary* workload) {
  if (job.metadata.is_object()) {
    auto labels = job.metadata.find("labels");
    if (labels != job.metadata.end() && labels->is_object()) {
      std::string queue = api::StringAt(*labels, kKueueQueueLabel);
      if (!queue.empty()) return queue;
    }
  }
  return workload ? workload->queue_name : "";
}

std::optional<engine::Readiness> KueueReadiness(const api::Job& job, bool suspended,
                                                const KueueWorkloadSummary* workload,
                                                const std::string& cluster_queue) {
  if (!suspended) return std::nullopt;
  const std::string queue = KueueQueueOf(job, workload);
  if (queue.empty() && !workload) return std::nullopt;
  const std::string subject = std::string(job.info().name) + " " + job.name;
  std::string cq =
      workload && !workload->cluster_queue.empty() ? workload->cluster_queue : cluster_queue;
  engine::Readiness out;
  if (!workload) {
    out.reason = "WaitingForAdmission";
    out.message = subject + " is suspended: waiting for Kueue to admit it" + Queues(queue, cq) +
                  "; Kueue has made no Workload for it yet.";
    return out;
  }
  const std::string workload_note = " (Workload " + workload->name + ")";
  // What the Workload waits for now, in Kueue's words.
  std::string waiting;
  if (workload->quota_reserved.present && !workload->quota_reserved.is_true &&
      !workload->quota_reserved.message.empty()) {
    waiting = workload->quota_reserved.message;
  } else if (workload->quota_reserved.is_true && !workload->admitted.is_true &&
             !workload->admitted.message.empty()) {
    waiting = workload->admitted.message;
  }
  if (workload->evicted.is_true) {
    out.reason = workload->evicted.reason == "Preempted" ? "Preempted" : "Evicted";
    out.message = subject + " was " +
                  (out.reason == "Preempted" ? std::string("preempted")
                                             : "evicted (" + workload->evicted.reason + ")") +
                  " by Kueue";
    if (!workload->evicted.message.empty()) out.message += ": " + workload->evicted.message;
    out.message += "; it waits to be admitted again" + Queues(queue, cq);
    if (!waiting.empty()) out.message += ": " + waiting;
    out.message = Abbreviate(out.message + workload_note + ".", kMaxMessage);
    return out;
  }
  if (workload->admitted.is_true) {
    out.reason = "Admitted";
    out.message = subject + " was admitted by Kueue" + Queues(queue, cq) + "; Kueue resumes it" +
                  workload_note + ".";
  } else if (workload->quota_reserved.is_true) {
    out.reason = "WaitingForAdmissionChecks";
    out.message = subject + " has quota reserved" + Queues(queue, cq) +
                  " and waits for Kueue's admission checks" +
                  (waiting.empty() ? "" : ": " + waiting) + workload_note + ".";
  } else {
    // Kueue's scheduler has not looked at a Workload without QuotaReserved yet.
    const bool inadmissible = workload->quota_reserved.reason == "Inadmissible";
    out.reason = inadmissible                       ? "Inadmissible"
                 : workload->quota_reserved.present ? "KueuePending"
                                                    : "WaitingForAdmission";
    out.warning = inadmissible;
    out.message = subject + " is suspended: " +
                  (inadmissible ? std::string("Kueue cannot admit it")
                                : std::string("waiting for Kueue to admit it")) +
                  Queues(queue, cq) + (waiting.empty() ? "" : ": " + waiting) + workload_note + ".";
  }
  out.message = Abbreviate(out.message, kMaxMessage);
  return out;
}

}  // namespace trainctl::op
