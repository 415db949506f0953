// The admission room: AdmissionReviews answered (field errors as upstream words them, a hostile
// body denied before it is decoded, managedBy immutable), the webhook certificates, and which
// CRDs take the CA.
#include "admission/admission.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "admission/webhook_certs.h"
#include "api/kinds.h"
#include "server/tls_certs.h"

namespace trainctl::admission {
namespace {

nlohmann::json AdmissionRequest(const std::string& operation, nlohmann::json object,
                                nlohmann::json old_object = nullptr) {
  nlohmann::json request = {{"uid", "req-1"}, {"operation", operation}, {"object", object}};
  if (!old_object.is_null()) request["oldObject"] = old_object;
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", request}};
}

nlohmann::json PyTorchJobObject(int master_replicas) {
  nlohmann::json c = {{"name", "pytorch"}, {"image", "t:1"}};
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", "pt"}, {"namespace", "ml"}}},
          {"spec",
           {{"pytorchReplicaSpecs",
             {{"Master",
               {{"replicas", master_replicas},
                {"template", {{"spec", {{"containers", nlohmann::json::array({c})}}}}}}}}}}}};
}

TEST(AdmissionTest, DeniesWithUpstreamFieldErrorsAndAllowsGoodJobs) {
  EXPECT_EQ(KindForWebhookPath("/validate-kubeflow-org-v1-pytorchjob"), api::Kind::kPyTorchJob);
  EXPECT_EQ(KindForWebhookPath("/validate-kubeflow-org-v1-mpijob"), api::Kind::kMPIJob);
  EXPECT_FALSE(KindForWebhookPath("/validate").has_value());

  nlohmann::json ok = ReviewAdmission(api::Kind::kPyTorchJob,
                                      AdmissionRequest("CREATE", PyTorchJobObject(1)).dump());
  EXPECT_EQ(ok["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(ok["response"]["uid"], "req-1");
  EXPECT_EQ(ok["response"]["allowed"], true);

  nlohmann::json bad = ReviewAdmission(api::Kind::kPyTorchJob,
                                       AdmissionRequest("CREATE", PyTorchJobObject(2)).dump());
  EXPECT_EQ(bad["response"]["allowed"], false);
  EXPECT_EQ(bad["response"]["status"]["message"],
            "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1");

  // A body nested past the API server's own limit is denied before it is decoded.
  std::string deep = std::string(10001, '[') + std::string(10001, ']');
  nlohmann::json deep_review =
      ReviewAdmission(api::Kind::kPyTorchJob, R"({"request":)" + deep + "}");
  EXPECT_EQ(deep_review["response"]["allowed"], false);
  EXPECT_EQ(deep_review["response"]["status"]["message"],
            "the request body is not an AdmissionReview: it is nested deeper than 10000 levels");

  nlohmann::json old_job = PyTorchJobObject(1), new_job = PyTorchJobObject(1);
  old_job["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator";
  new_job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  nlohmann::json update =
      ReviewAdmission(api::Kind::kPyTorchJob, AdmissionRequest("UPDATE", new_job, old_job).dump());
  EXPECT_EQ(update["response"]["allowed"], false);
  EXPECT_NE(update["response"]["status"]["message"].get<std::string>().find("field is immutable"),
            std::string::npos)
      << update.dump();

  EXPECT_EQ(ReviewAdmission(api::Kind::kPyTorchJob,
                            AdmissionRequest("DELETE", nullptr).dump())["response"]["allowed"],
            true);
  nlohmann::json garbage = ReviewAdmission(api::Kind::kTFJob, "{not json");
  EXPECT_EQ(garbage["response"]["allowed"], false);
  nlohmann::json wrong =
      ReviewAdmission(api::Kind::kTFJob, AdmissionRequest("CREATE", PyTorchJobObject(1)).dump());
  EXPECT_EQ(wrong["response"]["allowed"], false);
}

TEST(CertsTest, GeneratesACaSignedServingCertificate) {
  Time now = std::chrono::system_clock::from_time_t(1800000000);
  StatusOr<CertBundle> b =
      GenerateServingCerts({"svc.ns.svc"}, {"127.0.0.1"}, now, std::chrono::hours(24));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE(b->ca_cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(b->key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  StatusOr<Time> expiry = CertNotAfter(b->cert_pem);
  ASSERT_TRUE(expiry.ok());
  EXPECT_EQ(*expiry, now + std::chrono::hours(24));
  EXPECT_FALSE(CertNotAfter("garbage").ok());
  EXPECT_FALSE(GenerateServingCerts({}, {}, now, std::chrono::hours(1)).ok());
  StatusOr<std::vector<std::string>> names = CertDnsNames(b->cert_pem);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"svc.ns.svc"});  // the IP is not a DNS name
  EXPECT_FALSE(CertDnsNames("garbage").ok());
}

// The CA goes into a CRD's conversion webhook only where the CRD converts through one.
TEST(CertsTest, ConversionWebhookOfACrdIsRecognised) {
  nlohmann::json webhook = nlohmann::json::parse(R"({"spec": {"conversion": {
      "strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/c"},
                                         "conversionReviewVersions": ["v1"]}}}})");
  EXPECT_TRUE(ConvertsThroughWebhook(webhook));
  EXPECT_FALSE(ConvertsThroughWebhook(nlohmann::json::parse(R"({"spec": {"conversion":
      {"strategy": "None"}}})")));
  EXPECT_FALSE(ConvertsThroughWebhook(nlohmann::json::parse(R"({"spec": {}})")));
  EXPECT_FALSE(ConvertsThroughWebhook(nlohmann::json::parse(R"({"spec": {"conversion":
      {"strategy": "Webhook", "webhook": {"clientConfig": "not an object"}}}})")));
  EXPECT_FALSE(ConvertsThroughWebhook(nlohmann::json::parse(R"({"spec": "odd"})")));
  EXPECT_FALSE(ConvertsThroughWebhook(nlohmann::json::array()));
}

// A stored certificate is reused only when it names the service as configured now.
TEST(CertsTest, ReusedOnlyWhenItNamesTheService) {
  Time now = std::chrono::system_clock::from_time_t(1800000000);
  StatusOr<CertBundle> b =
      GenerateServingCerts({"a.ns.svc", "a.ns.svc.cluster.local"}, {}, now, std::chrono::hours(24));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(CertCovers(b->cert_pem, {"a.ns.svc", "a.ns.svc.cluster.local"}));
  EXPECT_TRUE(CertCovers(b->cert_pem, {"a.ns.svc"}));
  EXPECT_FALSE(CertCovers(b->cert_pem, {"b.ns.svc", "b.ns.svc.cluster.local"}));
  EXPECT_FALSE(CertCovers("-----BEGIN CERTIFICATE-----\nnot one\n", {"a.ns.svc"}));
}

}  // namespace
}  // namespace trainctl::admission
