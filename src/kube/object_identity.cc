#include "kube/object_identity.h"

#include "kube/json_node.h"

namespace trainctl::kube {

std::optional<std::vector<ObjectIdentity>> ProjectIdentityList(std::string_view body) {
  std::vector<ObjectIdentity> out;
  bool read = ForEachListItem(body, [&](const SimdNode& item) {
    SimdNode md = item["metadata"];
    if (!md.is_object()) return;
    ObjectIdentity id;
    id.name = md["name"].str();
    if (id.name.empty()) return;
    id.namespace_ = md["namespace"].str();
    id.key = id.namespace_.empty() ? id.name : id.namespace_ + "/" + id.name;
    bool found = false;
    md["ownerReferences"].each([&](const SimdNode& ref) {
      if (found || !ref["controller"].is_true()) return;
      found = true;
      id.owner_uid = ParseUid(ref["uid"].str()).value_or(Uid{});
    });
    out.push_back(std::move(id));
  });
  if (!read) return std::nullopt;
  return out;
}

}  // namespace trainctl::kube
