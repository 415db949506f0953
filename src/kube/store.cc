#include "kube/store.h"

#include "kube/object_identity.h"

namespace trainctl::kube {

std::string ObjectKey(const nlohmann::json& object) {
  if (!object.is_object()) return "";
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto name = md->find("name");
  if (name == md->end() || !name->is_string()) return "";
  auto ns = md->find("namespace");
  return StoreKey(ns != md->end() && ns->is_string() ? ns->get<std::string>() : "",
                  name->get<std::string>());
}

}  // namespace trainctl::kube
