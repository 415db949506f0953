// Connect: a ready Client for a RestConfig (from a kubeconfig or in-cluster). The transport
// gets the server, CA, TLS and proxy settings; every request takes its credentials from a
// TokenSource (fixed, a token file re-read as it rotates, or an exec plugin cached until
// expiry), which is invalidated after a 401 so the retry uses fresh credentials. The rate
// limit comes from the config unless `options` sets one.
//
// Not thread-related itself; the returned Client is thread-safe.
#pragma once

#include <memory>

#include "kube/client.h"
#include "kube/config.h"

namespace trainctl::kube {

StatusOr<std::unique_ptr<Client>> Connect(const RestConfig& config, const Clock* clock,
                                          std::optional<ClientOptions> options = std::nullopt);

}  // namespace trainctl::kube
