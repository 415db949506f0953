#include "operator/cache_types.h"

#include <charconv>

#include "kube/object_identity.h"

namespace trainctl::op {
namespace {

// What the service cache keeps of an identity (the key, when wanted, is taken before).
ServiceSummary ServiceOf(kube::ObjectIdentity&& id) {
  return ServiceSummary{std::move(id.namespace_), std::move(id.name), id.owner_uid};
}

std::string StringAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string ControllerOwnerUid(const nlohmann::json& object) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return "";
  for (const nlohmann::json& ref : *refs) {
    if (!ref.is_object()) continue;
    auto controller = ref.find("controller");
    if (controller != ref.end() && controller->is_boolean() && controller->get<bool>())
      return StringAt(ref, "uid");
  }
  return "";
}

std::optional<CachedJob> ProjectJob(const nlohmann::json& object) {
  if (!object.is_object()) return std::nullopt;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return std::nullopt;
  CachedJob job;
  job.name = StringAt(*meta, "name");
  if (job.name.empty()) return std::nullopt;
  job.namespace_ = StringAt(*meta, "namespace");
  job.uid = StringAt(*meta, "uid");
  job.resource_version = StringAt(*meta, "resourceVersion");
  if (meta->contains("managedFields")) {
    nlohmann::json copy = object;
    copy["metadata"].erase("managedFields");
    job.text = copy.dump();
  } else {
    job.text = object.dump();
  }
  return job;
}

std::optional<ServiceSummary> ProjectService(const nlohmann::json& object) {
  std::optional<kube::ObjectIdentity> id = kube::ProjectIdentity(object);
  if (!id) return std::nullopt;
  return ServiceOf(std::move(*id));
}

std::optional<std::vector<std::pair<std::string, ServiceSummary>>> ProjectServiceList(
    std::string_view body) {
  std::optional<std::vector<kube::ObjectIdentity>> ids = kube::ProjectIdentityList(body);
  if (!ids) return std::nullopt;
  std::vector<std::pair<std::string, ServiceSummary>> out;
  out.reserve(ids->size());
  for (kube::ObjectIdentity& id : *ids)
    out.emplace_back(std::move(id.key), ServiceOf(std::move(id)));
  return out;
}

std::optional<kube::EventProjection<ServiceSummary>> ProjectServiceEvent(std::string_view event) {
  std::optional<kube::EventProjection<kube::ObjectIdentity>> read =
      kube::ProjectIdentityEvent(event);
  if (!read) return std::nullopt;
  kube::EventProjection<ServiceSummary> out{std::move(read->key), std::nullopt};
  if (read->value) out.value = ServiceOf(std::move(*read->value));
  return out;
}

bool NewerResourceVersion(const std::string& a, const std::string& b) {
  unsigned long long x = 0, y = 0;
  auto [pa, ea] = std::from_chars(a.data(), a.data() + a.size(), x);
  auto [pb, eb] = std::from_chars(b.data(), b.data() + b.size(), y);
  if (ea != std::errc() || eb != std::errc() || pa != a.data() + a.size() ||
      pb != b.data() + b.size())
    return false;
  return x > y;
}

}  // namespace trainctl::op
