// The API requests one identity made, counted from the API server's audit log (JSON lines,
// level Metadata): the same count for every operator, whatever its own metrics say. Reads the
// log from a byte offset (where the run began) to its end; each request is counted once (by
// auditID, whatever stages the policy logs). Not thread-safe; a benchmark helper.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace trainctl::bench {

struct AuditCounts {
  std::map<std::string, long> by_request;  // "verb resource[/subresource]" → requests
  long total = 0;
  long conflicts = 0;  // answered 409
  // Writes of a job's status: update or patch of <plural>/status for a kubeflow.org resource.
  long job_status_writes = 0;
  // Requests that write (create, update, patch, delete, deletecollection), Leases aside: leader
  // election renews its Lease whatever the jobs do, and not every operator elects.
  long writes = 0;
};

// The size of the log now (0 when it does not exist yet): where the next run's requests begin.
uint64_t AuditLogSize(const std::string& path);

// Requests by `username` logged after `offset`. Lines that are not audit events are skipped.
AuditCounts CountAudit(const std::string& path, uint64_t offset, const std::string& username);

}  // namespace trainctl::bench
