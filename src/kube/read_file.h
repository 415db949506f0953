// Reading a whole small file (kubeconfig, certificate, token) into memory.
//
// I/O; thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace trainctl::kube {

inline constexpr size_t kMaxWholeFileBytes = 64u << 20;

// The file's bytes. NotFound when it does not exist, Invalid when it is longer than `max_bytes`
// (a kubeconfig pointing at /dev/zero must not fill memory), Io for other failures; the message
// is "<path>: <reason>".
StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes = kMaxWholeFileBytes);

}  // namespace trainctl::kube
