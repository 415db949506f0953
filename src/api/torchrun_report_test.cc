#include "api/torchrun_report.h"

#include <gtest/gtest.h>

#include <string>

namespace trainctl::api {
namespace {

TEST(TorchrunReportTest, ReadsTheAgentsReportOfAFailedWorker) {
  struct Row {
    std::string line;
    std::optional<TorchrunWorkerExit> want;
  };
  const Row rows[] = {
      // torch 1.13 (Debian's python3-torch), as printed here by a rank that exited with 7.
      {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7) local_rank: 0 "
       "(pid: 13346) of binary: /usr/bin/python3",
       TorchrunWorkerExit{7, 0, 13346}},
      // torch 2.x's glog-style prefix; a function entry point.
      {"E1129 05:30:55.123000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed "
       "(exitcode: 1) local_rank: 3 (pid: 99) of fn: main (start_method: spawn)",
       TorchrunWorkerExit{1, 3, 99}},
      // Killed by a signal: torchrun reports the negative signal number.
      {"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 "
       "(pid: 7) of binary: /usr/bin/python3",
       TorchrunWorkerExit{-9, 1, 7}},
      // Not the report: the ChildFailedError box, prose, broken numbers.
      {"  exitcode  : 7 (pid: 13346)", std::nullopt},
      {"training failed (exitcode: unknown)", std::nullopt},
      {"failed (exitcode: 7) local_rank: x (pid: 1) of binary: y", std::nullopt},
      {"failed (exitcode: 7) local_rank: 0 (pid: 1)", std::nullopt},
      {"failed (exitcode: 99999999999999999999) local_rank: 0 (pid: 1) of binary: y", std::nullopt},
      {"", std::nullopt},
      // Hostile numbers: two signs, the most negative value (its negation would overflow).
      {"failed (exitcode: --2147483648) local_rank: 0 (pid: 1) of binary: x", std::nullopt},
      {"failed (exitcode: --5) local_rank: 0 (pid: 1) of binary: x", std::nullopt},
      {"failed (exitcode: 1) local_rank: --2147483648 (pid: 1) of binary: x", std::nullopt},
      {"failed (exitcode: 1) local_rank: 0 (pid: --9223372036854775808) of binary: x",
       std::nullopt},
      {"failed (exitcode: -2147483648) local_rank: 0 (pid: 1) of binary: x",
       TorchrunWorkerExit{-2147483647 - 1, 0, 1}},
  };
  for (const Row& row : rows) EXPECT_EQ(ParseTorchrunWorkerExit(row.line), row.want) << row.line;
}

TEST(TorchrunReportTest, TheReportEndsItsLineAfterWhateverCameBefore) {
  // A sibling's progress bar left unfinished, redrawn for kilobytes, then the agent's report.
  std::string line;
  while (line.size() < 20000) line += "\r 50%|#####     | 5/10 [00:01<00:01]";
  line +=
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 7) local_rank: 1 "
      "(pid: 9) of binary: /usr/bin/python3";
  EXPECT_EQ(ParseTorchrunWorkerExit(line), (TorchrunWorkerExit{7, 1, 9}));
  // Only the last 4 KiB are read: a report followed by more than that is not.
  std::string buried = "failed (exitcode: 7) local_rank: 0 (pid: 1) of binary: y";
  buried += std::string(5000, 'x');
  EXPECT_EQ(ParseTorchrunWorkerExit(buried), std::nullopt);
  std::string repeated;
  for (int i = 0; i < 200; ++i) repeated += "failed (exitcode: ";
  EXPECT_EQ(ParseTorchrunWorkerExit(repeated), std::nullopt);
}

TEST(TorchrunReportTest, AnAgentThatRestartsItsWorkersIsNotAtItsBarrier) {
  EXPECT_FALSE(TorchrunMayRestartWorkers("", "torchrun train.py"));
  EXPECT_FALSE(TorchrunMayRestartWorkers("0", "torchrun train.py"));
  EXPECT_TRUE(TorchrunMayRestartWorkers("3", "torchrun train.py"));  // elasticPolicy.maxRestarts
  EXPECT_TRUE(TorchrunMayRestartWorkers("many", "torchrun train.py"));
  EXPECT_TRUE(TorchrunMayRestartWorkers("", "torchrun --max-restarts=2 train.py"));
  EXPECT_TRUE(TorchrunMayRestartWorkers("0", "torchrun --max_restarts 1 train.py"));
}

TEST(TorchrunReportTest, GlobalRankFromTheStaticRendezvous) {
  const std::string run = "torchrun train.py";
  EXPECT_EQ(TorchrunGlobalRank("1", "", run, 0), 1);  // torchrun's default: one process
  EXPECT_EQ(TorchrunGlobalRank("2", "4", run, 3), 11);
  EXPECT_EQ(TorchrunGlobalRank("0", "2", run, 1), 1);
  EXPECT_EQ(TorchrunGlobalRank("", "2", run, 1), std::nullopt);  // elastic: torchrun decides
  EXPECT_EQ(TorchrunGlobalRank("1", "auto", run, 0), std::nullopt);
  EXPECT_EQ(TorchrunGlobalRank("1", "2", run, 2), std::nullopt);  // not one of its local ranks
  EXPECT_EQ(TorchrunGlobalRank("-1", "2", run, 0), std::nullopt);
  EXPECT_EQ(TorchrunGlobalRank("2000000000", "4", run, 0), std::nullopt);  // would overflow
  // The command line sets its own count: the env's is not the one torchrun uses.
  EXPECT_EQ(TorchrunGlobalRank("1", "", "torchrun --nproc-per-node=4 train.py", 0), std::nullopt);
  EXPECT_EQ(TorchrunGlobalRank("1", "2", "torchrun --nproc_per_node 4 t.py", 0), std::nullopt);
}

}  // namespace
}  // namespace trainctl::api
