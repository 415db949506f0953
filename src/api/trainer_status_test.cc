// The runtime status report's decoding and checks (Trainer v2.3's UpdateTrainJobStatusRequest).
#include "api/trainer_status.h"

#include <gtest/gtest.h>

namespace trainctl::api {
namespace {

using nlohmann::json;

std::string Report(const json& trainer_status) {
  return json{{"trainerStatus", trainer_status}}.dump();
}

std::string MessageOf(const std::string& body) {
  StatusOr<TrainerStatusReport> r = DecodeTrainerStatusReport(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? "" : r.status().message();
}

TEST(TrainerStatusTest, UpstreamsOwnReportDecodesAndRoundTrips) {
  // What upstream's e2e status_update.py sends.
  json status = {{"progressPercentage", 42},
                 {"estimatedRemainingSeconds", 120},
                 {"metrics", json::array({{{"name", "loss"}, {"value", "0.123"}},
                                          {{"name", "accuracy"}, {"value", "0.95"}}})},
                 {"lastUpdatedTime", "2026-11-30T12:00:00.123456+00:00"}};
  StatusOr<TrainerStatusReport> r = DecodeTrainerStatusReport(Report(status));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->status);
  EXPECT_EQ(r->status->progress_percentage, 42);
  EXPECT_EQ(r->status->estimated_remaining_seconds, 120);
  ASSERT_EQ(r->status->metrics.size(), 2u);
  EXPECT_EQ(r->status->metrics[1].name, "accuracy");
  json out = TrainerStatusJson(*r->status);
  EXPECT_EQ(out["lastUpdatedTime"], "2026-11-30T12:00:00Z");
  EXPECT_EQ(out["metrics"], status["metrics"]);
  EXPECT_EQ(out["progressPercentage"], 42);
  StatusOr<TrainerStatusReport> again = DecodeTrainerStatusReport(Report(out));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again->status == *DecodeTrainerStatusReport(Report(out))->status);
}

TEST(TrainerStatusTest, NoTrainerStatusIsAnEmptyReport) {
  for (const char* body : {"{}", R"({"trainerStatus": null})"}) {
    StatusOr<TrainerStatusReport> r = DecodeTrainerStatusReport(body);
    ASSERT_TRUE(r.ok()) << body;
    EXPECT_FALSE(r->status) << body;
  }
  // Only lastUpdatedTime: a report of nothing but its time is kept (no field left out wrongly).
  StatusOr<TrainerStatusReport> r =
      DecodeTrainerStatusReport(Report({{"lastUpdatedTime", "2026-11-30T12:00:00Z"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(TrainerStatusJson(*r->status), json({{"lastUpdatedTime", "2026-11-30T12:00:00Z"}}));
}

TEST(TrainerStatusTest, BadReportsNameTheFieldAndWhatWasExpected) {
  const json when = "2026-11-30T12:00:00Z";
  EXPECT_EQ(MessageOf(Report({{"progressPercentage", 101}, {"lastUpdatedTime", when}})),
            "trainerStatus.progressPercentage: Invalid value: 101: must be between 0 and 100");
  EXPECT_EQ(MessageOf(Report({{"progressPercentage", -1}, {"lastUpdatedTime", when}})),
            "trainerStatus.progressPercentage: Invalid value: -1: must be between 0 and 100");
  EXPECT_NE(
      MessageOf(Report({{"estimatedRemainingSeconds", 3000000000u}, {"lastUpdatedTime", when}}))
          .find("trainerStatus.estimatedRemainingSeconds: Invalid value: 3000000000"),
      std::string::npos);
  EXPECT_NE(MessageOf(Report({{"progressPercentage", "42"}, {"lastUpdatedTime", when}}))
                .find("must be an integer"),
            std::string::npos);
  EXPECT_EQ(MessageOf(Report({{"progressPercentage", 4}})),
            "trainerStatus.lastUpdatedTime: Required value: lastUpdatedTime is required when "
            "trainerStatus is present");
  EXPECT_NE(MessageOf(Report({{"lastUpdatedTime", "yesterday"}})).find("RFC 3339"),
            std::string::npos);
  std::string long_name(65, 'x');
  std::string message = MessageOf(
      Report({{"metrics", json::array({{{"name", long_name}, {"value", "1"}}, {{"name", "ok"}}})},
              {"lastUpdatedTime", when}}));
  EXPECT_NE(message.find("trainerStatus.metrics[0].name: Invalid value"), std::string::npos)
      << message;
  EXPECT_NE(message.find("trainerStatus.metrics[1].value: Required value"), std::string::npos)
      << message;
  json many = json::array();
  for (int i = 0; i < 257; ++i) many.push_back({{"name", "m"}, {"value", "1"}});
  EXPECT_NE(MessageOf(Report({{"metrics", many}, {"lastUpdatedTime", when}}))
                .find("must have at most 256 items"),
            std::string::npos);
}

TEST(TrainerStatusTest, HostileBodiesAreRefusedBoundedly) {
  EXPECT_EQ(MessageOf("not json").find("the report is not a JSON object"), 0u);
  EXPECT_EQ(MessageOf("[1, 2]"), "the report is not a JSON object");
  EXPECT_NE(MessageOf(R"({"trainerStatus": 7})").find("must be an object"), std::string::npos);
  std::string deep(5000, '[');
  EXPECT_NE(MessageOf(deep).find("nested deeper"), std::string::npos);
  std::string big = R"({"trainerStatus": {"pad": ")" + std::string(kMaxReportBytes, 'x') + "\"}}";
  EXPECT_NE(MessageOf(big).find("larger than"), std::string::npos);
}

TEST(TrainerStatusTest, MetricTextIsCountedInCharactersAsTheCrdDoes) {
  // 64 two-byte characters (128 bytes) are within the CRD's maxLength of 64; 65 are not, and
  // the message quotes a valid UTF-8 prefix.
  std::string sixty_four;
  for (int i = 0; i < 64; ++i) sixty_four += "\u00e9";
  auto body = [](const std::string& value) {
    return nlohmann::json{{"trainerStatus",
                           {{"metrics", nlohmann::json::array({{{"name", "m"}, {"value", value}}})},
                            {"lastUpdatedTime", "2026-11-30T00:00:00Z"}}}}
        .dump();
  };
  StatusOr<TrainerStatusReport> fits = DecodeTrainerStatusReport(body(sixty_four));
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->status->metrics[0].value, sixty_four);
  StatusOr<TrainerStatusReport> over = DecodeTrainerStatusReport(body(sixty_four + "\u00e9"));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("must be 1-64 characters long"), std::string::npos);
  EXPECT_NO_THROW(nlohmann::json(over.status().message()).dump());
}

TEST(TrainerStatusTest, AV1JobsAnnotationIsShownAsItsTrainerStatus) {
  json job = {{"kind", "PyTorchJob"},
              {"metadata",
               {{"annotations",
                 {{kTrainerStatusAnnotation,
                   R"({"progressPercentage": 7, "lastUpdatedTime": "2026-11-30T00:00:00Z"})"}}}}}};
  ShowTrainerStatusAnnotation(&job);
  EXPECT_EQ(job["status"]["trainerStatus"]["progressPercentage"], 7);
  for (const char* bad : {"[1]", "not json", ""}) {
    json other = {{"kind", "TFJob"},
                  {"metadata", {{"annotations", {{kTrainerStatusAnnotation, bad}}}}},
                  {"status", {{"conditions", json::array()}}}};
    ShowTrainerStatusAnnotation(&other);
    EXPECT_FALSE(other["status"].contains("trainerStatus")) << bad;
  }
  json trainjob = {{"kind", "TrainJob"},
                   {"metadata", {{"annotations", {{kTrainerStatusAnnotation, "{}"}}}}}};
  ShowTrainerStatusAnnotation(&trainjob);  // a TrainJob's own field is the one
  EXPECT_FALSE(trainjob.contains("status"));
}

TEST(TrainerStatusTest, PathAndAudienceAreUpstreams) {
  EXPECT_EQ(TrainerStatusPath("ns", "tj"),
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status");
  EXPECT_EQ(TrainerStatusAudience("ns", "tj"),
            "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status");
}

}  // namespace
}  // namespace trainctl::api
