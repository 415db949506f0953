#include "operator/child_writer.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <vector>

#include "api/checkpoint_notice.h"
#include "api/json_fields.h"
#include "api/replica_env.h"
#include "api/restart_scope.h"
#include "operator/mpi_v2_children.h"
#include "operator/status_env.h"

namespace trainctl::op {

ChildWriter::ChildWriter(kube::Client* client, kube::EventRecorder* recorder,
                         Expectations* expectations, Metrics* metrics, const Clock* clock,
                         PodSettings settings, std::string cluster_domain)
    : client_(client),
      recorder_(recorder),
      expectations_(expectations),
      metrics_(metrics),
      clock_(clock),
      settings_(std::move(settings)),
      cluster_domain_(std::move(cluster_domain)) {}

void ChildWriter::Event(const api::Job& job, const std::string& type, const std::string& reason,
                        const std::string& message) {
  if (!recorder_) return;
  kube::EventInput e;
  e.object = {api::kApiVersion, job.info().name, job.namespace_, job.name,
              job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : ""};
  e.type = type;
  e.reason = reason;
  e.message = message;
  recorder_->Record(std::move(e));
}

Status ChildWriter::SlowStart(size_t n, size_t max_batch,
                              const std::function<Status(size_t)>& create) {
  size_t done = 0, batch = 1;
  while (done < n) {
    size_t count = std::min(batch, n - done);
    // The batch's last request runs on this thread, which would only wait otherwise: a batch of
    // one starts no thread at all.
    std::vector<std::future<Status>> futures;
    for (size_t i = 0; i + 1 < count; ++i)
      futures.push_back(std::async(std::launch::async, create, done + i));
    Status last = create(done + count - 1);
    Status first = Status::Ok();
    for (auto& f : futures) {
      Status st = f.get();
      if (!st.ok() && first.ok()) first = st;
    }
    if (first.ok()) first = last;
    if (!first.ok()) return first;
    done += count;
    batch = std::min(batch * 2, max_batch);  // threads per batch stay bounded
  }
  return Status::Ok();
}

Status ChildWriter::CreatePod(const std::string& job_key, const api::Job& job,
                              const engine::ReplicaRef& ref) {
  api::ServiceEndpoints endpoints(job.name, job.namespace_, cluster_domain_);
  // An MPIJob of v2beta1 has only its workers made here (its launcher is a batch Job's pod).
  StatusOr<BuiltPod> built = job.IsMpiV2()
                                 ? BuildMpiV2Worker(job, ref.index)
                                 : BuildPod(job, ref.type, ref.index, endpoints, settings_);
  if (!built.ok()) {
    Event(job, "Warning", "FailedCreatePod", "Error creating: " + built.status().message());
    return built.status();
  }
  for (const engine::Event& e : built->events) Event(job, e.type, e.reason, e.message);
  if (!settings_.status_server_url.empty() && !job.IsMpiV2()) {
    if (Status ca = EnsureStatusCa(job.namespace_); !ca.ok()) {
      Event(job, "Warning", "FailedCreatePod",
            "Error creating: ConfigMap " + job.namespace_ + "/" + kNamespaceStatusCaConfigMap +
                " (the runtime status endpoint's CA): " + ca.message());
      return ca;
    }
  }
  expectations_->ExpectCreate(job_key, ref, clock_->Now(), api::RestartAttemptOf(job));
  Status created = client_->CreateOnly(kube::kPods, job.namespace_, built->pod);
  if (metrics_) metrics_->CountRequest("create", "pods", created.ok());
  if (created.ok() || created.code() == StatusCode::kAlreadyExists) {
    if (created.ok()) Event(job, "Normal", "SuccessfulCreatePod", "Created pod: " + ref.name);
    return Status::Ok();
  }
  expectations_->Cancel(job_key, ref.name);
  Event(job, "Warning", "FailedCreatePod", "Error creating: " + created.message());
  return created;
}

Status ChildWriter::EnsureStatusCa(const std::string& ns) {
  {
    std::lock_guard<std::mutex> lock(ca_mu_);
    if (ca_namespaces_.count(ns)) return Status::Ok();
  }
  const std::string ca = settings_.status_ca ? settings_.status_ca() : "";
  if (ca.empty()) return UnavailableError("the CA is not known yet (the webhook server starts)");
  const nlohmann::json cm = NamespaceStatusCaConfigMap(ns, ca);
  Status made = client_->CreateOnly(kube::kConfigMaps, ns, cm);
  if (made.code() == StatusCode::kAlreadyExists)  // kept from an earlier run: its CA renewed
    made = client_
               ->Patch(kube::kConfigMaps, ns, kNamespaceStatusCaConfigMap, kube::PatchType::kMerge,
                       nlohmann::json{{"data", cm["data"]}}.dump())
               .status();
  if (!made.ok()) return made;
  std::lock_guard<std::mutex> lock(ca_mu_);
  ca_namespaces_.insert(ns);
  return Status::Ok();
}

Status ChildWriter::CreateService(const std::string& job_key, const api::Job& job,
                                  const engine::ReplicaRef& ref) {
  StatusOr<nlohmann::json> service = BuildService(job, ref.type, ref.index);
  if (!service.ok()) {
    Event(job, "Warning", "FailedCreateService", "Error creating: " + service.status().message());
    return service.status();
  }
  expectations_->ExpectService(job_key, ref.name, clock_->Now());
  Status created = client_->CreateOnly(kube::kServices, job.namespace_, *service);
  if (metrics_) metrics_->CountRequest("create", "services", created.ok());
  if (created.ok()) {
    Event(job, "Normal", "SuccessfulCreateService", "Created service: " + ref.name);
    return Status::Ok();
  }
  if (created.code() == StatusCode::kAlreadyExists) return Status::Ok();
  expectations_->CancelService(job_key, ref.name);
  Event(job, "Warning", "FailedCreateService", "Error creating: " + created.message());
  return created;
}

Status TellPodsNotice(kube::Client* client, Metrics* metrics, const std::string& ns,
                      const std::vector<engine::ReplicaRef>& pods, const std::string& notice) {
  nlohmann::json value = notice.empty() ? nlohmann::json() : nlohmann::json(notice);
  nlohmann::json patch = {
      {"metadata",
       {{"annotations",
         {{api::kNoticeAnnotation, value}, {api::kNoticeDoneAnnotation, nullptr}}}}}};
  const std::string body = patch.dump();
  Status first = Status::Ok();
  for (const engine::ReplicaRef& pod : pods) {
    StatusOr<nlohmann::json> patched =
        client->Patch(kube::kPods, ns, pod.name, kube::PatchType::kMerge, body);
    if (metrics) metrics->CountRequest("patch", "pods", patched.ok());
    if (!patched.ok() && patched.status().code() != StatusCode::kNotFound && first.ok())
      first = patched.status();
  }
  return first;
}

nlohmann::json JobRecordPatch(const nlohmann::json& meta, const engine::Plan& plan) {
  nlohmann::json annotations = nlohmann::json::object();
  if (plan.restart_attempt)
    annotations[api::kRestartAttemptAnnotation] = std::to_string(*plan.restart_attempt);
  if (plan.notice_record)
    annotations[api::kNoticeAnnotation] =
        plan.notice_record->empty() ? nlohmann::json() : nlohmann::json(*plan.notice_record);
  // resourceVersion makes the patch conditional: a job changed meanwhile is decided again.
  nlohmann::json metadata = {{"resourceVersion", api::StringAt(meta, "resourceVersion")}};
  if (!annotations.empty()) metadata["annotations"] = std::move(annotations);
  // The whole list, made from the version decided on: the resourceVersion keeps others' safe.
  if (plan.notice_finalizer)
    metadata["finalizers"] = api::FinalizersWithNotice(meta, *plan.notice_finalizer);
  return {{"metadata", std::move(metadata)}};
}

Status ChildWriter::TellNotice(const api::Job& job, const std::vector<engine::ReplicaRef>& pods,
                               const std::string& notice) {
  return TellPodsNotice(client_, metrics_, job.namespace_, pods, notice);
}

WriteOutcome ChildWriter::Apply(const std::string& job_key, const api::Job& job,
                                const ChildActions& actions) {
  WriteOutcome out;
  for (const PodDelete& pod : actions.delete_pods) {
    const std::string& name = pod.name;
    expectations_->ExpectDelete(job_key, name, clock_->Now());
    kube::DeleteOptions options;
    options.precondition_uid = pod.uid;  // only the incarnation the decision was made on
    Status st = client_->Delete(kube::kPods, job.namespace_, name, options);
    if (metrics_) metrics_->CountRequest("delete", "pods", st.ok());
    if (st.ok()) {
      ++out.deleted;
      Event(job, "Normal", "SuccessfulDeletePod", "Deleted pod: " + name);
    } else if (st.code() == StatusCode::kConflict) {
      // A newer incarnation holds the name: the observed one is gone already. The cache is
      // behind; the next sync sees the new pod.
      expectations_->Cancel(job_key, name);
    } else if (st.code() != StatusCode::kNotFound) {
      expectations_->Cancel(job_key, name);
      Event(job, "Warning", "FailedDeletePod", "Error deleting: " + st.message());
      if (out.pods.ok()) out.pods = st;
    }
  }
  for (const std::string& name : actions.delete_services) {
    Status st = client_->Delete(kube::kServices, job.namespace_, name);
    if (metrics_) metrics_->CountRequest("delete", "services", st.ok());
    if (st.ok()) {
      Event(job, "Normal", "SuccessfulDeleteService", "Deleted service: " + name);
    } else if (st.code() != StatusCode::kNotFound) {
      Event(job, "Warning", "FailedDeleteService", "Error deleting: " + st.message());
      if (out.services.ok()) out.services = st;
    }
  }
  // Each replica's service with its pod (PairCreates), in one slow start. A failed service
  // stops further services, not the pods (the next sync creates the rest); a failed pod stops
  // further batches.
  const std::vector<ChildCreate> steps = PairCreates(actions);
  std::mutex mu;
  Status services = Status::Ok();
  // At most 64 requests in flight: 32 steps when a step sends two.
  const bool paired = std::any_of(steps.begin(), steps.end(),
                                  [](const ChildCreate& c) { return c.service && c.pod; });
  Status pods = SlowStart(steps.size(), paired ? 32 : 64, [&](size_t i) {
    const ChildCreate& step = steps[i];
    bool services_stopped;
    {
      std::lock_guard<std::mutex> lock(mu);
      services_stopped = !services.ok();
    }
    auto create_service = [&] {
      Status st = CreateService(job_key, job, *step.service);
      std::lock_guard<std::mutex> lock(mu);
      if (!st.ok() && services.ok()) services = st;
    };
    // The service and its pod are sent together: a step costs one round trip, not two, where
    // the API server answers slowly and the job's creates wait on it rather than on the QPS.
    std::future<void> service;
    if (step.service && !services_stopped) {
      if (step.pod)
        service = std::async(std::launch::async, create_service);
      else
        create_service();
    }
    Status pod = step.pod ? CreatePod(job_key, job, *step.pod) : Status::Ok();
    if (service.valid()) service.get();
    return pod;
  });
  if (!services.ok() && out.services.ok()) out.services = services;
  if (!pods.ok() && out.pods.ok()) out.pods = pods;
  out.created = static_cast<int>(actions.create_pods.size());
  return out;
}

}  // namespace trainctl::op
