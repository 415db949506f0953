#include "local/kubelet.h"

#include <algorithm>

namespace trainctl::local {

Duration RestartBackoff(int restarts) {
  long long ms = 1000;
  for (int i = 1; i < restarts && ms < 30000; ++i) ms *= 2;
  return Duration(std::min(ms, 30000LL));
}

}  // namespace trainctl::local
