// The MPIJob conversion webhook's review: all objects converted or none, failures naming the
// object, bodies that are not ConversionReviews refused.
#include "admission/conversion_review.h"

#include <gtest/gtest.h>

namespace trainctl::admission {
namespace {

using nlohmann::json;

json Object(const std::string& version, const std::string& name) {
  return {{"apiVersion", version},
          {"kind", "MPIJob"},
          {"metadata", {{"name", name}}},
          {"spec", {{"slotsPerWorker", 1}, {"mpiImplementation", "MPICH"}}}};
}

std::string Body(const std::string& desired, json objects) {
  return json{{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "ConversionReview"},
              {"request", {{"uid", "u-1"}, {"desiredAPIVersion", desired}, {"objects", objects}}}}
      .dump();
}

TEST(ConversionReviewTest, ConvertsEveryObjectAndEchoesTheUid) {
  json review = ReviewConversion(Body(
      "kubeflow.org/v1", {Object("kubeflow.org/v2beta1", "a"), Object("kubeflow.org/v1", "b")}));
  EXPECT_EQ(review["kind"], "ConversionReview");
  const json& response = review["response"];
  EXPECT_EQ(response["uid"], "u-1");
  EXPECT_EQ(response["result"]["status"], "Success");
  ASSERT_EQ(response["convertedObjects"].size(), 2u);
  for (const json& o : response["convertedObjects"]) EXPECT_EQ(o["apiVersion"], "kubeflow.org/v1");
  EXPECT_FALSE(response["convertedObjects"][0]["spec"].contains("mpiImplementation"));
}

TEST(ConversionReviewTest, OneBadObjectFailsTheReviewNamingIt) {
  json bad = Object("kubeflow.org/v1", "b");
  bad["kind"] = "PyTorchJob";
  json review =
      ReviewConversion(Body("kubeflow.org/v2beta1", {Object("kubeflow.org/v1", "a"), bad}));
  const json& response = review["response"];
  EXPECT_EQ(response["result"]["status"], "Failure");
  EXPECT_TRUE(response["convertedObjects"].empty());
  EXPECT_NE(response["result"]["message"].get<std::string>().find("request.objects[1] (b)"),
            std::string::npos);
}

TEST(ConversionReviewTest, ABodyThatIsNotAReviewIsRefused) {
  for (const std::string& body :
       {std::string("not json"), std::string("{}"), std::string(100000, '[')}) {
    json review = ReviewConversion(body);
    EXPECT_EQ(review["response"]["result"]["status"], "Failure") << body.substr(0, 20);
  }
  json no_objects = ReviewConversion(R"({"request": {"uid": "u-2"}})");
  EXPECT_EQ(no_objects["response"]["uid"], "u-2");
  EXPECT_NE(no_objects["response"]["result"]["message"].get<std::string>().find("request.objects"),
            std::string::npos);
}

}  // namespace
}  // namespace trainctl::admission
