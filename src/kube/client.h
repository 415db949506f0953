// Client: the REST verbs of the Kubernetes API over a Transport, with client-side rate
// limiting, Retry-After handling and API errors mapped to Status codes (api_error.h).
//
// Objects are nlohmann::json documents. Supported writes: create, update (PUT, with the
// object's resourceVersion: a stale one is kConflict), the status subresource, merge patch,
// JSON patch and server-side apply (strategic merge patch is not supported for custom
// resources, so it is not offered), delete with propagation/grace/preconditions, dry-run.
// Lists can be paged; ListAll follows continue tokens and restarts once a token expired;
// ListPages does the same a page at a time, so no more than one page is decoded at once.
// Watch streams decoded events to a callback (see watch_decoder.h).
//
// Thread-safe: share one Client between threads. Blocking calls sleep on the calling thread
// when the limiter or the server asks to wait.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/rate_limiter.h"
#include "kube/transport.h"
#include "kube/watch_decoder.h"

namespace trainctl::kube {

// A resource type: group ("" for core), version, plural, and whether it is namespaced.
struct Resource {
  std::string group;
  std::string version;
  std::string plural;
  bool namespaced = true;
};

inline const Resource kPods{"", "v1", "pods"};
inline const Resource kServices{"", "v1", "services"};
inline const Resource kConfigMaps{"", "v1", "configmaps"};
inline const Resource kSecrets{"", "v1", "secrets"};
inline const Resource kBatchJobs{"batch", "v1", "jobs"};
inline const Resource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims"};
inline const Resource kEvents{"", "v1", "events"};
inline const Resource kNamespaces{"", "v1", "namespaces", false};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases"};
// Kubeflow Trainer v2 and the JobSets its TrainJobs run as.
inline const Resource kTrainJobs{"trainer.kubeflow.org", "v1alpha1", "trainjobs"};
inline const Resource kTrainingRuntimes{"trainer.kubeflow.org", "v1alpha1", "trainingruntimes"};
inline const Resource kClusterTrainingRuntimes{"trainer.kubeflow.org", "v1alpha1",
                                               "clustertrainingruntimes", false};
inline const Resource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets"};
inline const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", false};
inline const Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                                 "customresourcedefinitions", false};

// "/api/v1/namespaces/ns/pods/name/status", "/apis/g/v/plural", … (empty parts are left out).
std::string ResourcePath(const Resource& resource, const std::string& ns,
                         const std::string& name = "", const std::string& subresource = "");
// "?a=1&b=x%20y" from pairs (empty values are skipped); "" when nothing remains.
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int limit = 0;               // page size; 0 = server default (everything)
  std::string continue_token;  // from the previous page's metadata.continue
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" | "Exact" | ""
  // Watch only:
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // server-side watch timeout; 0 = server default
};

struct WriteOptions {
  bool dry_run = false;
  std::string field_manager;     // required for apply
  bool force = false;            // apply: take over conflicting fields
  std::string field_validation;  // "Strict" | "Warn" | "Ignore" | ""
};

struct DeleteOptions {
  std::string propagation_policy;  // "Background" | "Foreground" | "Orphan" | ""
  std::optional<long long> grace_period_seconds;
  std::string precondition_uid;
  std::string precondition_resource_version;
  bool dry_run = false;
};

enum class PatchType { kMerge, kJson, kApply };

// Query of GET pods/NAME/log (core/v1 PodLogOptions); unset fields are left out.
struct PodLogOptions {
  std::string container;  // empty: the pod's only (or default) container
  bool follow = false;
  bool previous = false;  // the last terminated instance of the container
  bool timestamps = false;
  std::optional<long long> tail_lines;
  std::optional<long long> since_seconds;
  std::optional<long long> limit_bytes;
};

// "/api/v1/namespaces/NS/pods/NAME/log?container=…&follow=true…".
std::string PodLogPath(const std::string& ns, const std::string& pod, const PodLogOptions& options);

struct ClientOptions {
  double qps = 20;  // <= 0: no client-side limit
  int burst = 30;
  int max_retries = 5;  // for 429, and for GET on 5xx/transport errors
  Duration request_timeout{30000};
  std::function<void(Duration)> sleep;  // default: the client's clock's SleepFor
};

class Client {
 public:
  Client(std::unique_ptr<Transport> transport, ClientOptions options, const Clock* clock);

  StatusOr<nlohmann::json> Get(const Resource& r, const std::string& ns, const std::string& name,
                               const std::string& subresource = "");
  // One page (or everything when options.limit is 0).
  StatusOr<nlohmann::json> List(const Resource& r, const std::string& ns,
                                const ListOptions& options);
  // All pages; items of every page in `items`, the last page's metadata.resourceVersion.
  StatusOr<nlohmann::json> ListAll(const Resource& r, const std::string& ns, ListOptions options);
  // Each page's items to `on_page` as it arrives; `on_restart` when an expired continue token
  // made the list start over (the pages given so far are void). Returns the list's
  // resourceVersion. `on_raw_page` (optional) is offered each page's body first; when it takes
  // it (returns true) the page is not parsed and `on_page` does not see it.
  StatusOr<std::string> ListPages(
      const Resource& r, const std::string& ns, ListOptions options,
      const std::function<void(std::vector<nlohmann::json>)>& on_page,
      const std::function<void()>& on_restart,
      const std::function<bool(std::string_view body)>& on_raw_page = nullptr);
  StatusOr<nlohmann::json> Create(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object, const WriteOptions& options = {});
  // Create for callers that do not use the stored object the server sends back (the operator's
  // pods, services and events): the same request, errors and retries, without decoding it.
  Status CreateOnly(const Resource& r, const std::string& ns, const nlohmann::json& object,
                    const WriteOptions& options = {});
  StatusOr<nlohmann::json> Update(const Resource& r, const std::string& ns,
                                  const nlohmann::json& object, const WriteOptions& options = {});
  StatusOr<nlohmann::json> UpdateStatus(const Resource& r, const std::string& ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options = {});
  StatusOr<nlohmann::json> Patch(const Resource& r, const std::string& ns, const std::string& name,
                                 PatchType type, const std::string& body,
                                 const WriteOptions& options = {},
                                 const std::string& subresource = "");
  Status Delete(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});

  // A GET of any path on the server (a service's proxy, another HTTP API) with more headers;
  // the body as it came. Errors as for the other calls.
  StatusOr<std::string> GetRaw(const std::string& path,
                               std::vector<std::pair<std::string, std::string>> headers = {});

  // A container's log as text (options.follow is ignored: see StreamPodLog).
  StatusOr<std::string> PodLog(const std::string& ns, const std::string& pod,
                               const PodLogOptions& options);
  // Follows a container's log: `on_data` gets the text as it arrives on the transport's thread
  // (return false to stop); `on_done` runs once: OK when the server ended the stream (the
  // container stopped), else why it ended.
  std::shared_ptr<Stream> StreamPodLog(const std::string& ns, const std::string& pod,
                                       PodLogOptions options,
                                       std::function<bool(std::string_view)> on_data,
                                       std::function<void(Status)> on_done);

  // Starts a watch from options.resource_version. `on_event` runs on the transport's thread
  // for each decoded event (return a non-OK status to stop); `on_done` runs once at the end:
  // OK when the server closed the stream normally, else why it ended (kGone when the server
  // says the resourceVersion is too old, as an HTTP 410 or as an ERROR event).
  std::shared_ptr<Stream> Watch(const Resource& r, const std::string& ns,
                                const ListOptions& options,
                                std::function<Status(WatchEvent)> on_event,
                                std::function<void(Status)> on_done);

  // Read-modify-write with optimistic concurrency: GET, `mutate` the object (return a non-OK
  // status to give up), PUT (or PUT status when `status_subresource`); on Conflict start again
  // from a fresh GET, up to `attempts` times with a short jittered pause.
  StatusOr<nlohmann::json> UpdateWithRetry(const Resource& r, const std::string& ns,
                                           const std::string& name,
                                           const std::function<Status(nlohmann::json&)>& mutate,
                                           bool status_subresource = false, int attempts = 10);

  RateLimiter& limiter() { return limiter_; }
  Transport& transport() { return *transport_; }

 private:
  // Sends with rate limiting and retries; maps non-2xx to a Status; parses the JSON body.
  StatusOr<nlohmann::json> Call(HttpRequest request, const std::string& what, bool idempotent);
  // The same, returning the body as it came.
  StatusOr<std::string> CallRaw(HttpRequest request, const std::string& what, bool idempotent);
  void Sleep(Duration d);

  std::unique_ptr<Transport> transport_;
  ClientOptions options_;
  const Clock* clock_;
  RateLimiter limiter_;
};

}  // namespace trainctl::kube
