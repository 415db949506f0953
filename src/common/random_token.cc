#include "common/random_token.h"

#include <openssl/rand.h>

#include <vector>

namespace trainctl {

StatusOr<std::string> RandomHexToken(size_t bytes) {
  std::vector<unsigned char> random(bytes);
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1)
    return InternalError("no random bytes for a token (OpenSSL's RAND_bytes failed)");
  static const char* kHex = "0123456789abcdef";
  std::string token;
  token.reserve(2 * bytes);
  for (unsigned char b : random) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

}  // namespace trainctl
