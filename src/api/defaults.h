// Upstream's defaulting (docs/compatibility.md), applied in memory to a decoded Job.
//
// Idempotent: applying it twice gives the same job. Never fails; pure.
#pragma once

#include "api/job.h"

namespace trainctl::api {

void ApplyDefaults(Job* job);

}  // namespace trainctl::api
