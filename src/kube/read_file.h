// Reading a whole small file (kubeconfig, certificate, token) into memory.
//
// I/O; thread-safe (no shared state).
#pragma once

#include <string>

#include "common/status.h"

namespace trainctl::kube {

// The file's bytes. NotFound when it does not exist, Io for other failures; the message is
// "<path>: <reason>".
StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace trainctl::kube
