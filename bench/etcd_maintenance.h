// etcd's own maintenance for the benchmarks, through its JSON gateway on the client port (the
// benchmark cluster's etcd serves plain HTTP on loopback, hack/cluster/up.sh): how big its data
// file is and how much of it is in use, and compacting the history to the current revision and
// defragmenting the file, so that every run starts from the same storage rather than from the
// history of the runs before it. A deleted namespace's pods and events stay in etcd's history
// until the API server compacts it (every 5 minutes, up to a revision 5 minutes old), and the
// file never shrinks until defragmented: it had reached 1.33 GB by the fourth 1,000 × 8 run
// (docs/benchmarks.md).
//
// Errors are values (an unreachable etcd, a reply that is not etcd's); nothing is retried.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace trainctl::bench {

struct EtcdSpace {
  int64_t revision = 0;
  int64_t db_bytes = 0;      // the data file's size
  int64_t in_use_bytes = 0;  // the part of it that holds data
};

// The reply of POST /v3/maintenance/status (int64 fields are JSON strings there).
StatusOr<EtcdSpace> ParseEtcdStatus(const nlohmann::json& reply);

// `endpoint`: "http://127.0.0.1:PORT".
StatusOr<EtcdSpace> ReadEtcdSpace(const std::string& endpoint);

struct EtcdCompaction {
  EtcdSpace before;
  EtcdSpace after;
  double seconds = 0;  // what compacting and defragmenting took
};

// Compacts the history up to the current revision (physically) and defragments the data file.
// A revision compacted already (the API server's own compaction got there first) is no error.
StatusOr<EtcdCompaction> CompactAndDefragment(const std::string& endpoint);

// "1331.2 MiB (in use 210.2 MiB) → 12.1 MiB (in use 11.9 MiB) in 2.3 s", for the run's log.
std::string Describe(const EtcdCompaction& c);

}  // namespace trainctl::bench
