#include "operator/sync_spacing.h"

#include <algorithm>

namespace trainctl::op {

std::optional<Time> QuietUntil(Time sync_ended, Duration took) {
  if (took < kMinSpacedSync) return std::nullopt;
  return sync_ended + std::min(took * kSyncSpacingFactor, kMaxSyncSpacing);
}

}  // namespace trainctl::op
