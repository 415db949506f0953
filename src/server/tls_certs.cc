#include "server/tls_certs.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

namespace trainctl::server {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

PKey NewKey() { return PKey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key`, signed by `issuer_key` (self-signed when `issuer` is null).
Cert MakeCert(EVP_PKEY* key, const std::string& common_name, X509* issuer, EVP_PKEY* issuer_key,
              Time now, Duration validity, const std::vector<std::pair<int, std::string>>& exts) {
  Cert cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return nullptr;
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  time_t start = std::chrono::system_clock::to_time_t(now) - 3600;
  time_t end = std::chrono::system_clock::to_time_t(now + validity);
  ASN1_TIME_set(X509_getm_notBefore(cert.get()), start);
  ASN1_TIME_set(X509_getm_notAfter(cert.get()), end);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : exts)
    if (!AddExtension(cert.get(), issuer ? issuer : cert.get(), nid, value)) return nullptr;
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return nullptr;
  return cert;
}

std::string CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, n);
}

std::string KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, n);
}

}  // namespace

StatusOr<CertBundle> GenerateServingCerts(const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ips, Time now,
                                          Duration validity) {
  PKey ca_key = NewKey(), key = NewKey();
  if (!ca_key || !key) return InternalError("cannot generate an EC P-256 key");
  Cert ca = MakeCert(ca_key.get(), "trainctl-webhook-ca", nullptr, ca_key.get(), now, validity,
                     {{NID_basic_constraints, "critical,CA:TRUE"},
                      {NID_key_usage, "critical,keyCertSign,cRLSign"},
                      {NID_subject_key_identifier, "hash"}});
  if (!ca) return InternalError("cannot make the webhook CA certificate");
  std::string san;
  for (const std::string& d : dns_names) san += (san.empty() ? "" : ",") + ("DNS:" + d);
  for (const std::string& ip : ips) san += (san.empty() ? "" : ",") + ("IP:" + ip);
  if (san.empty()) return InvalidError("the webhook certificate needs a DNS name or an IP");
  std::string cn = dns_names.empty() ? ips[0] : dns_names[0];
  Cert cert = MakeCert(key.get(), cn, ca.get(), ca_key.get(), now, validity,
                       {{NID_basic_constraints, "critical,CA:FALSE"},
                        {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                        {NID_ext_key_usage, "serverAuth"},
                        {NID_subject_alt_name, san}});
  if (!cert) return InternalError("cannot make the webhook serving certificate (SAN " + san + ")");
  return CertBundle{CertPem(ca.get()), CertPem(cert.get()), KeyPem(key.get())};
}

StatusOr<Time> CertNotAfter(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidError("not a PEM certificate");
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1)
    return InvalidError("unreadable notAfter");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

StatusOr<std::vector<std::string>> CertDnsNames(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidError("not a PEM certificate");
  std::vector<std::string> names;
  auto* sans = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  if (!sans) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans, i);
    if (name->type != GEN_DNS) continue;
    const ASN1_IA5STRING* dns = name->d.dNSName;
    names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                       static_cast<size_t>(ASN1_STRING_length(dns)));
  }
  GENERAL_NAMES_free(sans);
  return names;
}

}  // namespace trainctl::server
