// The precompiled header of every trainctl target (CMakeLists.txt, trainctl_pch): nlohmann-json,
// which nearly every file includes through api/job.h, parsed once instead of once per file. It
// only speeds the build: every file still includes what it uses. Keep it to this one header:
// force-including more of the standard library ahead of each file changed GCC 12's inlining
// enough to raise its -Warray-bounds false positives on std::string concatenation
// (docs/testing.md, "Build time").
#pragma once

#include <nlohmann/json.hpp>
