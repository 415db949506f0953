// Fuzz target: a watch stream as the operator's reflectors read it — split into lines, each
// decoded as a watch event, an ERROR event turned into a status, a pod projected into the
// compact cache entry and a job decoded — fed in two chunks split at the first byte's value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/manifest.h"
#include "kube/pod_summary.h"
#include "kube/watch_decoder.h"

using namespace trainctl;

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
    (void)kube::ProjectPod(event->object, {"training.kubeflow.org/job-name"});
    (void)api::PrepareJob(event->object);
    return Status::Ok();
  };
  if (splitter.Feed(all.substr(0, cut), on_line).ok())
    (void)splitter.Feed(all.substr(cut), on_line);
  return 0;
}
