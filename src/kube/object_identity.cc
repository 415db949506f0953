#include "kube/object_identity.h"

#include "kube/json_node.h"

namespace trainctl::kube {
namespace {

template <typename Node>
std::optional<ObjectIdentity> IdentityOf(const Node& object) {
  Node md = object["metadata"];
  if (!md.is_object()) return std::nullopt;
  ObjectIdentity id;
  id.name = md["name"].str();
  if (id.name.empty()) return std::nullopt;
  id.namespace_ = md["namespace"].str();
  id.key = StoreKey(id.namespace_, id.name);
  bool found = false;
  md["ownerReferences"].each([&](const Node& ref) {
    if (found || !ref["controller"].is_true()) return;
    found = true;
    id.owner_uid = ParseUid(ref["uid"].str()).value_or(Uid{});
  });
  return id;
}

}  // namespace

std::string StoreKey(const std::string& namespace_, const std::string& name) {
  return namespace_.empty() ? name : namespace_ + "/" + name;
}

std::optional<ObjectIdentity> ProjectIdentity(const nlohmann::json& object) {
  return IdentityOf(JsonNode(&object));
}

std::optional<std::vector<ObjectIdentity>> ProjectIdentityList(std::string_view body) {
  std::vector<ObjectIdentity> out;
  bool read = ForEachListItem(body, [&](const SimdNode& item) {
    if (std::optional<ObjectIdentity> id = IdentityOf(item)) out.push_back(std::move(*id));
  });
  if (!read) return std::nullopt;
  return out;
}

std::optional<EventProjection<ObjectIdentity>> ProjectIdentityEvent(std::string_view event_text) {
  return ProjectEventObject<ObjectIdentity>(
      event_text, [](const SimdNode& object) { return IdentityOf(object); });
}

}  // namespace trainctl::kube
