// Container runtimes, the I/O half of local/container_runtime.h: pre-flight (is the runtime
// there, which version, what this host needs), image presence, and removing the containers a
// runner that is gone left behind.
//
// Every call runs the runtime's client to completion under a deadline (common/subprocess.h)
// with the caller's environment; nothing here starts a daemon.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "local/container_runtime.h"

namespace trainctl::local {

// Finds `kind`'s client on PATH, reads its info, this process's rlimits, pid_max and the cgroup
// layout, and decides the run flags (DecideRuntimeHost). kFailedPrecondition, naming what is
// missing and what to do, when the client is not installed, its daemon is not reachable (Docker),
// or it cannot run containers here. With `want_gpus`, also that it can hand GPUs to a container
// (podman: a CDI spec for nvidia.com/gpu; docker: the nvidia runtime).
StatusOr<RuntimeHost> ProbeRuntime(RuntimeKind kind, const std::vector<std::string>& env,
                                   bool want_gpus);

// Whether `image` is in the runtime's local store.
bool ImagePresent(const RuntimeHost& host, const std::vector<std::string>& env,
                  const std::string& image);

// Removes (stop, no grace) every container labelled by a runner that is no longer alive, and
// with `job` set (a kLabelJob value) also that job's containers whatever their runner. Returns
// the names removed.
std::vector<std::string> RemoveLeftoverContainers(const RuntimeHost& host,
                                                  const std::vector<std::string>& env,
                                                  const std::string& job = "");

}  // namespace trainctl::local
