// How dear a wake-up across CPUs is on this machine right now: one byte sent back and forth
// between two threads pinned to two different CPUs, through two pipes, timed. Each round trip
// is two wake-ups of a thread sleeping on the other CPU: what the control plane's processes do
// all the time (a goroutine handing a request to another, a watch fanning out), and what a
// virtual machine pays for in exits and in the host's scheduling of the vCPU that sleeps. The
// sort of speed_probe.h never sleeps, so it cannot see that cost; on the 2-core KVM kind of
// docs/benchmarks.md a round trip took 40-60 µs across CPUs and 6 µs on one.
//
// Reads the steady clock and makes threads and pipes; errors as values.
#pragma once

#include "common/status.h"

namespace trainctl::bench {

// The fastest of `tries` (at least one) runs of `round_trips`, in microseconds per round trip,
// between the first two CPUs the process may run on. Invalid for round_trips < 1;
// FailedPrecondition when the process may run on fewer than two CPUs; Internal when a pipe, a
// pin or a thread cannot be had (the message says which).
StatusOr<double> TimeWakeRoundTrips(int round_trips = 20000, int tries = 3);

}  // namespace trainctl::bench
