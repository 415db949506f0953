#include "kube/store.h"

#include "kube/json_node.h"

namespace trainctl::kube {

std::string ObjectKey(const nlohmann::json& object) { return StoreKeyOf(JsonNode(&object)); }

}  // namespace trainctl::kube
