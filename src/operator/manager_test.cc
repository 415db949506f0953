// Manager: parts start in the order they were added, the leader's after the others, and stop in
// reverse; a part that cannot start stops those before it and nothing after it starts.
#include "operator/manager.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainctl::op {
namespace {

struct Trace {
  std::vector<std::string> calls;
  Runnable Part(const std::string& name, bool leader_only = false, Status start = Status::Ok()) {
    return {name,
            [this, name, start] {
              calls.push_back("start " + name);
              return start;
            },
            [this, name] { calls.push_back("stop " + name); }, leader_only};
  }
};

TEST(ManagerTest, StartsInOrderWithTheLeadersPartsLastAndStopsInReverse) {
  FakeClock clock(Time{});
  std::atomic<bool> stop{false};
  Trace trace;
  Manager manager(&clock, std::nullopt);
  EXPECT_TRUE(manager.leading());  // no election: this replica leads
  manager.Add(trace.Part("recorder"));
  manager.Add(trace.Part("controller", /*leader_only=*/true));
  manager.Add(trace.Part("webhooks"));
  manager.Add({"signal", [&] {
                 stop = true;  // as SIGTERM would, once everything runs
                 return Status::Ok();
               },
               nullptr, /*leader_only=*/true});
  EXPECT_EQ(manager.Run(&stop), 0);
  EXPECT_EQ(trace.calls, (std::vector<std::string>{"start recorder", "start webhooks",
                                                   "start controller", "stop controller",
                                                   "stop webhooks", "stop recorder"}));
}

TEST(ManagerTest, APartThatCannotStartStopsThoseBeforeItAndExitsTwo) {
  FakeClock clock(Time{});
  std::atomic<bool> stop{false};
  Trace trace;
  Manager manager(&clock, std::nullopt);
  manager.Add(trace.Part("recorder"));
  manager.Add(trace.Part("webhooks", false, InvalidError("port 9443 is taken")));
  manager.Add(trace.Part("metrics"));
  manager.Add(trace.Part("controller", true));
  EXPECT_EQ(manager.Run(&stop), 2);
  EXPECT_EQ(trace.calls,
            (std::vector<std::string>{"start recorder", "start webhooks", "stop recorder"}));
}

TEST(ManagerTest, ALeaderPartThatCannotStartStopsEverythingStarted) {
  FakeClock clock(Time{});
  std::atomic<bool> stop{false};
  Trace trace;
  Manager manager(&clock, std::nullopt);
  manager.Add(trace.Part("recorder"));
  manager.Add(trace.Part("controller", true, InvalidError("no kinds")));
  EXPECT_EQ(manager.Run(&stop), 2);
  EXPECT_EQ(trace.calls,
            (std::vector<std::string>{"start recorder", "start controller", "stop recorder"}));
}

}  // namespace
}  // namespace trainctl::op
