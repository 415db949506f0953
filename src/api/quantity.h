// Kubernetes resource quantities ("100m", "1.5", "512Mi", "2G", "1e3") as whole milli-units, for
// adding up pod requests (gang scheduling's minResources). Binary (Ki…Ei) and decimal (n, u,
// m, k, M…E) suffixes and exponents are accepted; amounts below one milli-unit round up, as
// Kubernetes' MilliValue does. Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace trainctl::api {

// kInvalid names the text (also when it does not fit in int64 milli-units).
StatusOr<int64_t> ParseQuantityMilli(const std::string& text);

// "1500m"; "2" when the value is whole; "1536Mi", "2Gi" for whole multiples of 1Mi.
std::string FormatQuantityMilli(int64_t milli);

}  // namespace trainctl::api
