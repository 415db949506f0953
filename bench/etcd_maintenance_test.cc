// Unit tests of bench/etcd_maintenance.h: etcd's status reply read as its gateway writes it, and
// the errors of a reply that is not etcd's or an etcd that is not there.
#include "etcd_maintenance.h"

#include <gtest/gtest.h>

namespace trainctl::bench {
namespace {

// A reply of etcd 3.6.8's gateway, as the benchmark cluster gave it (int64 fields as strings).
const char* kStatus = R"({"header":{"cluster_id":"9782279238550224789",
  "member_id":"1965833649219810353", "revision":"2317", "raft_term":"2"}, "version":"3.6.8",
  "dbSize":"6918144", "leader":"1965833649219810353", "raftIndex":"2328", "raftTerm":"2",
  "raftAppliedIndex":"2328", "dbSizeInUse":"4096000", "storageVersion":"3.6.0",
  "dbSizeQuota":"8589934592", "downgradeInfo":{}})";

TEST(ParseEtcdStatus, ReadsTheRevisionAndTheFilesSizesFromStrings) {
  StatusOr<EtcdSpace> space = ParseEtcdStatus(nlohmann::json::parse(kStatus));
  ASSERT_TRUE(space.ok()) << space.status().message();
  EXPECT_EQ(space->revision, 2317);
  EXPECT_EQ(space->db_bytes, 6918144);
  EXPECT_EQ(space->in_use_bytes, 4096000);
}

TEST(ParseEtcdStatus, NamesTheFieldThatIsMissingOrNotAnInteger) {
  nlohmann::json reply = nlohmann::json::parse(kStatus);
  reply.erase("dbSizeInUse");
  EXPECT_EQ(ParseEtcdStatus(reply).status().message(), "status.dbSizeInUse is missing");
  reply = nlohmann::json::parse(kStatus);
  reply["header"]["revision"] = "12x";
  EXPECT_EQ(ParseEtcdStatus(reply).status().message(),
            "header.revision: expected an integer, got \"12x\"");
  reply.erase("header");
  EXPECT_EQ(ParseEtcdStatus(reply).status().message(), "etcd status: header is missing");
  EXPECT_FALSE(ParseEtcdStatus(nlohmann::json::array()).ok());
  reply = nlohmann::json::parse(kStatus);
  reply["dbSize"] = 42;  // a plain number is read too
  EXPECT_EQ(ParseEtcdStatus(reply)->db_bytes, 42);
}

TEST(ReadEtcdSpace, AnEtcdThatIsNotThereIsAnErrorNamingTheUrl) {
  StatusOr<EtcdSpace> space = ReadEtcdSpace("http://127.0.0.1:1");
  ASSERT_FALSE(space.ok());
  EXPECT_EQ(space.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(space.status().message().find("http://127.0.0.1:1/v3/maintenance/status"),
            std::string::npos)
      << space.status().message();
}

TEST(Describe, SaysTheSpaceBeforeAndAfterAndTheTime) {
  EtcdCompaction c;
  c.before = {100, 1395864371, 220462284};
  c.after = {100, 12687769, 12478054};
  c.seconds = 2.34;
  EXPECT_EQ(Describe(c), "1331.2 MiB (in use 210.2 MiB) → 12.1 MiB (in use 11.9 MiB) in 2.3 s");
}

}  // namespace
}  // namespace trainctl::bench
