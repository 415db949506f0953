// The generated pair is one OpenSSH accepts: ssh-keygen derives the same public key from the
// private one (no mock of the format).
#include "common/ssh_keys.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/subprocess.h"

namespace trainctl {
namespace {

TEST(SshKeysTest, OpenSshDerivesTheSamePublicKeyFromThePrivateOne) {
  StatusOr<SshKeyPair> keys = GenerateSshKeyPair();
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->private_pem.rfind("-----BEGIN EC PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(keys->authorized_key.rfind("ecdsa-sha2-nistp521 AAAA", 0), 0u);
  EXPECT_EQ(keys->authorized_key.back(), '\n');

  std::string dir =
      std::filesystem::temp_directory_path() / ("trainctl-ssh-keys-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = dir + "/id_ecdsa";
  { std::ofstream(path) << keys->private_pem; }
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  StatusOr<SubprocessResult> derived =
      RunSubprocess({.argv = {"ssh-keygen", "-y", "-f", path}, .env = {"PATH=/usr/bin:/bin"}});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(derived.ok()) << derived.status().ToString();  // openssh-client: install-deps
  ASSERT_EQ(derived->exit_code, 0) << derived->stderr_text;
  EXPECT_EQ(derived->stdout_text, keys->authorized_key);
}

TEST(SshKeysTest, EveryPairIsNew) {
  StatusOr<SshKeyPair> a = GenerateSshKeyPair();
  StatusOr<SshKeyPair> b = GenerateSshKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->authorized_key, b->authorized_key);
}

}  // namespace
}  // namespace trainctl
