#include "common/ssh_keys.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>
#include <vector>

namespace trainctl {
namespace {

struct PKeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
};

// An SSH wire-format string: a 4-byte big-endian length, then the bytes.
void AppendSshString(std::string* out, const std::string& bytes) {
  uint32_t n = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>((n >> shift) & 0xff));
  *out += bytes;
}

std::string Base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : n);
  return out;
}

}  // namespace

StatusOr<SshKeyPair> GenerateSshKeyPair() {
  std::unique_ptr<EVP_PKEY, PKeyFree> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"));
  if (!key) return InternalError("generating an SSH key (ECDSA P-521) failed in libcrypto");

  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey_traditional(bio.get(), key.get(), nullptr, nullptr, 0,
                                                   nullptr, nullptr) != 1)
    return InternalError("writing the SSH private key as PEM failed in libcrypto");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);

  // The public point, uncompressed (0x04 || X || Y), as OpenSSH's ecdsa key blob holds it.
  size_t point_len = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0,
                                      &point_len) != 1)
    return InternalError("reading the SSH public key failed in libcrypto");
  std::string point(point_len, '\0');
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                      reinterpret_cast<unsigned char*>(point.data()), point_len,
                                      &point_len) != 1 ||
      point.empty() || point[0] != 0x04)
    return InternalError("reading the SSH public key failed in libcrypto");
  point.resize(point_len);

  std::string blob;
  AppendSshString(&blob, "ecdsa-sha2-nistp521");
  AppendSshString(&blob, "nistp521");
  AppendSshString(&blob, point);
  return SshKeyPair{std::string(data, static_cast<size_t>(n)),
                    "ecdsa-sha2-nistp521 " + Base64(blob) + "\n"};
}

}  // namespace trainctl
