#include "operator/trainjob_controller.h"

#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/training_runtime.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

std::string SnapshotName(const std::string& job) { return job + "-runtime-snapshot"; }

// How long a new JobSet may go without any status before the TrainJob says that no JobSet
// controller answers.
constexpr Duration kJobSetAnswerGrace{30000};

const json& Field(const json& object, const char* key) {
  static const json kNull;
  return object.is_object() && object.contains(key) ? object[key] : kNull;
}

std::string NameOf(const json& o) { return api::StringAt(Field(o, "metadata"), "name"); }
std::string NamespaceOf(const json& o) { return api::StringAt(Field(o, "metadata"), "namespace"); }
std::string UidOf(const json& o) { return api::StringAt(Field(o, "metadata"), "uid"); }

bool ConditionTrue(const json& trainjob, const char* type) {
  const json& conditions = Field(Field(trainjob, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions)
    if (api::StringAt(c, "type") == type && api::StringAt(c, "status") == "True") return true;
  return false;
}

json OwnerReference(const json& trainjob) {
  return {{"apiVersion", api::kTrainerApiVersion},
          {"kind", "TrainJob"},
          {"name", NameOf(trainjob)},
          {"uid", UidOf(trainjob)},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

// The key of the TrainJob that controls `object` ("" when none does).
std::string OwnerKey(const json& object) {
  const json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return "";
  for (const json& ref : refs)
    if (api::StringAt(ref, "kind") == "TrainJob" && api::BoolAt(ref, "controller", false))
      return NamespaceOf(object) + "/" + api::StringAt(ref, "name");
  return "";
}

bool ManagedByUs(const json& trainjob) {
  std::string managed_by = api::StringAt(Field(trainjob, "spec"), "managedBy");
  return managed_by.empty() || managed_by == api::kManagedByTrainer;
}

}  // namespace

TrainJobController::TrainJobController(kube::Client* client, const Clock* clock,
                                       std::string namespace_, int threads,
                                       kube::EventRecorder* recorder)
    : client_(client),
      clock_(clock),
      namespace_(std::move(namespace_)),
      threads_(std::max(1, threads)),
      recorder_(recorder),
      queue_(clock),
      trainjobs_([](const json& o) { return std::optional<json>(o); }),
      jobsets_([](const json& o) { return std::optional<json>(o); }) {
  trainjobs_.SetHandlers({
      .on_add = [this](const std::string& key, const json&) { queue_.Add(key); },
      .on_update = [this](const std::string& key, const json&, const json&) { queue_.Add(key); },
      .on_delete = nullptr,
  });
  auto owner = [this](const json& jobset) {
    if (std::string key = OwnerKey(jobset); !key.empty()) queue_.Add(key);
  };
  jobsets_.SetHandlers({
      .on_add = [owner](const std::string&, const json& o) { owner(o); },
      .on_update =
          [this, owner](const std::string&, const json& before, const json& o) {
            owner(o);
            const int64_t was = api::IntAt(Field(before, "status"), "restarts", 0);
            const int64_t is = api::IntAt(Field(o, "status"), "restarts", 0);
            if (is > was) Restarted(o, is);
          },
      .on_delete = [owner](const std::string&, const json& o) { owner(o); },
  });
}

TrainJobController::~TrainJobController() { Stop(); }

void TrainJobController::Start() {
  kube::ReflectorOptions options;
  options.namespace_ = namespace_;
  trainjob_reflector_ =
      std::make_unique<kube::Reflector>(client_, kTrainJobs, options, &trainjobs_);
  jobset_reflector_ = std::make_unique<kube::Reflector>(client_, kJobSets, options, &jobsets_);
  trainjob_reflector_->Start();
  jobset_reflector_->Start();
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Worker(); });
}

bool TrainJobController::Synced() const {
  return trainjob_reflector_ && trainjob_reflector_->HasSynced() && jobset_reflector_->HasSynced();
}

bool TrainJobController::WaitForSync(Duration timeout) {
  if (!trainjob_reflector_) return false;
  return trainjob_reflector_->WaitForSync(timeout) && jobset_reflector_->WaitForSync(timeout);
}

void TrainJobController::Stop() {
  if (stopping_.exchange(true)) return;
  queue_.Shutdown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  if (trainjob_reflector_) trainjob_reflector_->Stop();
  if (jobset_reflector_) jobset_reflector_->Stop();
}

void TrainJobController::Worker() {
  while (std::optional<std::string> key = queue_.Get()) {
    SyncResult result;
    try {
      result = Sync(*key);
    } catch (const std::exception& e) {  // never let odd input take the operator down
      result.status = InternalError(std::string("unexpected error: ") + e.what());
    }
    if (!result.status.ok()) {
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (result.requeue_after) queue_.AddAfter(*key, *result.requeue_after);
    }
    queue_.Done(*key);
  }
}

void TrainJobController::Restarted(const json& jobset, int64_t restarts) {
  if (!recorder_) return;
  const json& refs = Field(Field(jobset, "metadata"), "ownerReferences");
  if (!refs.is_array()) return;
  for (const json& ref : refs) {
    if (api::StringAt(ref, "kind") != "TrainJob" || !api::BoolAt(ref, "controller", false))
      continue;
    const int64_t most =
        api::IntAt(Field(Field(jobset, "spec"), "failurePolicy"), "maxRestarts", 0);
    kube::EventInput event;
    event.object = {api::kTrainerApiVersion, "TrainJob", NamespaceOf(jobset),
                    api::StringAt(ref, "name"), api::StringAt(ref, "uid")};
    event.type = "Warning";
    event.reason = "TrainJobRestarting";
    event.message = "JobSet " + NamespaceOf(jobset) + "/" + NameOf(jobset) +
                    " restarted every node together: restart " + std::to_string(restarts) + " of " +
                    std::to_string(most);
    recorder_->Record(std::move(event));
  }
}

void TrainJobController::Warn(const json& trainjob, const std::string& reason,
                              const std::string& message) {
  if (!recorder_) return;
  kube::EventInput event;
  event.object = {api::kTrainerApiVersion, "TrainJob", NamespaceOf(trainjob), NameOf(trainjob),
                  UidOf(trainjob)};
  event.type = "Warning";
  event.reason = reason;
  event.message = message.size() > 950 ? message.substr(0, 950) : message;
  recorder_->Record(std::move(event));
}

StatusOr<json> TrainJobController::Snapshot(const json& trainjob) {
  const std::string ns = NamespaceOf(trainjob), name = NameOf(trainjob);
  StatusOr<json> cm = client_->Get(kube::kConfigMaps, ns, SnapshotName(name));
  if (cm.ok()) {
    const json& data = Field(*cm, "data");
    if (OwnerKey(*cm) != ns + "/" + name || !data.is_object() || !data.contains("runtime") ||
        !data["runtime"].is_string())
      return FailedPreconditionError("ConfigMap " + ns + "/" + SnapshotName(name) +
                                     " is not this TrainJob's runtime snapshot");
    json runtime = json::parse(data["runtime"].get<std::string>(), nullptr, false);
    if (runtime.is_discarded())
      return FailedPreconditionError("ConfigMap " + ns + "/" + SnapshotName(name) +
                                     ": key runtime is not a runtime document");
    return runtime;
  }
  if (cm.status().code() != StatusCode::kNotFound) return cm.status();
  const json& ref = Field(Field(trainjob, "spec"), "runtimeRef");
  const std::string kind = api::StringAt(ref, "kind", api::kClusterTrainingRuntimeKind);
  const std::string runtime_name = api::StringAt(ref, "name");
  const bool cluster = kind == api::kClusterTrainingRuntimeKind;
  StatusOr<json> live = client_->Get(cluster ? kClusterTrainingRuntimes : kTrainingRuntimes,
                                     cluster ? "" : ns, runtime_name);
  if (!live.ok()) {
    if (live.status().code() == StatusCode::kNotFound)
      return NotFoundError(kind + " " + (cluster ? "" : ns + "/") + runtime_name +
                           " not found: specified trainingRuntime must be created before the "
                           "TrainJob is created");
    return live.status();
  }
  json runtime = *live;
  if (runtime.contains("metadata") && runtime["metadata"].is_object())
    for (const char* k :
         {"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp"})
      runtime["metadata"].erase(k);
  runtime["apiVersion"] = api::kTrainerApiVersion;
  runtime["kind"] = kind;
  json snapshot = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata",
                    {{"name", SnapshotName(name)},
                     {"namespace", ns},
                     {"ownerReferences", json::array({OwnerReference(trainjob)})}}},
                   {"data", {{"runtime", runtime.dump()}}}};
  StatusOr<json> made = client_->Create(kube::kConfigMaps, ns, snapshot);
  if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) return made.status();
  return runtime;
}

SyncResult TrainJobController::Sync(const std::string& key) {
  SyncResult result;
  std::optional<json> cached = trainjobs_.Get(key);
  if (!cached || !ManagedByUs(*cached)) return result;
  const json& trainjob = *cached;
  if (Field(Field(trainjob, "metadata"), "deletionTimestamp").is_string()) return result;
  const std::string ns = NamespaceOf(trainjob), name = NameOf(trainjob);
  std::optional<json> jobset = jobsets_.Get(key);
  if (jobset && OwnerKey(*jobset) != key) {
    Warn(trainjob, "TrainJobResourcesCreationFailed",
         "JobSet " + key + " exists and is not this TrainJob's");
    return result;
  }
  const bool finished = ConditionTrue(trainjob, "Complete") || ConditionTrue(trainjob, "Failed");
  if (!finished) {
    StatusOr<json> runtime_doc = Snapshot(trainjob);
    if (!runtime_doc.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed", runtime_doc.status().message());
      result.status = runtime_doc.status().code() == StatusCode::kNotFound ? Status::Ok()
                                                                           : runtime_doc.status();
      if (result.status.ok()) result.requeue_after = Duration(10000);
      return result;
    }
    StatusOr<api::TrainingRuntime> runtime = api::DecodeTrainingRuntime(
        *runtime_doc, "runtime snapshot " + ns + "/" + SnapshotName(name));
    api::RuntimeCatalog catalog;
    if (runtime.ok()) catalog.Add(*runtime);
    json spec_only = trainjob;  // the status is upstream's shape, not the job model's
    spec_only.erase("status");
    StatusOr<api::LoadedJob> job = runtime.ok() ? api::PrepareJob(spec_only, &catalog)
                                                : StatusOr<api::LoadedJob>(runtime.status());
    if (!job.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed", job.status().message());
      return result;  // the spec must change first; its update wakes us
    }
    StatusOr<json> want = BuildJobSet(job->job, UidOf(trainjob));
    if (!want.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed", want.status().message());
      return result;
    }
    const bool suspend = api::BoolAt(Field(trainjob, "spec"), "suspend", false);
    if (!jobset) {
      // jobsStatus is only ever copied from this TrainJob's JobSet: it existed, and is gone.
      const bool had_one = Field(Field(trainjob, "status"), "jobsStatus").is_array();
      StatusOr<json> made = client_->Create(kJobSets, ns, *want);
      if (made.ok() && had_one)
        Warn(trainjob, "JobSetRecreated",
             "JobSet " + key +
                 " was deleted while the TrainJob ran; made again from its runtime "
                 "snapshot");
      if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) {
        Warn(trainjob, "TrainJobResourcesCreationFailed",
             "JobSet " + key + ": " + made.status().message());
        result.status = made.status();
        return result;
      }
      if (made.ok()) jobset = *made;
    } else if (api::BoolAt(Field(*jobset, "spec"), "suspend", false) != suspend) {
      json patch = {{"spec", {{"suspend", suspend}}}};
      StatusOr<json> patched =
          client_->Patch(kJobSets, ns, name, kube::PatchType::kMerge, patch.dump());
      if (!patched.ok()) {
        result.status = patched.status();
        return result;
      }
      jobset = *patched;
    }
  }
  const Time now = clock_->Now();
  json status = TrainJobStatusFrom(trainjob, jobset ? &*jobset : nullptr, now);
  if (std::optional<Time> deadline = TrainJobDeadline(trainjob)) {
    if (now >= *deadline) {  // upstream: Failed, and the JobSet deleted (its pods with it)
      status = WithDeadlineExceeded(status, now);
      if (jobset) {
        kube::DeleteOptions background;
        background.propagation_policy = "Background";
        Status deleted = client_->Delete(kJobSets, ns, name, background);
        if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) result.status = deleted;
      }
    } else {
      result.requeue_after = std::chrono::duration_cast<Duration>(*deadline - now);
    }
  }
  const bool no_status =
      jobset && (!Field(*jobset, "status").is_object() || Field(*jobset, "status").empty());
  if (!finished && no_status) {
    if (JobSetUnanswered(*jobset, now, kJobSetAnswerGrace))
      Warn(trainjob, "JobSetNotReconciled",
           "JobSet " + key + " has had no status for " +
               std::to_string(kJobSetAnswerGrace.count() / 1000) +
               " s: is the JobSet controller (sigs.k8s.io/jobset) running?");
    if (!result.requeue_after || *result.requeue_after > kJobSetAnswerGrace)
      result.requeue_after = kJobSetAnswerGrace;  // look again (once more) after the grace
  }
  if (status != Field(trainjob, "status")) {
    json body = {{"status", status}};
    StatusOr<json> written =
        client_->Patch(kTrainJobs, ns, name, kube::PatchType::kMerge, body.dump(), {}, "status");
    if (!written.ok()) result.status = written.status();
  }
  return result;
}

}  // namespace trainctl::op
