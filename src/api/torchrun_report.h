// What torchrun's agent prints when one of the worker processes it started exits failing:
//   torch 1.13: "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7)
//                local_rank: 0 (pid: 1234) of binary: /usr/bin/python3"
//   torch 2.x:  "E1129 05:30:55.123000 140 …/multiprocessing/api.py:869] failed (exitcode: 7)
//                local_rank: 0 (pid: 1234) of binary: /usr/bin/python3"
// ("of fn: …" when the entry point is a function). The agent prints it as soon as its monitor
// (every --monitor-interval, 5 s by default) sees the exit, then waits at its exit barrier for
// every other node's agent (300 s, not settable from torchrun's command line) before the
// replica itself exits with 1. Both substrates read this line from a replica's output, so a
// failed rank is known while its replica still runs (docs/status-machine.md, "A failed rank").
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainctl::api {

struct TorchrunWorkerExit {
  int exit_code = 0;
  int local_rank = 0;
  long long pid = 0;
  bool operator==(const TorchrunWorkerExit&) const = default;
};

// The worker exit one line reports; nullopt when `line` is not that report (the last 4 KiB of
// a line are read: the report ends its line, after whatever a sibling process left unfinished
// on it; the numbers must be whole decimal numbers that fit).
std::optional<TorchrunWorkerExit> ParseTorchrunWorkerExit(std::string_view line);

// The global rank of local rank `local_rank` on a replica whose env says PET_NODE_RANK
// `node_rank` and PET_NPROC_PER_NODE `nproc_per_node` ("" when unset: torchrun's default, 1)
// and which runs `command_line` (torchrun's static rendezvous: node ranks in order). nullopt
// when it cannot be known: no node rank (an elastic rendezvous assigns ranks itself), a
// process count that is not a plain number ("auto", "gpu"), or a command line that sets its
// own count (--nproc-per-node / --nproc_per_node).
std::optional<int> TorchrunGlobalRank(std::string_view node_rank, std::string_view nproc_per_node,
                                      std::string_view command_line, int local_rank);

// True when torchrun restarts its worker group after a failure instead of waiting at its exit
// barrier: PET_MAX_RESTARTS `max_restarts` is a number above 0 (or not a number), or the command
// line sets --max-restarts itself. Then a reported failure is a restart, not a failed rank.
bool TorchrunMayRestartWorkers(std::string_view max_restarts, std::string_view command_line);

}  // namespace trainctl::api
