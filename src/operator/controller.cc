#include "operator/controller.h"

#include <algorithm>
#include <exception>

#include "api/checkpoint_notice.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/mpi_conversion.h"
#include "api/restart_scope.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "operator/decide.h"
#include "operator/log.h"
#include "operator/observe.h"
#include "operator/process_stats.h"
#include "operator/sync_plan.h"
#include "operator/sync_spacing.h"
#include "recording/history_snapshot.h"

namespace trainctl::op {
namespace {

constexpr const char* kOwnerIndex = "owner";
constexpr const char* kSelfIndex = "self";  // a launcher Job by its own uid

kube::Resource JobResource(api::Kind kind) {
  return {api::kGroup, "v1", api::Info(kind).plural, true};
}

struct KeyParts {
  std::string plural, ns, name;
};

std::optional<KeyParts> SplitKey(const std::string& key) {
  size_t a = key.find('/');
  if (a == std::string::npos) return std::nullopt;
  size_t b = key.find('/', a + 1);
  if (b == std::string::npos) return std::nullopt;
  return KeyParts{key.substr(0, a), key.substr(a + 1, b - a - 1), key.substr(b + 1)};
}

void StripManagedFields(nlohmann::json* object) {
  object->erase("managedFields");
  if (object->contains("metadata")) (*object)["metadata"].erase("managedFields");
}

}  // namespace

Controller::Controller(kube::Client* client, const Clock* clock, ControllerOptions options,
                       Metrics* metrics, kube::EventRecorder* recorder)
    : client_(client),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      recorder_(recorder),
      queue_(clock),
      writer_(client, recorder, &expectations_, metrics, clock, options_.pod_settings,
              options_.cluster_domain),
      mpi_writer_(client, recorder, metrics),
      probe_budget_(options_.progress_probes_per_minute),
      prober_(client, metrics, &probe_budget_),
      rank_prober_(client, metrics, &probe_budget_),
      hpa_writer_(client, metrics),
      pod_group_writer_(client, recorder, metrics, options_.pod_settings.gang),
      pods_([](const nlohmann::json& o) { return kube::ProjectPod(o, ObservedLabels()); }),
      services_(ProjectService),
      launcher_jobs_(ProjectLauncherJob) {
  auto owner_of_pod = [](const kube::PodSummary& p) {
    return p.HasOwner() ? std::vector<std::string>{kube::FormatUid(p.owner_uid)}
                        : std::vector<std::string>{};
  };
  services_.SetPageProjector(ProjectServiceList);
  services_.SetEventProjector(ProjectServiceEvent);
  pods_.SetPageProjector(
      [](std::string_view body) { return kube::ProjectPodList(body, ObservedLabels()); });
  pods_.SetEventProjector(
      [](std::string_view event) { return kube::ProjectPodEvent(event, ObservedLabels()); });
  pods_.AddIndexer(kOwnerIndex, owner_of_pod);
  services_.AddIndexer(kOwnerIndex, [](const ServiceSummary& s) {
    return s.owner_uid != kube::Uid{} ? std::vector<std::string>{kube::FormatUid(s.owner_uid)}
                                      : std::vector<std::string>{};
  });
  // A pod that failed, or vanished while it ran without first being seen terminating (a forced
  // delete, or gone during a watch gap), is a replica to replace or a job to fail: its job is
  // synced ahead of everything else (WorkQueue::AddUrgent). A pod that otherwise changed phase
  // (started, finished) may change what its job reports: its job goes ahead of routine changes
  // (the prompt lane), since behind a burst of new jobs to create it waited minutes (at 1,000
  // × 8, 39 % of the jobs were never written Running, and Succeeded up to 90 s late:
  // docs/benchmarks.md), kPhaseChangeSettle after the change, so that one sync sees the pods
  // of a job that start together. A change within a phase, a new pod (our own create's echo)
  // and a graceful delete are routine. A delete handler gets the pod as the cache last saw it, so a
  // graceful delete (this operator's clean-up, or anyone's) arrives terminating.
  using kube::Lane;
  using kube::PodPhase;
  pods_.SetHandlers({
      [this](const std::string&, const kube::PodSummary& p) { EnqueueOwner(p.owner_uid); },
      [this](const std::string&, const kube::PodSummary& o, const kube::PodSummary& n) {
        const Lane lane = n.phase == o.phase             ? Lane::kRoutine
                          : n.phase == PodPhase::kFailed ? Lane::kUrgent
                                                         : Lane::kPrompt;
        if (o.resource_version != n.resource_version) EnqueueOwner(n.owner_uid, lane);
        if (o.owner_uid != n.owner_uid) EnqueueOwner(o.owner_uid);
      },
      [this](const std::string&, const kube::PodSummary& p) {
        const bool lost =
            p.phase == PodPhase::kFailed || (p.phase != PodPhase::kSucceeded && !p.terminating);
        EnqueueOwner(p.owner_uid, lost ? Lane::kUrgent : Lane::kRoutine);
      },
  });
  services_.SetHandlers({
      [this](const std::string&, const ServiceSummary& s) { EnqueueOwner(s.owner_uid); },
      nullptr,
      [this](const std::string&, const ServiceSummary& s) { EnqueueOwner(s.owner_uid); },
  });

  kube::ReflectorOptions child_options;
  child_options.namespace_ = options_.namespace_;
  child_options.label_selector = api::kLabelJobName;  // only pods/services of training jobs
  pod_reflector_ = std::make_unique<kube::Reflector>(client_, kube::kPods, child_options, &pods_);
  service_reflector_ =
      std::make_unique<kube::Reflector>(client_, kube::kServices, child_options, &services_);

  // An MPIJob of v2beta1 has its launcher in a batch Job: the Job's changes that say how the
  // launcher ended, or that it is suspended, go to the MPIJob.
  auto uid_text = [](const kube::Uid& uid) {
    return uid != kube::Uid{} ? std::vector<std::string>{kube::FormatUid(uid)}
                              : std::vector<std::string>{};
  };
  launcher_jobs_.AddIndexer(
      kOwnerIndex, [uid_text](const LauncherJobSummary& j) { return uid_text(j.owner_uid); });
  launcher_jobs_.AddIndexer(kSelfIndex,
                            [uid_text](const LauncherJobSummary& j) { return uid_text(j.uid); });
  launcher_jobs_.SetHandlers({
      [this](const std::string&, const LauncherJobSummary& j) { EnqueueOwner(j.owner_uid); },
      [this](const std::string&, const LauncherJobSummary& o, const LauncherJobSummary& n) {
        if (o.complete != n.complete || o.failed != n.failed || o.suspended != n.suspended ||
            o.owner_uid != n.owner_uid)
          EnqueueOwner(n.owner_uid, n.failed ? kube::Lane::kUrgent : kube::Lane::kRoutine);
      },
      [this](const std::string&, const LauncherJobSummary& j) { EnqueueOwner(j.owner_uid); },
  });
  if (std::find(options_.kinds.begin(), options_.kinds.end(), api::Kind::kMPIJob) !=
      options_.kinds.end())
    launcher_job_reflector_ = std::make_unique<kube::Reflector>(client_, kube::kBatchJobs,
                                                                child_options, &launcher_jobs_);

  // Kueue's Workloads, for the why of the jobs it holds: a change of one is its job's change.
  kueue_ = std::make_unique<KueueWatch>(client_, options_.namespace_);
  kueue_->AddListener([this](const kube::Uid& owner) { EnqueueOwner(owner); });

  for (api::Kind kind : options_.kinds) {
    KindInformer informer;
    informer.kind = kind;
    informer.store = std::make_unique<kube::Store<CachedJob>>(ProjectJob);
    std::string plural = api::Info(kind).plural;
    informer.store->SetHandlers({
        [this, plural](const std::string& key, const CachedJob& j) {
          std::string qkey = plural + "/" + j.namespace_ + "/" + j.name;
          {
            std::lock_guard<std::mutex> lock(mu_);
            owner_keys_[j.uid] = qkey;
          }
          queue_.Add(qkey);
        },
        [this, plural](const std::string&, const CachedJob& o, const CachedJob& n) {
          if (o.resource_version == n.resource_version) return;
          std::string qkey = plural + "/" + n.namespace_ + "/" + n.name;
          {
            std::lock_guard<std::mutex> lock(mu_);
            owner_keys_[n.uid] = qkey;
          }
          queue_.Add(qkey);
        },
        [this, plural](const std::string&, const CachedJob& j) {
          std::string qkey = plural + "/" + j.namespace_ + "/" + j.name;
          {
            std::lock_guard<std::mutex> lock(mu_);
            owner_keys_.erase(j.uid);
            written_.erase(qkey);
            counts_held_.erase(qkey);
            quiet_until_.erase(qkey);
          }
          expectations_.Forget(qkey);
          mpi_writer_.Forget(j.uid);
          hpa_writer_.Forget(j.uid);
          pod_group_writer_.Forget(j.uid);
          prober_.Forget(j.uid);
          rank_prober_.Forget(j.uid);
        },
    });
    kube::ReflectorOptions job_options;
    job_options.namespace_ = options_.namespace_;
    informer.reflector = std::make_unique<kube::Reflector>(client_, JobResource(kind), job_options,
                                                           informer.store.get());
    jobs_.push_back(std::move(informer));
  }
}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  // Children first, so the first syncs see the pods that already exist.
  if (options_.kueue) kueue_->Start();
  for (kube::Reflector* r : ChildReflectors()) r->Start();
  for (kube::Reflector* r : ChildReflectors()) r->WaitForSync(Duration(60000));
  if (options_.kueue) kueue_->WaitForSync(Duration(60000));
  for (KindInformer& informer : jobs_) informer.reflector->Start();
  for (int i = 0; i < std::max(1, options_.threads); ++i)
    workers_.emplace_back([this] { Worker(); });
}

bool Controller::Synced() const {
  for (const kube::Reflector* r : ChildReflectors())
    if (!r->HasSynced()) return false;
  if (options_.kueue && !kueue_->Synced()) return false;
  for (const KindInformer& informer : jobs_)
    if (!informer.reflector->HasSynced()) return false;
  return true;
}

kube::ReflectorStats Controller::watch_stats() const {
  kube::ReflectorStats sum;
  auto add = [&sum](const kube::Reflector* r) {
    if (!r) return;
    kube::ReflectorStats s = r->stats();
    sum.lists += s.lists;
    sum.watches += s.watches;
    sum.events += s.events;
    sum.relists_after_gone += s.relists_after_gone;
    sum.errors += s.errors;
  };
  for (const kube::Reflector* r : ChildReflectors()) add(r);
  for (const kube::Reflector* r : kueue_->Reflectors()) add(r);
  for (const KindInformer& informer : jobs_) add(informer.reflector.get());
  return sum;
}

std::vector<std::pair<std::string, kube::ReflectorStats>> Controller::informer_stats() const {
  std::vector<std::pair<std::string, kube::ReflectorStats>> out;
  auto add = [&out](const kube::Reflector* r) {
    if (r) out.emplace_back(r->resource().plural, r->stats());
  };
  for (const kube::Reflector* r : ChildReflectors()) add(r);
  for (const kube::Reflector* r : kueue_->Reflectors()) add(r);
  for (const KindInformer& informer : jobs_) add(informer.reflector.get());
  return out;
}

std::string SyncSummary(
    Duration took, const std::vector<std::pair<std::string, kube::ReflectorStats>>& informers) {
  auto seconds = [](Duration d) { return fmt::format("{:.2f} s", d.count() / 1000.0); };
  std::string out = "caches synced in " + seconds(took);
  std::vector<std::string> parts;
  int empty = 0;
  for (const auto& [plural, stats] : informers) {
    if (stats.last_list_objects == 0) {
      empty++;
      continue;
    }
    parts.push_back(
        fmt::format("{} {} ({} {}, {})", plural, stats.last_list_objects, stats.last_list_pages,
                    stats.last_list_pages == 1 ? "page" : "pages", seconds(stats.last_list_time)));
  }
  if (empty > 0) parts.push_back(fmt::format("{} empty", empty));
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? ": " : ", ") + parts[i];
  return out;
}

bool Controller::WaitForSync(Duration timeout) {
  Time until = clock_->Now() + timeout;
  for (const KindInformer& informer : jobs_)
    if (!informer.reflector->WaitForSync(
            std::chrono::duration_cast<Duration>(until - clock_->Now())))
      return false;
  return Synced();
}

void Controller::Stop() {
  if (stopping_.exchange(true)) return;
  queue_.Shutdown();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  for (KindInformer& informer : jobs_) informer.reflector->Stop();
  for (kube::Reflector* r : ChildReflectors()) r->Stop();
  kueue_->Stop();
}

std::vector<kube::Reflector*> Controller::ChildReflectors() const {
  std::vector<kube::Reflector*> out;
  for (const std::unique_ptr<kube::Reflector>* r :
       {&pod_reflector_, &service_reflector_, &launcher_job_reflector_})
    if (*r) out.push_back(r->get());
  return out;
}

kube::ReflectorConsumer* Controller::JobCache(api::Kind kind) {
  for (KindInformer& informer : jobs_)
    if (informer.kind == kind) return informer.store.get();
  return nullptr;
}

void Controller::EnqueueOwner(const kube::Uid& owner, kube::Lane lane) {
  if (owner == kube::Uid{}) return;
  std::string owner_text = kube::FormatUid(owner);
  bool known = true;  // only an operator that watches launcher Jobs looks twice
  if (launcher_job_reflector_) {
    std::lock_guard<std::mutex> lock(mu_);
    known = owner_keys_.count(owner_text) > 0;
  }
  if (!known) {
    // A launcher Job's pod: its job is the Job's owner.
    launcher_jobs_.VisitIndex(kSelfIndex, owner_text, [&](const LauncherJobSummary& j) {
      owner_text = kube::FormatUid(j.owner_uid);
    });
  }
  std::string key;
  Duration wait{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = owner_keys_.find(owner_text);
    if (it == owner_keys_.end()) return;
    key = it->second;
    auto quiet = quiet_until_.find(key);
    if (quiet != quiet_until_.end()) {
      const Time now = clock_->Now();
      if (now < quiet->second)
        wait = std::chrono::ceil<Duration>(quiet->second - now);
      else
        quiet_until_.erase(quiet);
    }
  }
  if (lane == kube::Lane::kPrompt) wait = std::max(wait, kPhaseChangeSettle);
  if (wait > Duration(0))
    queue_.AddAfter(key, wait, lane);
  else
    queue_.AddIn(key, lane);
}

void Controller::Worker() {
  while (std::optional<std::string> key = queue_.Get()) {
    SyncResult result;
    try {
      result = Sync(*key);
    } catch (const std::exception& e) {  // never let odd input take the operator down
      result.status = InternalError(std::string("unexpected error: ") + e.what());
    }
    if (std::optional<Time> quiet = QuietUntil(clock_->Now(), result.read_and_decide)) {
      std::lock_guard<std::mutex> lock(mu_);
      quiet_until_[*key] = *quiet;
    }
    std::string controller = key->substr(0, key->find('/'));
    if (!result.status.ok()) {
      LogError("sync {}: {}", *key, result.status.message());
      queue_.AddRateLimited(*key);
      // A time the decision depends on (a notice's stopAt, a deadline) still wakes it.
      if (result.requeue_after) queue_.AddAfter(*key, *result.requeue_after + Duration(50));
      if (metrics_) metrics_->CountReconcile(controller, "error");
    } else {
      queue_.Forget(*key);
      if (result.requeue_after)
        queue_.AddAfter(*key, *result.requeue_after + Duration(50), result.requeue_lane);
      if (metrics_)
        metrics_->CountReconcile(controller, result.requeue_after ? "requeue_after" : "success");
    }
    queue_.Done(*key);
  }
}

std::optional<nlohmann::json> Controller::LatestJob(const KindInformer& informer,
                                                    const std::string& key) {
  std::optional<CachedJob> cached = informer.store->Get(key);
  if (!cached) return std::nullopt;
  std::string qkey = std::string(api::Info(informer.kind).plural) + "/" + key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = written_.find(qkey);
    if (it != written_.end()) {
      std::string rv = api::StringAt(it->second["metadata"], "resourceVersion");
      const std::string uid = api::StringAt(it->second["metadata"], "uid");
      if (uid == cached->uid && NewerResourceVersion(rv, cached->resource_version))
        return it->second;
      written_.erase(it);  // the cache caught up
    }
  }
  nlohmann::json object = api::ParseJsonWithin(cached->text, api::kApiJsonLimits);
  if (object.is_discarded()) return std::nullopt;
  return object;
}

std::vector<engine::ReplicaObservation> Controller::ObservePods(const api::Job& job,
                                                                const std::string& uid) const {
  ReplicaObserver observer(job);
  std::vector<engine::ReplicaObservation> observed;
  // A big job's observations are not moved as they grow.
  observed.reserve(static_cast<size_t>(std::max(0, job.TotalReplicas())));
  pods_.VisitIndex(kOwnerIndex, uid, [&](const kube::PodSummary& pod) {
    if (std::optional<engine::ReplicaObservation> o = observer.Observe(pod))
      observed.push_back(std::move(*o));
  });
  return observed;
}

Controller::LauncherView Controller::ViewLauncher(const api::Job& job,
                                                  const std::string& uid) const {
  LauncherView view;
  const std::string name = job.name + "-launcher";
  launcher_jobs_.VisitIndex(kOwnerIndex, uid, [&](const LauncherJobSummary& j) {
    if (j.name == name && j.namespace_ == job.namespace_) view.job = j;
  });
  if (!view.job) return view;
  ReplicaObserver observer(job);
  pods_.VisitIndex(kOwnerIndex, kube::FormatUid(view.job->uid), [&](const kube::PodSummary& pod) {
    if (std::optional<engine::ReplicaObservation> o = observer.Observe(pod))
      view.pods.push_back(std::move(*o));
  });
  return view;
}

std::map<std::string, std::string> Controller::NodesOf(const std::string& uid) const {
  std::map<std::string, std::string> nodes;
  pods_.VisitIndex(kOwnerIndex, uid,
                   [&](const kube::PodSummary& pod) { nodes[pod.name] = pod.node_name; });
  return nodes;
}

std::vector<std::string> Controller::ServiceNames(const api::Job& job,
                                                  const std::string& uid) const {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(std::max(0, job.TotalReplicas())));
  services_.VisitIndex(kOwnerIndex, uid, [&](const ServiceSummary& s) { names.push_back(s.name); });
  return names;
}

Status Controller::WriteStatus(const KindInformer& informer, nlohmann::json object,
                               const nlohmann::json& status) {
  object["status"] = status;
  std::string ns = api::StringAt(object["metadata"], "namespace");
  StatusOr<nlohmann::json> written = client_->UpdateStatus(JobResource(informer.kind), ns, object);
  if (metrics_) metrics_->CountRequest("update", "status", written.ok());
  if (!written.ok()) return written.status();
  Remember(informer, ns, api::StringAt(object["metadata"], "name"), std::move(*written));
  return Status::Ok();
}

void Controller::Remember(const KindInformer& informer, const std::string& ns,
                          const std::string& name, nlohmann::json written) {
  StripManagedFields(&written);
  std::lock_guard<std::mutex> lock(mu_);
  written_[std::string(api::Info(informer.kind).plural) + "/" + ns + "/" + name] =
      std::move(written);
}

Status Controller::RecordOnJob(const KindInformer& informer, nlohmann::json* object,
                               const engine::Plan& plan) {
  const nlohmann::json& meta = (*object)["metadata"];
  std::string ns = api::StringAt(meta, "namespace");
  std::string name = api::StringAt(meta, "name");
  nlohmann::json patch = JobRecordPatch(meta, plan);
  StatusOr<nlohmann::json> written =
      client_->Patch(JobResource(informer.kind), ns, name, kube::PatchType::kMerge, patch.dump());
  if (metrics_) metrics_->CountRequest("patch", api::Info(informer.kind).plural, written.ok());
  if (!written.ok()) return written.status();
  StripManagedFields(&*written);
  *object = *written;  // the status written next goes on top of this version
  Remember(informer, ns, name, std::move(*written));
  return Status::Ok();
}

void Controller::RecordEvents(const api::Job& job, const std::string& uid,
                              const std::vector<engine::Event>& events) {
  if (!recorder_) return;
  for (const engine::Event& e : events) {
    kube::EventInput event;
    event.object = {api::kApiVersion, job.info().name, job.namespace_, job.name, uid};
    event.type = e.type;
    event.reason = e.reason;
    event.message = e.message;
    recorder_->Record(std::move(event));
  }
}

SyncResult Controller::SyncDeletion(const KindInformer& informer, nlohmann::json object,
                                    const std::string& qkey) {
  SyncResult result;
  engine::Plan plan;
  StatusOr<api::LoadedJob> prepared = api::PrepareJob(object);
  if (!prepared.ok()) {
    plan.notice_finalizer = false;  // nothing to tell: never hold a deletion on a bad object
    result.status = RecordOnJob(informer, &object, plan);
    return result;
  }
  const api::Job& job = prepared->job;
  const std::string uid = api::StringAt(object["metadata"], "uid");
  const Time now = clock_->Now();
  plan = engine::Reconcile(job, expectations_.Overlay(qkey, ObservePods(job, uid), now), now);
  if (plan.notice_record || plan.notice_finalizer) {
    if (Status recorded = RecordOnJob(informer, &object, plan); !recorded.ok()) {
      result.status = recorded;
      return result;
    }
  }
  if (!plan.notify.empty()) {
    std::string notice = plan.notice_record ? *plan.notice_record : api::RecordedNoticeText(job);
    if (Status told = writer_.TellNotice(job, plan.notify, notice); !told.ok())
      result.status = told;
  }
  RecordEvents(job, uid, plan.events);
  result.requeue_after = plan.requeue_after;
  return result;
}

SyncResult Controller::SyncInvalid(const KindInformer& informer, const nlohmann::json& object,
                                   const std::string& message) {
  SyncResult result;
  std::string kind = api::Info(informer.kind).name;
  result.status = InvalidError(message);
  if (recorder_) {
    kube::EventInput e;
    const nlohmann::json& meta = object["metadata"];
    e.object = {api::kApiVersion, kind, api::StringAt(meta, "namespace"),
                api::StringAt(meta, "name"), api::StringAt(meta, "uid")};
    e.type = "Warning";
    e.reason = kind + "FailedValidation";
    e.message = message;
    recorder_->Record(std::move(e));
  }
  if (std::optional<nlohmann::json> status =
          InvalidJobStatus(object, kind, message, clock_->Now())) {
    Status st = WriteStatus(informer, object, *status);
    if (!st.ok()) result.status = st;
  }
  return result;
}

void Controller::SetHistory(recording::HistoryRecorder* history) {
  history_ = history;
  if (history_)
    history_->OnDone([this](api::Kind kind, const std::string& ns, const std::string& name) {
      queue_.Add(std::string(api::Info(kind).plural) + "/" + ns + "/" + name);
    });
}

SyncResult Controller::Sync(const std::string& qkey) {
  SyncResult result;
  std::optional<KeyParts> parts = SplitKey(qkey);
  if (!parts) return result;
  const KindInformer* informer = nullptr;
  for (const KindInformer& i : jobs_)
    if (parts->plural == api::Info(i.kind).plural) informer = &i;
  if (!informer) return result;
  std::optional<nlohmann::json> object = LatestJob(*informer, parts->ns + "/" + parts->name);
  if (!object) {
    expectations_.Forget(qkey);
    return result;
  }
  const nlohmann::json& meta = (*object)["metadata"];
  if (api::BeingDeleted(meta)) {
    if (!api::HasNoticeFinalizer(meta)) return result;
    return SyncDeletion(*informer, std::move(*object), qkey);
  }
  if (!api::ObjectManagedByUs(*object)) return result;

  // An MPIJob written as v2beta1 is reconciled as one (mpi-operator's children: an SSH launcher
  // in a batch Job); its status is the same in both versions and is written on the v1 object.
  const bool mpi_v2 = informer->kind == api::Kind::kMPIJob && api::WrittenAsMpiV2(*object);
  StatusOr<nlohmann::json> as_v2 = mpi_v2 ? api::ConvertMpiJob(*object, api::kApiVersionMpiV2)
                                          : StatusOr<nlohmann::json>(nlohmann::json());
  if (!as_v2.ok()) return SyncInvalid(*informer, *object, as_v2.status().message());
  StatusOr<api::LoadedJob> prepared = api::PrepareJob(mpi_v2 ? *as_v2 : *object);
  if (!prepared.ok()) return SyncInvalid(*informer, *object, prepared.status().message());

  // Read.
  const Time read_began = clock_->Now();
  SyncInput input;
  input.job = std::move(prepared->job);
  input.stored = input.job.status;
  PrepareStatusForEngine(&input.job);
  input.now = clock_->Now();
  const std::string uid = api::StringAt(meta, "uid");
  // A job without any status is new: the history will know every event it gets.
  if (history_ && input.stored.conditions.empty()) {
    ThreadCpuMeter meter(history_->shared_cpu_nanos());
    history_->events().Open(uid);
  }
  input.observed = expectations_.Overlay(qkey, ObservePods(input.job, uid), input.now);
  std::optional<LauncherJobSummary> launcher_job;
  if (input.job.IsMpiV2()) {
    LauncherView launcher = ViewLauncher(input.job, uid);
    launcher_job = launcher.job;
    if (std::optional<engine::ReplicaObservation> o = ObserveMpiV2Launcher(
            input.job, launcher.job ? &*launcher.job : nullptr, launcher.pods)) {
      if (launcher.job->failed)
        input.launcher_failed = LauncherFailure{o->end_reason, o->end_message};
      input.observed.push_back(std::move(*o));
    }
  }
  input.services = expectations_.OverlayServices(qkey, ServiceNames(input.job, uid), input.now);
  const std::optional<engine::Readiness> queue_why =
      kueue_->Why(input.job, uid, input.job.run_policy.suspend.value_or(false));
  const Time read_ended = clock_->Now();  // the log probes below are API calls: not counted
  std::optional<Duration> probe_again;
  if (!engine::IsFinished(input.job.status) && !input.job.run_policy.suspend.value_or(false)) {
    probe_again = prober_.Observe(input.job, uid, &input.observed, input.now);
    std::optional<Duration> ranks_again =
        rank_prober_.Observe(input.job, uid, &input.observed, input.now);
    if (ranks_again && (!probe_again || *ranks_again < *probe_again)) probe_again = ranks_again;
  }
  const api::Job& job = input.job;
  const Time now = input.now;

  // Decide.
  SyncOptions sync_options;
  sync_options.pod_groups = UsesPodGroups(options_.pod_settings.gang);
  sync_options.children = options_.children;
  const Time decide_began = clock_->Now();
  SyncPlan decided = DecideSync(input, sync_options);
  // A finished job waits for its history record: its pods and TTL are held (DecideSync).
  if (history_ && engine::IsFinished(decided.plan.status)) {
    ThreadCpuMeter meter(history_->shared_cpu_nanos());  // the history's part of this sync
    if (!history_->Recorded(uid)) {
      input.hold_for_history = true;
      decided = DecideSync(input, sync_options);
      if (decided.record)
        history_->Enqueue(recording::MakeSnapshot(*object, job.kind, input.observed, NodesOf(uid)),
                          /*wake=*/decided.held);
    }
  }
  result.read_and_decide = std::chrono::duration_cast<Duration>((read_ended - read_began) +
                                                                (clock_->Now() - decide_began));
  const engine::Plan& plan = decided.plan;
  if (plan.skip) return result;

  // A gang restart: the next attempt is recorded on the job before any pod is deleted, so it
  // survives an operator restart and no pod is created for the old attempt meanwhile. A
  // checkpoint notice too, before any pod is told it: the stop it announces keeps its time.
  if (plan.restart_attempt || plan.notice_record || plan.notice_finalizer) {
    Status recorded = RecordOnJob(*informer, &*object, plan);
    if (!recorded.ok()) {
      result.status = recorded;  // retried; nothing of the restart or notice is done yet
      // The finalizer alone (a new notice job) does not hold the job's start: only its deletion
      // would go without a notice meanwhile.
      if (plan.restart_attempt || plan.notice_record) return result;
    }
  }
  if (!plan.notify.empty()) {
    std::string notice = plan.notice_record ? *plan.notice_record : api::RecordedNoticeText(job);
    if (Status told = writer_.TellNotice(job, plan.notify, notice); !told.ok())
      result.status = told;  // retried: the pods not told are listed again
  }

  // Write the children.
  Status children = Status::Ok();  // the gang's or the MPI step's error, reported as pods'
  std::optional<Duration> gang_requeue;
  std::string gang_held;
  if (decided.gang == GangStep::kRemove) {
    children = pod_group_writer_.Remove(job);
  } else if (decided.gang == GangStep::kEnsure) {
    StatusOr<GangHold> hold = pod_group_writer_.Ensure(job);
    if (hold.ok() && hold->held) gang_held = hold->message;
    children = HoldForGang(hold, &decided.actions, &gang_requeue);
  }
  if (children.ok() && decided.ensure_mpi) {
    children = job.IsMpiV2()
                   ? mpi_writer_.EnsureV2(job, decided.mpi_running_workers, options_.cluster_domain,
                                          !decided.actions.create_pods.empty() ||
                                              decided.actions.create_launcher_job)
                   : mpi_writer_.Ensure(job, decided.mpi_running_workers);
    if (!children.ok()) {  // the launcher and the workers need them; retried
      decided.actions.create_pods.clear();
      decided.actions.create_launcher_job = false;
    }
  }
  if (children.ok() && decided.actions.create_launcher_job)
    children = mpi_writer_.CreateLauncherJob(job);
  // The launcher Job is suspended with its MPIJob (its pod stops) and resumed with it.
  const bool suspend = job.run_policy.suspend.value_or(false);
  if (launcher_job && launcher_job->suspended != suspend && !engine::IsFinished(plan.status)) {
    if (Status st = mpi_writer_.SuspendLauncherJob(job, suspend); !st.ok()) result.status = st;
  }
  WriteOutcome outcome = writer_.Apply(qkey, job, decided.actions);
  if (!children.ok() && outcome.pods.ok()) outcome.pods = children;
  if (decided.sync_hpa) {
    if (Status hpa = hpa_writer_.Sync(job); !hpa.ok()) result.status = hpa;  // retried
  }

  // Decide the status, then write it.
  CountCoalescing coalescing{
      CountWindowFor(options_.status_count_window, job.TotalReplicas()),
      NotReadyCountWindowFor(options_.status_count_window, job.TotalReplicas()), std::nullopt,
      options_.first_status_settle};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto held = counts_held_.find(qkey); held != counts_held_.end())
      coalescing.held_since = held->second;
  }
  StatusDecision status = DecideStatus(job, plan.status, input.stored, outcome.pods,
                                       outcome.services, now, gang_held, coalescing, queue_why);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.held_since)
      counts_held_[qkey] = *status.held_since;
    else
      counts_held_.erase(qkey);
  }
  if (!status.error.ok()) result.status = status.error;
  if (status.write) {
    nlohmann::json encoded = api::EncodeStatus(*status.write);
    if (!encoded.contains("replicaStatuses")) encoded["replicaStatuses"] = nlohmann::json::object();
    Status st = WriteStatus(*informer, *object, encoded);
    if (!st.ok()) {
      result.status = st;  // events and metrics wait for a write that sticks
      if (coalescing.held_since) {
        // The held counts were due: the retry writes them without holding them again.
        std::lock_guard<std::mutex> lock(mu_);
        counts_held_.emplace(qkey, *coalescing.held_since);
      }
      return result;
    }
  }
  std::vector<engine::Metric> counted = plan.metrics;  // a TTL deletion only once it is made
  // A held first status: the sync that writes it plans Created again and counts it then.
  if (status.first_status_held) std::erase(counted, engine::Metric::kJobCreated);
  std::vector<engine::Event> events = plan.events;
  if (plan.delete_job) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    options.precondition_uid = uid;
    Status st = client_->Delete(JobResource(job.kind), job.namespace_, job.name, options);
    if (metrics_) metrics_->CountRequest("delete", api::Info(job.kind).plural, st.ok());
    if (!st.ok()) DropUnmadeDeletion(&counted, &events);
    if (!st.ok() && st.code() != StatusCode::kNotFound) result.status = st;
  }
  std::string framework = job.info().framework_label;
  if (metrics_)
    for (engine::Metric m : counted) metrics_->CountJob(m, job.namespace_, framework);
  events.insert(events.end(), status.events.begin(), status.events.end());
  RecordEvents(job, uid, events);
  result.requeue_after = plan.requeue_after;
  if (engine::IsFinished(plan.status)) probe_again.reset();
  for (const std::optional<Duration>& also : {gang_requeue, status.requeue_after, probe_again})
    if (also && (!result.requeue_after || *also < *result.requeue_after))
      result.requeue_after = also;
  if (status.first_status_held) result.requeue_lane = kube::Lane::kPrompt;
  return result;
}

}  // namespace trainctl::op
