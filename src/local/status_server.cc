#include "local/status_server.h"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "api/trainer_status.h"
#include "common/random_token.h"
#include "server/tls_certs.h"

namespace trainctl::local {
namespace {

constexpr Duration kCertValidity = Duration(7LL * 24 * 3600 * 1000);

Status WritePrivate(const std::string& path, const std::string& content, mode_t mode) {
  TRAINCTL_RETURN_IF_ERROR(WriteFileAtomically(path, content));
  if (chmod(path.c_str(), mode) != 0)
    return IoError("cannot restrict " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

LocalStatusServer::LocalStatusServer(const JobDir& dir, const Clock* clock)
    : dir_(dir),
      target_(api::StatusTargetOf(dir.key().kind, dir.key().namespace_, dir.key().name)),
      folder_(dir.path() + "/trainer-status"),
      writer_(kLocalStatusWriteInterval, clock,
              [this](const std::string&, const api::TrainerStatus& status) {
                return dir_.WriteTrainerStatus(api::TrainerStatusJson(status));
              }) {}

StatusOr<std::unique_ptr<LocalStatusServer>> LocalStatusServer::Start(const JobDir& dir,
                                                                      const Clock* clock) {
  std::unique_ptr<LocalStatusServer> s(new LocalStatusServer(dir, clock));
  StatusOr<std::string> token = RandomHexToken(32);
  if (!token.ok()) return token.status();
  s->token_ = std::move(token).value();
  StatusOr<server::CertBundle> certs =
      server::GenerateServingCerts({"localhost"}, {"127.0.0.1"}, clock->Now(), kCertValidity);
  if (!certs.ok()) return certs.status();
  std::error_code ec;
  std::filesystem::create_directories(s->folder_, ec);
  if (ec) return IoError("cannot make " + s->folder_ + ": " + ec.message());
  chmod(s->folder_.c_str(), 0700);
  TRAINCTL_RETURN_IF_ERROR(WritePrivate(s->folder_ + "/ca.crt", certs->ca_cert_pem, 0644));
  TRAINCTL_RETURN_IF_ERROR(WritePrivate(s->folder_ + "/token", s->token_, 0600));
  TRAINCTL_RETURN_IF_ERROR(s->server_.SetCertificate(certs->cert_pem, certs->key_pem));

  LocalStatusServer* self = s.get();
  progress::StatusEndpointHooks hooks;
  hooks.authorize = [self](const std::string& token, const api::StatusTarget& target) {
    return self->Authorize(token, target);
  };
  hooks.exists = [self](const api::StatusTarget& target) { return target == self->target_; };
  hooks.accept = [self](const api::StatusTarget& target, api::TrainerStatus st) {
    self->writer_.Put(target.name, std::move(st));
  };
  s->endpoint_ = std::make_unique<progress::StatusEndpoint>(std::move(hooks));
  s->endpoint_->Register(&s->server_.router());
  TRAINCTL_RETURN_IF_ERROR(s->server_.Start("127.0.0.1:0"));
  s->writer_.Start();
  return s;
}

std::vector<std::pair<std::string, std::string>> LocalStatusServer::Env() const {
  return {{"KUBEFLOW_TRAINER_SERVER_URL",
           "https://127.0.0.1:" + std::to_string(server_.port()) + api::StatusPath(target_)},
          {"KUBEFLOW_TRAINER_SERVER_CA_CERT", folder_ + "/ca.crt"},
          {"KUBEFLOW_TRAINER_SERVER_TOKEN", folder_ + "/token"}};
}

progress::Grant LocalStatusServer::Authorize(const std::string& token,
                                             const api::StatusTarget& target) const {
  if (token.size() != token_.size() || CRYPTO_memcmp(token.data(), token_.data(), token.size()))
    return progress::Grant::kUnauthenticated;
  return target == target_ ? progress::Grant::kAllowed : progress::Grant::kForbidden;
}

void LocalStatusServer::Stop() {
  if (stopped_.exchange(true)) return;
  server_.Stop();  // no report comes in any more
  writer_.Stop();  // then what is pending is written
}

}  // namespace trainctl::local
