// What the operator's informers keep per object: compact projections, not JSON documents.
//
// - CachedJob: a job as its compact JSON text (managedFields dropped) plus the fields the
//   event handlers need without parsing; a sync parses the text again (cheap next to the
//   API calls it makes). 1,000 jobs cost ~2 MB instead of ~25 MB of nlohmann::json trees.
// - ServiceSummary: identity, controller owner and the replica labels of a headless service.
//
// Projectors are pure and thread-safe; they never throw on odd input (nullopt = do not cache).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/pod_summary.h"
#include "kube/watch_decoder.h"

namespace trainctl::op {

struct CachedJob {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string text;  // the object as compact JSON without metadata.managedFields
};

struct ServiceSummary {
  std::string namespace_;
  std::string name;
  kube::Uid owner_uid{};
};

std::optional<CachedJob> ProjectJob(const nlohmann::json& object);
std::optional<ServiceSummary> ProjectService(const nlohmann::json& object);
// A list page of services, straight from its text: what ProjectService gives for each item,
// keyed as the store keys it; nullopt when the page cannot be read that way.
std::optional<std::vector<std::pair<std::string, ServiceSummary>>> ProjectServiceList(
    std::string_view body);
// A watch event's service, straight from the event's text: what the store's key and
// ProjectService give; nullopt when the text cannot be read that way.
std::optional<kube::EventProjection<ServiceSummary>> ProjectServiceEvent(std::string_view event);

// The controller owner's UID of any object ("" when none).
std::string ControllerOwnerUid(const nlohmann::json& object);

// Compares two resourceVersions as etcd revisions (decimal); false when either is not a number.
bool NewerResourceVersion(const std::string& a, const std::string& b);

}  // namespace trainctl::op
