// The job commands that only read — get, describe, logs, wait — written once over the data
// layer (jobs/job_source.h), so they print the same on this machine and on a cluster. Each
// returns the process exit status (commands.h) and has printed its output or
// "error: <message>"; notes and warnings go to stderr.
#pragma once

#include <string>
#include <vector>

#include "jobs/job_source.h"

namespace trainctl::cli {

// `get [KIND] [NAME] [-o json|name|wide]`. `all_namespaces` adds the NAMESPACE column.
int GetJobs(jobs::JobSource& source, const std::vector<std::string>& args,
            const std::string& output, bool all_namespaces);
// `describe [KIND] NAME [-o json]`: the table view, or jobs::DetailDocument.
int DescribeJob(jobs::JobSource& source, const std::vector<std::string>& args,
                const std::string& output);
// `logs [KIND] NAME [--replica R] [-f]`: lines prefixed "[worker-0] " unless one replica is
// asked for.
int JobLogs(jobs::JobSource& source, const std::vector<std::string>& args,
            const std::string& replica, bool follow);
// `metrics [KIND] NAME [-r REPLICA] [-o json]`: per series its last value, last step and
// points; with -o json the series themselves (metrics/series.h). `replica` "": the job's
// metrics replica; another ("worker-1") is read from its log.
int JobMetrics(jobs::JobSource& source, const std::vector<std::string>& args,
               const std::string& output, const std::string& replica);
// `wait [KIND] NAME --for condition=C --timeout T`: polls until the condition, a failure, or
// the timeout, which says why the job is not there yet.
int WaitForJob(jobs::JobSource& source, const std::vector<std::string>& args,
               const std::string& for_condition, const std::string& timeout, const Clock& clock);

}  // namespace trainctl::cli
