// PeekListMetadata: a list response's `metadata.continue` and `metadata.resourceVersion`, read
// without building its items, so that the next page can be asked for while this one is decoded.
//
// The API server writes `metadata` before `items`, and the scan stops at the end of
// `metadata`; a body that puts it later is still read correctly, only scanned further. Values
// that are not strings count as absent (as StringAt reads them). Returns nullopt when the body
// is not a JSON object or ends before its `metadata` does; the caller's full parse then
// reports what is wrong with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainctl::kube {

struct ListMetadata {
  std::string continue_token;
  std::string resource_version;
};

std::optional<ListMetadata> PeekListMetadata(std::string_view body);

}  // namespace trainctl::kube
