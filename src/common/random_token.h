// A secret token: `bytes` random bytes from OpenSSL's generator, written as lower-case hex (the
// dashboard's session and CSRF tokens, a local run's status endpoint token). No I/O besides the
// random source; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace trainctl {

StatusOr<std::string> RandomHexToken(size_t bytes = 32);

}  // namespace trainctl
