// The exit status of every trainctl command, one mapping for both backends (local state folder
// and API server): 0 the command did what was asked (for `run`/`wait`: the job succeeded),
// 1 it failed (the job failed, the API or the file system refused), 2 bad input the user fixes
// by changing the command (an invalid manifest, flag, kind or name; a job that already exists),
// 128+N interrupted by signal N (decided by the command that saw the signal). Pure.
#pragma once

#include "common/status.h"

namespace trainctl::cli {

inline int ExitFor(const Status& status) {
  if (status.ok()) return 0;
  return status.code() == StatusCode::kInvalid || status.code() == StatusCode::kAlreadyExists
             ? 2
             : 1;
}

}  // namespace trainctl::cli
