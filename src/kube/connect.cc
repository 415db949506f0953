#include "kube/connect.h"

#include "kube/token_source.h"

namespace trainctl::kube {

StatusOr<std::unique_ptr<Client>> Connect(const RestConfig& config, const Clock* clock,
                                          std::optional<ClientOptions> options) {
  if (!config.unread_files.empty())
    return InternalError(config.source + ": referenced files were not loaded");
  std::shared_ptr<TokenSource> tokens = NewTokenSource(config, clock);
  TransportConfig transport;
  transport.server = config.server;
  transport.ca_pem = config.ca_pem;
  transport.insecure_skip_tls_verify = config.insecure_skip_tls_verify;
  transport.tls_server_name = config.tls_server_name;
  transport.proxy_url = config.proxy_url;
  transport.user_agent = config.user_agent;
  transport.direct_connections = config.direct_connections;
  transport.credentials = [tokens]() -> StatusOr<Credentials> {
    StatusOr<AuthCredentials> c = tokens->Get();
    if (!c.ok()) return c.status();
    return Credentials{c->bearer_token, c->client_cert_pem, c->client_key_pem};
  };
  transport.on_unauthorized = [tokens] { tokens->Invalidate(); };
  StatusOr<std::unique_ptr<Transport>> created = Transport::Create(std::move(transport));
  if (!created.ok())
    return Status(created.status().code(), config.source + ": " + created.status().message());
  ClientOptions client_options;
  if (options) {
    client_options = *options;
  } else {
    client_options.qps = config.qps;
    client_options.burst = config.burst;
  }
  return std::make_unique<Client>(std::move(created).value(), client_options, clock);
}

}  // namespace trainctl::kube
