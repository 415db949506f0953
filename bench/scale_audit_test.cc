#include "scale_audit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace trainctl::bench {
namespace {

std::string Event(const std::string& id, const std::string& user, const std::string& verb,
                  const std::string& group, const std::string& resource,
                  const std::string& subresource = "", int code = 200) {
  return R"({"kind":"Event","auditID":")" + id + R"(","stage":"ResponseComplete","verb":")" + verb +
         R"(","user":{"username":")" + user + R"("},"objectRef":{"apiGroup":")" + group +
         R"(","resource":")" + resource + R"(","subresource":")" + subresource +
         R"("},"responseStatus":{"code":)" + std::to_string(code) + "}}\n";
}

class CountAuditTest : public testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::TempDir() + "/audit-" + std::to_string(getpid()) + ".log";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::app) << text; }
  std::string path_;
};

TEST_F(CountAuditTest, WritesAreCreatesUpdatesPatchesAndDeletesButNotLeases) {
  const std::string op = "system:serviceaccount:trainctl-bench:operator";
  Write(Event("before", op, "create", "", "pods"));
  const uint64_t from = AuditLogSize(path_);
  Write(Event("1", op, "create", "", "pods") + Event("1", op, "create", "", "pods") +  // 2 stages
        Event("2", op, "create", "", "secrets") + Event("3", op, "update", "", "configmaps") +
        Event("4", op, "patch", "", "events") + Event("5", op, "delete", "", "pods") +
        Event("6", op, "update", "kubeflow.org", "mpijobs", "status", 409) +
        Event("7", op, "update", "coordination.k8s.io", "leases") +
        Event("8", op, "create", "coordination.k8s.io", "leases") +
        Event("9", op, "get", "", "secrets") + Event("10", op, "list", "", "pods") +
        Event("11", op, "watch", "kubeflow.org", "mpijobs") +
        Event("12", "admin", "create", "kubeflow.org", "mpijobs") + "not json\n");
  AuditCounts c = CountAudit(path_, from, op);
  EXPECT_EQ(c.total, 11);
  EXPECT_EQ(c.writes, 6);  // 1 through 6
  EXPECT_EQ(c.job_status_writes, 1);
  EXPECT_EQ(c.conflicts, 1);
  EXPECT_EQ(c.by_request["create pods"], 1);
  EXPECT_EQ(c.by_request["update leases"], 1);
  EXPECT_EQ(c.by_request["update mpijobs/status"], 1);
}

}  // namespace
}  // namespace trainctl::bench
