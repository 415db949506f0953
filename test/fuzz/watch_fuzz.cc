// Fuzz target: a watch stream as the operator's reflectors read it — split into lines, each
// decoded as a watch event, an ERROR event turned into a status, a pod projected into the
// compact cache entry both ways (from a document and straight from the event's text, which
// must agree) and a job decoded — fed in two chunks split at the first byte's value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/manifest.h"
#include "kube/pod_summary.h"
#include "kube/store.h"
#include "kube/watch_decoder.h"

using namespace trainctl;

namespace {

const std::vector<std::string> kKeep = {"training.kubeflow.org/job-name",
                                        "training.kubeflow.org/replica-type"};

bool Same(const kube::PodSummary& a, const kube::PodSummary& b) {
  if (a.namespace_ != b.namespace_ || a.name != b.name ||
      a.resource_version != b.resource_version || a.node_name != b.node_name || a.uid != b.uid ||
      a.owner_uid != b.owner_uid || a.phase != b.phase || a.terminating != b.terminating ||
      a.label_values != b.label_values || a.containers.size() != b.containers.size() ||
      !a.detail != !b.detail)
    return false;
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const kube::ContainerSummary &x = a.containers[i], &y = b.containers[i];
    if (x.name != y.name || x.restart_count != y.restart_count || x.exit_code != y.exit_code ||
        x.terminated != y.terminated)
      return false;
  }
  if (!a.detail) return true;
  const kube::PodDetail &x = *a.detail, &y = *b.detail;
  if (x.unschedulable != y.unschedulable || x.scheduler_name != y.scheduler_name ||
      x.scheduled != y.scheduled || x.scheduling_seen != y.scheduling_seen ||
      x.waiting_container != y.waiting_container || x.waiting_init != y.waiting_init ||
      x.waiting_reason != y.waiting_reason || x.waiting_message != y.waiting_message ||
      x.pod_reason != y.pod_reason || x.pod_message != y.pod_message ||
      x.ends.size() != y.ends.size())
    return false;
  for (size_t i = 0; i < x.ends.size(); ++i)
    if (x.ends[i].container != y.ends[i].container || x.ends[i].reason != y.ends[i].reason ||
        x.ends[i].message != y.ends[i].message || x.ends[i].finished_at != y.ends[i].finished_at)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t cut = std::min<size_t>(data[0], all.size());
  kube::LineSplitter splitter(1u << 20);
  auto on_line = [](std::string_view line) {
    StatusOr<kube::WatchEvent> event = kube::ParseWatchEvent(line);
    if (!event.ok()) return Status::Ok();
    if (event->type == kube::WatchEventType::kError)
      (void)kube::WatchErrorStatus(*event, "watch fuzz");
    nlohmann::json object = kube::WatchEventObject(*event);
    if (object.is_discarded()) std::abort();  // accepted events always decode
    std::optional<kube::PodSummary> pod = kube::ProjectPod(object, kKeep);
    if (std::optional<kube::EventProjection<kube::PodSummary>> fast =
            kube::ProjectPodEvent(event->text, kKeep)) {
      if (fast->key != kube::ObjectKey(object) || fast->value.has_value() != pod.has_value() ||
          (pod && !Same(*fast->value, *pod)))
        std::abort();  // the two readers disagree
    }
    (void)api::PrepareJob(object);
    return Status::Ok();
  };
  if (splitter.Feed(all.substr(0, cut), on_line).ok())
    (void)splitter.Feed(all.substr(cut), on_line);
  return 0;
}
