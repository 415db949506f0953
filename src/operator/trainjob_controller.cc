#include "operator/trainjob_controller.h"

#include "api/checkpoint_notice.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/metrics_policy.h"
#include "api/training_runtime.h"
#include "operator/child_writer.h"
#include "operator/observe.h"
#include "operator/process_stats.h"
#include "operator/status_env.h"
#include "operator/trainjob_jobset.h"
#include "operator/trainjob_mpi.h"
#include "operator/trainjob_notice.h"
#include "operator/trainjob_pod_group.h"
#include "operator/trainjob_why.h"
#include "recording/history_snapshot.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

std::string SnapshotName(const std::string& job) { return job + "-runtime-snapshot"; }

// How long a new JobSet may go without any status before the TrainJob says that no JobSet
// controller answers.
constexpr Duration kJobSetAnswerGrace{30000};

// The pod index of the TrainJob a pod belongs to (JobSet names its pods' JobSet, which is the
// TrainJob's name).
constexpr const char* kTrainJobIndex = "trainjob";
constexpr const char* kUidIndex = "uid";

const json& Field(const json& object, const char* key) {
  static const json kNull;
  return object.is_object() && object.contains(key) ? object[key] : kNull;
}

std::string NameOf(const json& o) { return api::StringAt(Field(o, "metadata"), "name"); }
std::string NamespaceOf(const json& o) { return api::StringAt(Field(o, "metadata"), "namespace"); }
std::string UidOf(const json& o) { return api::StringAt(Field(o, "metadata"), "uid"); }

// Whether a TrainJob status has condition `type` True.
bool StatusConditionTrue(const json& status, const char* type) {
  const json& conditions = Field(status, "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions)
    if (api::StringAt(c, "type") == type && api::StringAt(c, "status") == "True") return true;
  return false;
}

bool ConditionTrue(const json& trainjob, const char* type) {
  return StatusConditionTrue(Field(trainjob, "status"), type);
}

json OwnerReference(const json& trainjob) {
  return TrainJobOwnerReference(NameOf(trainjob), UidOf(trainjob));
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

// The TrainJob against the runtime document it runs on (its snapshot): the job model.
StatusOr<api::LoadedJob> ResolveAgainst(const json& trainjob, const json& runtime_doc) {
  StatusOr<api::TrainingRuntime> runtime =
      api::DecodeTrainingRuntime(runtime_doc, "runtime snapshot " + NamespaceOf(trainjob) + "/" +
                                                  SnapshotName(NameOf(trainjob)));
  if (!runtime.ok()) return runtime.status();
  api::RuntimeCatalog catalog;
  catalog.Add(*runtime);
  json spec_only = trainjob;  // the status is upstream's shape, not the job model's
  spec_only.erase("status");
  return api::PrepareJob(spec_only, &catalog);
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
      jobsets_([](const json& o) { return std::optional<json>(o); }),
      pods_([](const json& o) { return kube::ProjectPod(o, TrainJobObservedLabels()); }) {
  pods_.SetPageProjector(
      [](std::string_view body) { return kube::ProjectPodList(body, TrainJobObservedLabels()); });
  pods_.SetEventProjector([](std::string_view event) {
    return kube::ProjectPodEvent(event, TrainJobObservedLabels());
  });
  auto trainjob_of = [](const kube::PodSummary& p) -> std::vector<std::string> {
    const std::string* jobset = p.Label(0);
    if (!jobset) return {};
    return {p.namespace_ + "/" + *jobset};
  };
  pods_.AddIndexer(kTrainJobIndex, trainjob_of);
  auto enqueue_pod = [this, trainjob_of](const kube::PodSummary& p) {
    for (const std::string& key : trainjob_of(p)) queue_.Add(key);
  };
  pods_.SetHandlers({
      .on_add = [enqueue_pod](const std::string&, const kube::PodSummary& p) { enqueue_pod(p); },
      .on_update = [enqueue_pod](const std::string&, const kube::PodSummary&,
                                 const kube::PodSummary& p) { enqueue_pod(p); },
      .on_delete = [enqueue_pod](const std::string&, const kube::PodSummary& p) { enqueue_pod(p); },
  });
  trainjobs_.AddIndexer(kUidIndex, [](const json& trainjob) -> std::vector<std::string> {
    std::string uid = api::StringAt(Field(trainjob, "metadata"), "uid");
    if (uid.empty()) return {};
    return {uid};
  });
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

void TrainJobController::SetKueue(KueueWatch* kueue) {
  kueue_ = kueue;
  if (!kueue_) return;
  kueue_->AddListener([this](const kube::Uid& owner) {
    trainjobs_.VisitIndex(kUidIndex, kube::FormatUid(owner), [this](const json& trainjob) {
      const json& meta = Field(trainjob, "metadata");
      queue_.Add(api::StringAt(meta, "namespace") + "/" + api::StringAt(meta, "name"));
    });
  });
}

void TrainJobController::Start() {
  kube::ReflectorOptions options;
  options.namespace_ = namespace_;
  trainjob_reflector_ =
      std::make_unique<kube::Reflector>(client_, kTrainJobs, options, &trainjobs_);
  jobset_reflector_ = std::make_unique<kube::Reflector>(client_, kJobSets, options, &jobsets_);
  kube::ReflectorOptions pod_options = options;
  pod_options.label_selector = TrainJobObservedLabels()[0];  // only JobSets' pods
  pod_reflector_ = std::make_unique<kube::Reflector>(client_, kube::kPods, pod_options, &pods_);
  trainjob_reflector_->Start();
  jobset_reflector_->Start();
  pod_reflector_->Start();
  // As controller-runtime's: no key is handled before every cache has synced (a TrainJob that
  // finished while no operator ran is recorded from its pods in the cache).
  for (int i = 0; i < threads_; ++i)
    workers_.emplace_back([this] {
      while (!stopping_ && !WaitForSync(Duration(200))) {
      }
      Worker();
    });
}

bool TrainJobController::Synced() const {
  return trainjob_reflector_ && trainjob_reflector_->HasSynced() &&
         jobset_reflector_->HasSynced() && pod_reflector_->HasSynced();
}

bool TrainJobController::WaitForSync(Duration timeout) {
  if (!trainjob_reflector_) return false;
  return trainjob_reflector_->WaitForSync(timeout) && jobset_reflector_->WaitForSync(timeout) &&
         pod_reflector_->WaitForSync(timeout);
}

void TrainJobController::Stop() {
  if (stopping_.exchange(true)) return;
  queue_.Shutdown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  if (trainjob_reflector_) trainjob_reflector_->Stop();
  if (jobset_reflector_) jobset_reflector_->Stop();
  if (pod_reflector_) pod_reflector_->Stop();
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
  Record(trainjob, "Warning", reason, message);
}

void TrainJobController::Record(const json& trainjob, const std::string& type,
                                const std::string& reason, const std::string& message) {
  if (!recorder_) return;
  kube::EventInput event;
  event.object = {api::kTrainerApiVersion, "TrainJob", NamespaceOf(trainjob), NameOf(trainjob),
                  UidOf(trainjob)};
  event.type = type;
  event.reason = reason;
  event.message = message.size() > 950 ? message.substr(0, 950) : message;
  recorder_->Record(std::move(event));
}

StatusOr<json> TrainJobController::Snapshot(const json& trainjob, bool make_missing) {
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
  if (!make_missing) return runtime;
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

Status TrainJobController::WritePodGroup(const json& trainjob, const api::Job& job,
                                         const json& jobset) {
  StatusOr<std::optional<json>> group = TrainJobPodGroup(job, jobset, UidOf(trainjob));
  if (!group.ok()) return group.status();
  if (!*group) return Status::Ok();
  const std::string ns = NamespaceOf(trainjob), uid = UidOf(trainjob);
  const std::string key = ns + "/" + NameOf(trainjob);
  const std::string written = uid + " " + (**group)["spec"].dump();
  {
    std::lock_guard<std::mutex> lock(written_mu_);
    if (auto it = pod_group_written_.find(key);
        it != pod_group_written_.end() && it->second == written)
      return Status::Ok();
  }
  const GangKind kind = TrainJobGangKind(job);
  const kube::Resource resource = PodGroupResource(kind);
  Status made = client_->CreateOnly(resource, ns, **group);
  if (made.code() == StatusCode::kAlreadyExists) {
    json patch = {{"spec", (**group)["spec"]}};
    made = client_->Patch(resource, ns, job.name, kube::PatchType::kMerge, patch.dump()).status();
  }
  if (made.code() == StatusCode::kNotFound)
    return FailedPreconditionError(
        "the runtime's podGroupPolicy needs the PodGroup API " + resource.group + "/" +
        resource.version + " (" +
        (kind == GangKind::kVolcano ? "Volcano" : "scheduler-plugins' coscheduling") +
        "), which this cluster does not serve: install its CRD, or use a runtime without "
        "podGroupPolicy");
  if (!made.ok()) return made;
  std::lock_guard<std::mutex> lock(written_mu_);
  pod_group_written_[key] = written;
  return Status::Ok();
}

Status TrainJobController::WriteMpiObjects(const json& trainjob, const api::Job& job,
                                           const json& jobset) {
  if (!job.IsMpiTrainJob()) return Status::Ok();
  const std::string ns = NamespaceOf(trainjob), uid = UidOf(trainjob);
  // The key pair is made once: the Secret is immutable, and one already there is kept (the
  // operator may create Secrets, never read them: manifests/rbac/cluster-role.yaml).
  StatusOr<SshKeyPair> keys = GenerateSshKeyPair();
  if (!keys.ok()) return keys.status();
  Status secret = client_->CreateOnly(kube::kSecrets, ns, TrainJobMpiSecret(job, uid, *keys));
  if (!secret.ok() && secret.code() != StatusCode::kAlreadyExists) return secret;
  const std::string subdomain = api::StringAt(Field(Field(jobset, "spec"), "network"), "subdomain");
  json hostfile = TrainJobMpiHostfileConfigMap(job, uid, subdomain);
  Status made = client_->CreateOnly(kube::kConfigMaps, ns, hostfile);
  if (made.ok() || made.code() != StatusCode::kAlreadyExists) return made;
  json patch = {{"data", hostfile["data"]}};
  return client_
      ->Patch(kube::kConfigMaps, ns, TrainJobMpiHostfileName(job.name), kube::PatchType::kMerge,
              patch.dump())
      .status();
}

SyncResult TrainJobController::Sync(const std::string& key) {
  // read
  SyncResult result;
  std::optional<json> cached = trainjobs_.Get(key);
  if (!cached || !ManagedByUs(*cached)) {
    std::lock_guard<std::mutex> lock(written_mu_);
    message_written_.erase(key);
    pod_group_written_.erase(key);
    ended_.erase(key);
    return result;
  }
  json trainjob = *cached;  // as stored; becomes the version each write returns
  if (api::BeingDeleted(Field(trainjob, "metadata")))
    return api::HasNoticeFinalizer(Field(trainjob, "metadata")) ? SyncDeletion(trainjob, key)
                                                                : result;
  const std::string ns = NamespaceOf(trainjob), name = NameOf(trainjob);
  std::optional<json> jobset = jobsets_.Get(key);
  if (jobset && OwnerKey(*jobset) != key) {
    Warn(trainjob, "TrainJobResourcesCreationFailed",
         "JobSet " + key + " exists and is not this TrainJob's");
    return result;
  }
  const bool finished = ConditionTrue(trainjob, "Complete") || ConditionTrue(trainjob, "Failed");
  // A TrainJob no leader has given a status or a JobSet is new: the history sees all its events.
  if (history_ && !jobset && Field(trainjob, "status").empty()) {
    ThreadCpuMeter meter(history_->shared_cpu_nanos());
    history_->events().Open(UidOf(trainjob));
  }
  const Time now = clock_->Now();
  // Past its deadline its JobSet is deleted and never made again (a pass that still reads the
  // TrainJob from before its Failed status was written must not recreate it).
  const std::optional<Time> deadline = TrainJobDeadline(trainjob);
  const bool expired = deadline && now >= *deadline;
  // A TrainJob that runs: resolved against its runtime snapshot, the JobSet it becomes, its pods.
  std::optional<api::LoadedJob> resolved;
  json want;
  if (!finished && !Resolve(trainjob, &resolved, &want, &result)) return result;
  std::vector<engine::ReplicaObservation> observed;
  if (resolved) {
    observed = ObservePods(resolved->job, key);
    RememberEnded(key, observed);
  }

  // decide: the checkpoint notice before a stop that is not the pods' own failure
  TrainJobNotice notice;
  if (resolved) {
    const bool running = jobset && !api::BoolAt(Field(*jobset, "spec"), "suspend", false);
    notice = DecideTrainJobNotice(resolved->job, running, observed, deadline,
                                  /*being_deleted=*/false, now);
  }

  // write: the notice first (the stop it announces keeps its time), then the JobSet
  if (resolved && !WriteNotice(&trainjob, &resolved->job, notice.plan, &result)) return result;
  if (resolved && !ApplyJobSet(trainjob, key, resolved->job, want, expired, notice.hold_suspend,
                               &jobset, &result))
    return result;

  // decide: the status, from the JobSet as now stored
  json status = DecideStatus(trainjob, key, jobset, resolved ? &resolved->job : nullptr, observed,
                             deadline, now, &result);

  // write
  if (expired && jobset) {  // upstream: Failed, and the JobSet deleted (its pods with it)
    kube::DeleteOptions background;
    background.propagation_policy = "Background";
    Status deleted = client_->Delete(kJobSets, ns, name, background);
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) result.status = deleted;
  }
  std::optional<json> stored = trainjob;  // the TrainJob with the status now stored
  // status.trainerStatus is the status endpoint's (operator/trainer_status_writer.h): a cached
  // TrainJob's older one is neither compared nor written back.
  json stored_status = Field(trainjob, "status");
  for (json* s : {&status, &stored_status})
    if (s->is_object()) s->erase("trainerStatus");
  if (status.is_object() && status.empty()) status = nullptr;
  if (stored_status.is_object() && stored_status.empty()) stored_status = nullptr;
  if (status != stored_status) {
    json body = {{"status", status}};
    StatusOr<json> written =
        client_->Patch(kTrainJobs, ns, name, kube::PatchType::kMerge, body.dump(), {}, "status");
    if (!written.ok()) result.status = written.status();
    stored = written.ok() ? std::optional<json>(std::move(*written)) : std::nullopt;
  }
  if (history_ && stored) RecordFinished(*stored, resolved ? &resolved->job : nullptr, key);
  if (stored && (ConditionTrue(*stored, "Complete") || ConditionTrue(*stored, "Failed"))) {
    std::lock_guard<std::mutex> lock(written_mu_);
    ended_.erase(key);  // its first failure and record are made
  }
  return result;
}

SyncResult TrainJobController::SyncDeletion(json trainjob, const std::string& key) {
  SyncResult result;
  StatusOr<json> runtime = Snapshot(trainjob, /*make_missing=*/false);
  if (!runtime.ok() && runtime.status().code() != StatusCode::kNotFound) {
    result.status = runtime.status();  // looked at again: a notice may still be owed
    return result;
  }
  StatusOr<api::LoadedJob> job = runtime.ok() ? ResolveAgainst(trainjob, *runtime)
                                              : StatusOr<api::LoadedJob>(runtime.status());
  TrainJobNotice notice;
  if (job.ok())
    notice = DecideTrainJobNotice(job->job, /*jobset_running=*/true, ObservePods(job->job, key),
                                  std::nullopt, /*being_deleted=*/true, clock_->Now());
  else
    notice.plan.notice_finalizer = false;  // nothing to tell: never hold a deletion on it
  WriteNotice(&trainjob, job.ok() ? &job->job : nullptr, notice.plan, &result);
  return result;
}

std::vector<engine::ReplicaObservation> TrainJobController::ObservePods(const api::Job& job,
                                                                        const std::string& key) {
  std::vector<engine::ReplicaObservation> observed;
  ReplicaObserver observer(job);
  pods_.VisitIndex(kTrainJobIndex, key, [&](const kube::PodSummary& pod) {
    if (std::optional<engine::ReplicaObservation> o = observer.Observe(pod))
      observed.push_back(std::move(*o));
  });
  return observed;
}

void TrainJobController::RememberEnded(const std::string& key,
                                       const std::vector<engine::ReplicaObservation>& observed) {
  std::lock_guard<std::mutex> lock(written_mu_);
  for (const engine::ReplicaObservation& o : observed)
    if (o.phase == engine::Phase::kFailed || (o.exit_code && *o.exit_code != 0))
      ended_[key][o.name] = o;
}

std::vector<engine::ReplicaObservation> TrainJobController::WithEnded(
    const std::string& key, std::vector<engine::ReplicaObservation> observed) {
  std::lock_guard<std::mutex> lock(written_mu_);
  auto it = ended_.find(key);
  if (it == ended_.end()) return observed;
  for (const auto& kept : it->second) {
    const std::string& name = kept.first;
    if (std::none_of(observed.begin(), observed.end(),
                     [&](const engine::ReplicaObservation& r) { return r.name == name; }))
      observed.push_back(kept.second);
  }
  return observed;
}

bool TrainJobController::WriteNotice(json* trainjob, const api::Job* job, const engine::Plan& plan,
                                     SyncResult* result) {
  for (const engine::Event& e : plan.events) Record(*trainjob, e.type, e.reason, e.message);
  if (plan.requeue_after &&
      (!result->requeue_after || *plan.requeue_after < *result->requeue_after))
    result->requeue_after = plan.requeue_after;
  const json& meta = Field(*trainjob, "metadata");
  if (plan.notice_record || plan.notice_finalizer) {
    json patch = JobRecordPatch(meta, plan);
    StatusOr<json> written = client_->Patch(kTrainJobs, NamespaceOf(*trainjob), NameOf(*trainjob),
                                            kube::PatchType::kMerge, patch.dump());
    if (!written.ok()) {
      result->status = written.status();  // retried; no pod was told yet
      return false;
    }
    *trainjob = std::move(*written);
  }
  if (!plan.notify.empty() && job) {
    const std::string text =
        plan.notice_record ? *plan.notice_record : api::RecordedNoticeText(*job);
    if (Status told = TellPodsNotice(client_, nullptr, NamespaceOf(*trainjob), plan.notify, text);
        !told.ok())
      result->status = told;
  }
  return true;
}

bool TrainJobController::Resolve(const json& trainjob, std::optional<api::LoadedJob>* resolved,
                                 json* jobset, SyncResult* result) {
  StatusOr<json> runtime_doc = Snapshot(trainjob);
  if (!runtime_doc.ok()) {
    Warn(trainjob, "TrainJobResourcesCreationFailed", runtime_doc.status().message());
    result->status =
        runtime_doc.status().code() == StatusCode::kNotFound ? Status::Ok() : runtime_doc.status();
    if (result->status.ok()) result->requeue_after = Duration(10000);
    return false;
  }
  StatusOr<api::LoadedJob> job = ResolveAgainst(trainjob, *runtime_doc);
  if (!job.ok()) {
    Warn(trainjob, "TrainJobResourcesCreationFailed", job.status().message());
    return false;  // the spec must change first; its update wakes us
  }
  StatusOr<json> want = BuildJobSet(job->job, UidOf(trainjob));
  if (!want.ok()) {
    Warn(trainjob, "TrainJobResourcesCreationFailed", want.status().message());
    return false;
  }
  if (status_server_)
    AddTrainerStatusEnv(&*want, NamespaceOf(trainjob), NameOf(trainjob), status_server_->url);
  *resolved = std::move(*job);
  *jobset = std::move(*want);
  return true;
}

bool TrainJobController::ApplyJobSet(const json& trainjob, const std::string& key,
                                     const api::Job& job, const json& want, bool expired,
                                     bool hold_suspend, std::optional<json>* jobset,
                                     SyncResult* result) {
  const std::string ns = NamespaceOf(trainjob), name = NameOf(trainjob);
  // A suspend waits while the pods have their checkpoint notice (operator/trainjob_notice.h).
  const bool suspend = api::BoolAt(Field(trainjob, "spec"), "suspend", false) && !hold_suspend;
  if (!*jobset && !expired) {
    if (Status mpi = WriteMpiObjects(trainjob, job, want); !mpi.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed",
           "MPI objects of " + key + ": " + mpi.message());
      result->status = mpi;
      return false;
    }
    if (Status group = WritePodGroup(trainjob, job, want); !group.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed", "PodGroup " + key + ": " + group.message());
      result->status = group;
      return false;
    }
    if (status_server_) {
      const std::string ca_pem = status_server_->ca();
      if (ca_pem.empty()) {  // the webhook server has no certificate yet: its pods could not
        result->requeue_after = Duration(1000);  // check the endpoint; look again
        return false;
      }
      StatusOr<json> ca = client_->Create(
          kube::kConfigMaps, ns, TrainerStatusCaConfigMap(ns, name, UidOf(trainjob), ca_pem));
      if (!ca.ok() && ca.status().code() != StatusCode::kAlreadyExists) {
        Warn(trainjob, "TrainJobResourcesCreationFailed",
             "ConfigMap " + ns + "/" + TrainerStatusCaConfigMapName(name) + ": " +
                 ca.status().message());
        result->status = ca.status();
        return false;
      }
    }
    // jobsStatus is only ever copied from this TrainJob's JobSet: it existed, and is gone.
    const bool had_one = Field(Field(trainjob, "status"), "jobsStatus").is_array();
    StatusOr<json> made = client_->Create(kJobSets, ns, want);
    if (made.ok() && had_one)
      Warn(trainjob, "JobSetRecreated",
           "JobSet " + key +
               " was deleted while the TrainJob ran; made again from its runtime "
               "snapshot");
    if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) {
      Warn(trainjob, "TrainJobResourcesCreationFailed",
           "JobSet " + key + ": " + made.status().message());
      result->status = made.status();
      return false;
    }
    if (made.ok()) *jobset = *made;
  } else if (*jobset && api::BoolAt(Field(trainjob, "spec"), "suspend", false)) {
    // Upstream applies a suspended TrainJob's PodGroup again (a runtimePatch may have changed
    // its pods); a running one's is left as made.
    if (Status group = WritePodGroup(trainjob, job, want); !group.ok()) {
      Warn(trainjob, "TrainJobResourcesCreationFailed", "PodGroup " + key + ": " + group.message());
      result->status = group;
      return false;
    }
  }
  if (*jobset && api::BoolAt(Field(**jobset, "spec"), "suspend", false) != suspend) {
    json patch = {{"spec", {{"suspend", suspend}}}};
    StatusOr<json> patched =
        client_->Patch(kJobSets, ns, name, kube::PatchType::kMerge, patch.dump());
    if (!patched.ok()) {
      result->status = patched.status();
      return false;
    }
    *jobset = *patched;
  }
  return true;
}

json TrainJobController::DecideStatus(const json& trainjob, const std::string& key,
                                      const std::optional<json>& jobset, const api::Job* resolved,
                                      const std::vector<engine::ReplicaObservation>& observed,
                                      std::optional<Time> deadline, Time now, SyncResult* result) {
  json status = TrainJobStatusFrom(trainjob, jobset ? &*jobset : nullptr, now);
  if (deadline) {
    if (now >= *deadline)
      status = WithDeadlineExceeded(status, now);
    else
      result->requeue_after = std::chrono::duration_cast<Duration>(*deadline - now);
  }
  const bool finished = ConditionTrue(trainjob, "Complete") || ConditionTrue(trainjob, "Failed");
  const bool no_status =
      jobset && (!Field(*jobset, "status").is_object() || Field(*jobset, "status").empty());
  if (!finished && no_status) {
    if (JobSetUnanswered(*jobset, now, kJobSetAnswerGrace))
      Warn(trainjob, "JobSetNotReconciled",
           "JobSet " + key + " has had no status for " +
               std::to_string(kJobSetAnswerGrace.count() / 1000) +
               " s: is the JobSet controller (sigs.k8s.io/jobset) running?");
    if (!result->requeue_after || *result->requeue_after > kJobSetAnswerGrace)
      result->requeue_after = kJobSetAnswerGrace;  // look again (once more) after the grace
  }
  if (resolved && jobset) {
    // What the pods say (the engine's rules): why the nodes are not running, who failed first.
    std::optional<Time> written_at;
    {
      std::lock_guard<std::mutex> lock(written_mu_);
      if (auto it = message_written_.find(key); it != message_written_.end())
        written_at = it->second;
    }
    const bool suspended = api::BoolAt(Field(trainjob, "spec"), "suspend", false);
    // Failing now: the nodes whose pods the Job controller already deleted count too.
    const bool failing = StatusConditionTrue(status, "Failed");
    const std::optional<engine::Readiness> queue_why =
        kueue_
            ? kueue_->Why(*resolved, api::StringAt(Field(trainjob, "metadata"), "uid"), suspended)
            : std::nullopt;
    TrainJobWhy why = DecideTrainJobWhy(Field(trainjob, "status"), std::move(status), *resolved,
                                        failing ? WithEnded(key, observed) : observed, suspended,
                                        now, written_at, queue_why);
    status = std::move(why.status);
    if (why.refresh_after &&
        (!result->requeue_after || *why.refresh_after < *result->requeue_after))
      result->requeue_after = why.refresh_after;
    for (const engine::Event& e : why.events) Record(trainjob, e.type, e.reason, e.message);
    std::lock_guard<std::mutex> lock(written_mu_);
    if (why.message_written) message_written_[key] = now;
    if (status.is_object() && !status.contains("conditions")) message_written_.erase(key);
  }
  if (!resolved) {
    status = KeepFirstFailure(Field(trainjob, "status"), std::move(status));
    std::lock_guard<std::mutex> lock(written_mu_);
    message_written_.erase(key);
  }
  return status;
}

void TrainJobController::RecordFinished(const json& trainjob, const api::Job* resolved,
                                        const std::string& key) {
  if (!ConditionTrue(trainjob, "Complete") && !ConditionTrue(trainjob, "Failed")) return;
  ThreadCpuMeter meter(history_->shared_cpu_nanos());  // the history's part of this sync
  const std::string uid = UidOf(trainjob);
  if (history_->Recorded(uid) || history_->Queued(uid)) return;
  std::optional<api::LoadedJob> loaded;
  if (!resolved) {
    // Finished before this leader saw it run: its snapshot, read once (the record is queued
    // now). Without one, the record keeps the status, events and why, and no node rows.
    StatusOr<json> runtime = Snapshot(trainjob, /*make_missing=*/false);
    StatusOr<api::LoadedJob> job = runtime.ok() ? ResolveAgainst(trainjob, *runtime)
                                                : StatusOr<api::LoadedJob>(runtime.status());
    if (job.ok()) {
      loaded = std::move(*job);
      resolved = &loaded->job;
    }
  }
  std::vector<engine::ReplicaObservation> observed;
  std::map<std::string, std::string> nodes;
  recording::SnapshotLayout layout;
  if (resolved) {
    ReplicaObserver observer(*resolved);
    pods_.VisitIndex(kTrainJobIndex, key, [&](const kube::PodSummary& pod) {
      if (std::optional<engine::ReplicaObservation> o = observer.Observe(pod)) {
        nodes[pod.name] = pod.node_name;
        observed.push_back(std::move(*o));
      }
    });
    // Nodes whose pods the Job controller deleted before the TrainJob was Failed, as last seen.
    observed = WithEnded(key, std::move(observed));
    layout.containers = observer.Containers();
    layout.resolved = true;
    layout.metrics = api::MetricsPolicyOf(*resolved);
  }
  history_->Enqueue(
      recording::MakeSnapshot(trainjob, api::Kind::kTrainJob, observed, nodes, layout),
      /*wake=*/false);
}

}  // namespace trainctl::op
