// Upstream's defaulting (docs/compatibility.md), applied in memory to a decoded Job: replica
// type names normalized ("WORKER" → "Worker") where the kind does so, then the kind's own
// defaults (KindPlugin::Default), then the generic ones for what is still unset
// (runPolicy.cleanPodPolicy None, replicas 1, the kind's restart policy, its default port).
//
// Idempotent: applying it twice gives the same job. Never fails; pure.
#pragma once

#include "api/job.h"

namespace trainctl::api {

void ApplyDefaults(Job* job);

}  // namespace trainctl::api
