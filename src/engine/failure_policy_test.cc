// Unit tests for the failure-policy step (engine/failure_policy.h): every restart policy ×
// exit code × in or out of the spec × backoff state, as one table.
#include "engine/failure_policy.h"

#include <gtest/gtest.h>

#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using test::MakeJob;
using V = FailureVerdict;

struct Row {
  std::string policy;
  std::optional<int> exit_code;
  bool in_spec;
  std::string backoff;  // runPolicy, e.g. "{backoffLimit: 0}"; "" none
  int retries_before;
  V verdict;
  int retries_after;
};

TEST(DecideFailures, EveryPolicyExitCodeAndBackoffState) {
  const Row rows[] = {
      {"Never", 1, true, "", 0, V::kNone, 0},
      {"Never", 137, true, "", 0, V::kNone, 0},
      {"OnFailure", 1, true, "", 0, V::kRestart, 1},
      {"OnFailure", 1, false, "", 0, V::kNone, 0},  // scaled away: removed, not retried
      {"Always", 0, true, "", 2, V::kRestart, 3},
      {"OnFailure", 1, true, "{backoffLimit: 3}", 3, V::kBackoffExceeded, 3},
      {"OnFailure", 1, true, "{backoffLimit: 3}", 2, V::kRestart, 3},
      {"ExitCode", 137, true, "", 0, V::kRestart, 1},           // killed by a signal: retryable
      {"ExitCode", std::nullopt, true, "", 0, V::kRestart, 1},  // unknown: retryable
      {"ExitCode", 1, true, "", 0, V::kPermanent, 0},           // 1–127: permanent
      {"ExitCode", 127, true, "", 0, V::kPermanent, 0},
      {"ExitCode", 128, true, "{backoffLimit: 0}", 0, V::kBackoffExceeded, 0},
      {"ExitCode", 137, false, "", 0, V::kPermanent, 0},  // scaled away: fails the job, as before
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.policy + " exit " + (row.exit_code ? std::to_string(*row.exit_code) : "?") +
                 (row.in_spec ? "" : " scaled away") + " " + row.backoff);
    api::Job job =
        MakeJob("PyTorchJob", {{"Master", 1, "Never"}, {"Worker", 2, row.policy}}, "", row.backoff);
    FailureDecision d =
        DecideFailures(job, {{"Worker", 1, row.exit_code, row.in_spec}}, row.retries_before);
    ASSERT_EQ(d.verdicts.size(), 1u);
    EXPECT_EQ(d.verdicts[0], row.verdict);
    EXPECT_EQ(d.retries, row.retries_after);
    bool fatal = row.verdict == V::kBackoffExceeded || row.verdict == V::kPermanent;
    EXPECT_EQ(d.fatal.has_value(), fatal);
  }
}

TEST(DecideFailures, RetriesCountInOrderAndTheFirstFatalVerdictIsKept) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "ExitCode"}, {"Worker", 3, "OnFailure"}}, "",
                         "{backoffLimit: 2}");
  FailureDecision d = DecideFailures(job,
                                     {{"Master", 0, 2, true},
                                      {"Worker", 0, 1, true},
                                      {"Worker", 1, 1, true},
                                      {"Worker", 2, 1, true}},
                                     1);
  EXPECT_EQ(d.verdicts,
            (std::vector<V>{V::kPermanent, V::kRestart, V::kBackoffExceeded, V::kBackoffExceeded}));
  EXPECT_EQ(d.retries, 2);
  EXPECT_EQ(d.fatal, 0u);
}

}  // namespace
}  // namespace trainctl::engine
