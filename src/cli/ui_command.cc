#include "cli/ui_command.h"

#include <signal.h>

#include <iostream>
#include <set>

#include "local/state_store.h"
#include "server/http_server.h"
#include "ui/dashboard.h"

namespace trainctl::cli {
int UiCommand(const GlobalOptions& global, const UiOptions& options) {
  StatusOr<std::pair<std::string, int>> bind = server::ParseBindAddress(options.listen);
  if (!bind.ok()) return Fail("--listen: " + bind.status().message(), 2);
  const char* env_backend = std::getenv("TRAINCTL_BACKEND");
  StatusOr<bool> cluster = UseCluster(global, env_backend ? env_backend : "");
  if (!cluster.ok()) return Fail(cluster.status().message(), 2);
  std::optional<long long> sweep_ms = options.sweep_every == "0"
                                          ? std::optional<long long>(0)
                                          : ParseDurationMs(options.sweep_every);
  if (!sweep_ms || *sweep_ms < 0)
    return Fail("--sweep-every: expected a duration such as 2s or 500ms, or 0 (off)", 2);
  StatusOr<std::string> token = ui::NewToken();
  if (!token.ok()) return Fail(token.status().message(), 1);

  ui::DashboardConfig config;
  config.state_root = StateRoot(global);
  if (*cluster) config.cluster = jobs::ClusterScope{global.kubeconfig, global.namespace_, true};
  config.auth.token = *token;
  RealClock clock;
  ui::Dashboard dashboard(config, clock);
  if (Status st = dashboard.Open(); !st.ok()) return Fail(st.message(), 1);

  // The sweep, before serving and then on the timer below. A warning is printed once, not at
  // every sweep while its cause lasts.
  std::set<std::string> warned;
  auto sweep = [&]() {
    std::set<std::string> now;
    for (std::string& warning : dashboard.Sweep().warnings) {
      if (!warned.count(warning)) std::cerr << "warning: " << warning << std::endl;
      now.insert(std::move(warning));
    }
    warned = std::move(now);
  };
  if (*sweep_ms > 0) sweep();

  // Blocks SIGINT and SIGTERM here, so the serving threads never take them; sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::HttpServerOptions server_options;
  server_options.max_connections = 64;
  server_options.max_streams = 16;
  server::HttpServer server(server_options);
  dashboard.Register(server.router());
  if (Status st = server.Start(options.listen); !st.ok()) return Fail(st.message(), 1);
  dashboard.SetHosts(ui::HostsFor(bind->first, server.port()));
  bool loopback = bind->first == "127.0.0.1" || bind->first == "::1" || bind->first == "localhost";
  if (!loopback)
    std::cerr << "warning: --listen " << options.listen
              << " serves beyond this machine; anyone who can reach it and has the token sees "
                 "every job and log\n";
  std::string host = bind->first == "0.0.0.0" || bind->first == "::" ? "127.0.0.1" : bind->first;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  std::cout << "http://" << host << ":" << server.port() << "/?token=" << *token << std::endl;
  std::cerr << "Serving the dashboard for " << config.state_root
            << (config.cluster ? " and the cluster" : "") << "; Ctrl-C stops it." << std::endl;
  // The one timer: the sweep, until SIGINT or SIGTERM.
  timespec every = {static_cast<time_t>(*sweep_ms / 1000),
                    static_cast<long>(*sweep_ms % 1000) * 1000000L};
  for (;;) {
    int got = *sweep_ms > 0 ? sigtimedwait(&stop_signals, nullptr, &every)
                            : sigwaitinfo(&stop_signals, nullptr);
    if (got == SIGINT || got == SIGTERM) break;
    if (*sweep_ms > 0) sweep();
  }
  server.Stop();
  return 0;
}

}  // namespace trainctl::cli
