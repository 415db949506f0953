// Unit tests of the event recorder's budget over the in-memory API (kube::FakeApi): events
// recorded over it are folded by job and reason as they arrive, every occurrence is in one
// Event, under it each event is its own; a recorder that stops while over its budget does not
// wait the budget out. Events the spam filter refuses wait, folded, for the object's next token
// (or the stop), and none is lost.
#include "kube/event_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/fake_api.h"

namespace trainctl::kube {
namespace {

constexpr const char* kEventsPath = "/api/v1/namespaces/ns/events";

class EventRecorderTest : public ::testing::Test {
 protected:
  EventRecorderTest() {
    auto api = std::make_unique<FakeApi>();
    api_ = api.get();
    ClientOptions options;
    options.qps = -1;
    options.max_retries = 0;
    client_ = std::make_unique<Client>(std::move(api), options, &clock_);
  }

  static EventInput Created(const std::string& job, const std::string& pod) {
    return {{"kubeflow.org/v1", "PyTorchJob", "ns", job, "uid-" + job},
            "Normal",
            "SuccessfulCreatePod",
            "Created pod: " + pod};
  }

  // The correlator's spam filter: `burst` Events per object, then one per `refill`.
  static CorrelatorOptions SpamFilter(int burst, Duration refill) {
    CorrelatorOptions options;
    options.spam_burst = burst;
    options.spam_refill = refill;
    return options;
  }

  RealClock clock_;
  FakeApi* api_;
  std::unique_ptr<Client> client_;
};

TEST_F(EventRecorderTest, OverTheBudgetEventsFoldAsTheyArriveAndNoneIsLost) {
  // One Event a second, none saved up beyond the first: "a" takes it, and the ten "b" events
  // that follow at once are over the budget.
  EventRecorder recorder(client_.get(), &clock_, {}, RecorderBudget{1, 1, 1000});
  recorder.Record(Created("a", "a-0"));
  for (int i = 0; i < 10; ++i) recorder.Record(Created("b", "b-" + std::to_string(i)));
  ASSERT_TRUE(recorder.Flush(Duration(10000)));
  RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.created, 2);
  EXPECT_EQ(stats.folded, 9);
  std::vector<nlohmann::json> events = api_->Objects(kEventsPath);
  ASSERT_EQ(events.size(), 2u);
  int total = 0;
  std::string folded;
  for (const nlohmann::json& e : events) {
    total += e["count"].get<int>();
    if (e["involvedObject"]["name"] == "b") folded = e["message"];
  }
  EXPECT_EQ(total, 11);
  EXPECT_EQ(folded, "Created pod: b-0, b-1, b-2, b-3, b-4, b-5, b-6, b-7, b-8, b-9");
}

TEST_F(EventRecorderTest, UnderTheBudgetEveryEventIsItsOwn) {
  EventRecorder recorder(client_.get(), &clock_, {}, RecorderBudget{1000, 100, 1000});
  for (int i = 0; i < 10; ++i) recorder.Record(Created("b", "b-" + std::to_string(i)));
  ASSERT_TRUE(recorder.Flush(Duration(10000)));
  EXPECT_EQ(recorder.stats().created, 10);
  EXPECT_EQ(recorder.stats().folded, 0);
  EXPECT_EQ(api_->Objects(kEventsPath).size(), 10u);
}

// Under the budget but behind: the API server holds the first write while nine more events
// of its kind arrive and wait longer than `fold_after`. The first goes alone; the next has
// waited and takes the rest of its kind with it.
TEST_F(EventRecorderTest, BehindASlowAPIServerTheEventsThatWaitedFold) {
  RecorderBudget budget;
  budget.fold_after = Duration(100);
  EventRecorder recorder(client_.get(), &clock_, {}, budget);
  api_->Hold();
  recorder.Record(Created("b", "b-0"));
  const MonoTime give_up = clock_.Monotonic() + Duration(10000);
  while (api_->Waiting() < 1 && clock_.Monotonic() < give_up)
    std::this_thread::sleep_for(Duration(5));
  ASSERT_EQ(api_->Waiting(), 1) << "the first write is held";
  for (int i = 1; i < 10; ++i) recorder.Record(Created("b", "b-" + std::to_string(i)));
  std::this_thread::sleep_for(Duration(150));
  api_->Release();
  ASSERT_TRUE(recorder.Flush(Duration(10000)));
  std::vector<nlohmann::json> events = api_->Objects(kEventsPath);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["count"].get<int>() + events[1]["count"].get<int>(), 10);
  EXPECT_EQ(recorder.stats().folded, 8);
}

TEST_F(EventRecorderTest, StopWritesWhatIsQueuedReturnsTheFinalStatsAndTakesNoMore) {
  EventRecorder recorder(client_.get(), &clock_, {}, RecorderBudget{});
  for (const char* job : {"a", "b", "c"}) recorder.Record(Created(job, std::string(job) + "-0"));
  RecorderStats stats = recorder.Stop();
  EXPECT_EQ(stats.created, 3);
  EXPECT_EQ(EventsLost(stats), 0);
  EXPECT_EQ(EventSummary(stats),
            "events: 3 created, 0 patched, 0 folded into another's write, none lost");
  recorder.Record(Created("d", "d-0"));  // after the stop: nothing writes it, counted as lost
  EXPECT_EQ(recorder.Stop().created, 3);
  EXPECT_EQ(recorder.stats().dropped_at_stop, 1);
  EXPECT_EQ(api_->Objects(kEventsPath).size(), 3u);
}

TEST(EventSummary, SaysWhatWasLostAndWhy) {
  RecorderStats s;
  s.created = 10;
  s.patched = 2;
  s.folded = 5;
  s.dropped_queue_full = 1;
  s.failed = 3;
  s.dropped_at_stop = 4;
  EXPECT_EQ(EventsLost(s), 8);
  EXPECT_EQ(EventSummary(s),
            "events: 10 created, 2 patched, 5 folded into another's write; lost 8 (1 with the "
            "queue full, 3 in failed writes, 4 still queued when the stop's drain time ran out)");
}

TEST_F(EventRecorderTest, StoppingOverTheBudgetWritesTheRestWithoutWaitingItOut) {
  {
    // One Event every 1,000 s: without an early end the recorder's destructor would wait that
    // long, past the test's time limit.
    EventRecorder recorder(client_.get(), &clock_, {}, RecorderBudget{0.001, 1, 1000});
    recorder.Record(Created("a", "a-0"));
    recorder.Record(Created("b", "b-0"));
    recorder.Record(Created("b", "b-1"));
  }
  std::vector<nlohmann::json> events = api_->Objects(kEventsPath);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["count"].get<int>() + events[1]["count"].get<int>(), 3);
}

// The operator's default bound holds a 1,000-job burst: each job's 8 pod and 8 service creations
// wait as two folded Events (2,000 distinct), none dropped, behind a budget that writes nothing
// until the stop (the bound of 1,000 lost the oldest half at 1,000 × 8).
TEST_F(EventRecorderTest, TheDefaultBoundHoldsAThousandJobsCreationsWhileTheyWait) {
  {
    RecorderBudget budget;
    budget.qps = 0.001;
    budget.burst = 1;
    budget.drain_limit = Duration(120000);  // the stop's drain is not what this pins (slow trees)
    EventRecorder recorder(client_.get(), &clock_, {}, budget);
    for (int j = 0; j < 1000; ++j) {
      const std::string job = "j" + std::to_string(j);
      for (int i = 0; i < 8; ++i) {
        EventInput service = Created(job, job + "-" + std::to_string(i));
        service.reason = "SuccessfulCreateService";
        recorder.Record(service);
        recorder.Record(Created(job, job + "-" + std::to_string(i)));
      }
    }
    EXPECT_EQ(recorder.stats().dropped_queue_full, 0);
  }
  long carried = 0;
  std::set<std::string> jobs;
  for (const nlohmann::json& e : api_->Objects(kEventsPath)) {
    carried += e["count"].get<int>();
    jobs.insert(e["involvedObject"]["name"].get<std::string>());
  }
  EXPECT_EQ(carried, 16000);
  EXPECT_EQ(jobs.size(), 1000u);
}

TEST_F(EventRecorderTest, EventsTheSpamFilterRefusesWaitFoldedAndAreWrittenWithTheNextToken) {
  // Two Events per object, then one a second: the other eight wait, folded into one.
  EventRecorder recorder(client_.get(), &clock_, SpamFilter(2, Duration(1000)), RecorderBudget{});
  for (int i = 0; i < 10; ++i) recorder.Record(Created("b", "b-" + std::to_string(i)));
  ASSERT_TRUE(recorder.Flush(Duration(10000)));
  EXPECT_EQ(api_->Objects(kEventsPath).size(), 2u);  // the burst; the rest is held
  EXPECT_EQ(recorder.stats().held_by_filter, 8);
  const MonoTime give_up = clock_.Monotonic() + Duration(10000);
  while (api_->Objects(kEventsPath).size() < 3 && clock_.Monotonic() < give_up)
    std::this_thread::sleep_for(Duration(20));
  std::vector<nlohmann::json> events = api_->Objects(kEventsPath);
  ASSERT_EQ(events.size(), 3u);
  int total = 0;
  for (const nlohmann::json& e : events) total += e["count"].get<int>();
  EXPECT_EQ(total, 10);
  std::vector<std::string> messages;
  for (const nlohmann::json& e : events) messages.push_back(e["message"]);
  EXPECT_NE(std::find(messages.begin(), messages.end(),
                      "Created pod: b-2, b-3, b-4, b-5, b-6, b-7, b-8, b-9"),
            messages.end());
}

TEST_F(EventRecorderTest, StoppingWritesWhatTheSpamFilterHoldsWithoutWaitingForIt) {
  {
    // One Event per object every 1,000 s after the first: a recorder that waited for the
    // filter at its stop would outlast the test's time limit.
    EventRecorder recorder(client_.get(), &clock_, SpamFilter(1, Duration(1000000)),
                           RecorderBudget{});
    for (int i = 0; i < 5; ++i) recorder.Record(Created("b", "b-" + std::to_string(i)));
    ASSERT_TRUE(recorder.Flush(Duration(10000)));
  }
  std::vector<nlohmann::json> events = api_->Objects(kEventsPath);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["count"].get<int>() + events[1]["count"].get<int>(), 5);
}

}  // namespace
}  // namespace trainctl::kube
