// The kube/ client against a real kube-apiserver + etcd (+ kube-controller-manager, kwok),
// started by hack/cluster/up.sh as a CTest fixture (test/CMakeLists.txt).
//
// Environment (set by CTest): TRAINCTL_CLUSTER_DIR (PKI under pki/), TRAINCTL_APISERVER_URL,
// TRAINCTL_ETCD_URL, TRAINCTL_HACK_DIR (the cluster scripts).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kube/client.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"
#include "kube/pod_summary.h"
#include "kube/reflector.h"
#include "kube/store.h"
#include "tcp_proxy.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int PortOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

RealClock* TheClock() {
  static RealClock clock;
  return &clock;
}

// A client for the test cluster's admin, from the kubeconfig up.sh wrote (so kubeconfig
// loading is exercised on the real thing); `port` overrides the API server's (for the proxy).
std::unique_ptr<Client> AdminClient(int port = 0, std::optional<ClientOptions> options = {}) {
  StatusOr<RestConfig> config =
      LoadKubeconfig(Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig", /*context=*/"");
  EXPECT_TRUE(config.ok()) << config.status().message();
  if (!config.ok()) return nullptr;
  if (port) config->server = "https://127.0.0.1:" + std::to_string(port);
  StatusOr<std::unique_ptr<Client>> client = Connect(*config, TheClock(), options);
  EXPECT_TRUE(client.ok()) << client.status().message();
  return client.ok() ? std::move(client).value() : nullptr;
}

json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"key", value}}}};
}

json KwokPod(const std::string& name, const std::string& job, const std::string& run_seconds) {
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"]["name"] = name;
  pod["metadata"]["labels"]["training.kubeflow.org/job-name"] = job;
  pod["metadata"]["annotations"]["trainctl.dev/kwok-run-seconds"] = run_seconds;
  pod["spec"]["restartPolicy"] = "Never";
  pod["spec"]["containers"] = json::array({{{"name", "main"}, {"image", "example.invalid/none"}}});
  return pod;
}

class ClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(Env("TRAINCTL_APISERVER_URL").empty())
        << "run through CTest (ctest -L integration): it starts the cluster";
  }
  void SetUp() override {
    client_ = AdminClient();
    ns_ = "it-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    json namespace_object = {
        {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}};
    StatusOr<json> created = client_->Create(kNamespaces, "", namespace_object);
    ASSERT_TRUE(created.ok()) << created.status().message();
  }
  void TearDown() override {
    if (client_) (void)client_->Delete(kNamespaces, "", ns_);
  }

  template <typename Pred>
  bool Eventually(Pred pred, Duration timeout = Duration(30000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return pred();
  }

  std::unique_ptr<Client> client_;
  std::string ns_;
  static inline int counter_ = 0;
};

TEST_F(ClusterTest, CrudWithErrorsMappedFromTheApi) {
  StatusOr<json> cm = client_->Create(kConfigMaps, ns_, ConfigMap("c", "1"));
  ASSERT_TRUE(cm.ok()) << cm.status().message();
  std::string rv1 = (*cm)["metadata"]["resourceVersion"];

  Status again = client_->Create(kConfigMaps, ns_, ConfigMap("c", "1")).status();
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.message();

  json changed = *cm;
  changed["data"]["key"] = "2";
  StatusOr<json> updated = client_->Update(kConfigMaps, ns_, changed);
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], rv1);

  // The old resourceVersion is stale now: optimistic concurrency says Conflict.
  changed["data"]["key"] = "3";
  Status stale = client_->Update(kConfigMaps, ns_, changed).status();
  EXPECT_EQ(stale.code(), StatusCode::kConflict) << stale.message();

  StatusOr<json> merged =
      client_->Patch(kConfigMaps, ns_, "c", PatchType::kMerge, R"({"data":{"other":"m"}})");
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ((*merged)["data"]["other"], "m");
  StatusOr<json> patched = client_->Patch(kConfigMaps, ns_, "c", PatchType::kJson,
                                          R"([{"op":"replace","path":"/data/key","value":"j"}])");
  ASSERT_TRUE(patched.ok()) << patched.status().message();
  EXPECT_EQ((*patched)["data"]["key"], "j");
  WriteOptions apply;
  apply.field_manager = "trainctl-test";
  StatusOr<json> applied = client_->Patch(kConfigMaps, ns_, "applied", PatchType::kApply,
                                          ConfigMap("applied", "a").dump(), apply);
  ASSERT_TRUE(applied.ok()) << applied.status().message();

  WriteOptions dry;
  dry.dry_run = true;
  ASSERT_TRUE(client_->Create(kConfigMaps, ns_, ConfigMap("dry", "x"), dry).ok());
  EXPECT_EQ(client_->Get(kConfigMaps, ns_, "dry").status().code(), StatusCode::kNotFound);

  json invalid = ConfigMap("Not_A_Valid_Name", "x");
  Status bad = client_->Create(kConfigMaps, ns_, invalid).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalid);
  EXPECT_NE(bad.message().find("metadata.name: Invalid value"), std::string::npos) << bad.message();

  ASSERT_TRUE(client_->Delete(kConfigMaps, ns_, "c").ok());
  Status gone = client_->Get(kConfigMaps, ns_, "c").status();
  EXPECT_EQ(gone.code(), StatusCode::kNotFound);
  EXPECT_NE(gone.message().find("configmaps \"c\""), std::string::npos) << gone.message();
}

TEST_F(ClusterTest, ConcurrentUpdatesRetryOnConflictAndLoseNothing) {
  ASSERT_TRUE(client_->Create(kConfigMaps, ns_, ConfigMap("counter", "0")).ok());
  std::atomic<int> conflicts_seen{0};
  auto bump = [&](Client* c) {
    for (int i = 0; i < 20; ++i) {
      bool first = true;
      StatusOr<json> r = c->UpdateWithRetry(kConfigMaps, ns_, "counter", [&](json& cm) {
        if (!first) ++conflicts_seen;
        first = false;
        cm["data"]["key"] = std::to_string(std::stoi(cm["data"]["key"].get<std::string>()) + 1);
        return Status::Ok();
      });
      ASSERT_TRUE(r.ok()) << r.status().message();
    }
  };
  std::unique_ptr<Client> other = AdminClient();
  std::thread a(bump, client_.get()), b(bump, other.get());
  a.join();
  b.join();
  EXPECT_EQ((*client_->Get(kConfigMaps, ns_, "counter"))["data"]["key"], "40");
  std::printf("conflicts retried: %d\n", conflicts_seen.load());
}

TEST_F(ClusterTest, ListPagesThroughEverything) {
  for (int i = 0; i < 25; ++i)
    ASSERT_TRUE(client_->Create(kConfigMaps, ns_, ConfigMap("cm-" + std::to_string(i), "v")).ok());
  ListOptions page;
  page.limit = 10;
  StatusOr<json> first = client_->List(kConfigMaps, ns_, page);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)["items"].size(), 10u);
  EXPECT_FALSE((*first)["metadata"].value("continue", "").empty());
  StatusOr<json> all = client_->ListAll(kConfigMaps, ns_, page);
  ASSERT_TRUE(all.ok()) << all.status().message();
  // 25 plus the namespace's kube-root-ca.crt when the controller manager has made it.
  EXPECT_GE((*all)["items"].size(), 25u);
  EXPECT_LE((*all)["items"].size(), 26u);
  EXPECT_FALSE((*all)["metadata"].value("resourceVersion", "").empty());
}

// Compacts etcd up to its current revision through its HTTP gateway: every older revision is
// gone, as after the API server's periodic compaction.
void CompactEtcd() {
  TransportConfig config;
  config.server = Env("TRAINCTL_ETCD_URL");
  std::unique_ptr<Transport> etcd = std::move(Transport::Create(config)).value();
  HttpRequest range;
  range.method = "POST";
  range.path = "/v3/kv/range";
  range.content_type = "application/json";
  range.body = R"({"key":"AA==","limit":1})";
  StatusOr<HttpResponse> r = etcd->Do(range);
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
  std::string revision = json::parse(r->body)["header"]["revision"];
  HttpRequest compact = range;
  compact.path = "/v3/kv/compaction";
  compact.body = json{{"revision", revision}, {"physical", true}}.dump();
  r = etcd->Do(compact);
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().message());
}

TEST_F(ClusterTest, WatchesShareOneConnectionAndRequestsKeepTheirsAlive) {
  // The fixture's client has made one request (the namespace) on its caller's connection.
  std::vector<std::shared_ptr<Stream>> streams;
  std::atomic<int> done{0};
  for (int i = 0; i < 5; ++i) {
    ListOptions options;
    options.timeout_seconds = 30;
    streams.push_back(client_->Watch(
        kConfigMaps, ns_, options, [](const WatchEvent&) { return Status::Ok(); },
        [&done](Status) { ++done; }));
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        client_->Create(kConfigMaps, ns_, ConfigMap("ping-" + std::to_string(i), "1")).ok());
    ASSERT_TRUE(client_->Get(kConfigMaps, ns_, "ping-" + std::to_string(i)).ok());
  }
  for (auto& s : streams) s->Cancel();
  ASSERT_TRUE(Eventually([&] { return done.load() == 5; }));
  // Five watches multiplexed on one HTTP/2 connection; 41 requests from this thread on one
  // HTTP/1.1 connection kept alive between them.
  EXPECT_EQ(client_->transport().ConnectionsOpened(), 2);
}

// The admin's TLS settings, read from the files up.sh wrote.
TransportConfig AdminTransportConfig() {
  TransportConfig config;
  config.server = Env("TRAINCTL_APISERVER_URL");
  std::string dir = Env("TRAINCTL_CLUSTER_DIR");
  config.ca_pem = ReadFile(dir + "/pki/ca.crt");
  Credentials admin{"", ReadFile(dir + "/pki/admin.crt"), ReadFile(dir + "/pki/admin.key")};
  config.credentials = [admin]() -> StatusOr<Credentials> { return admin; };
  return config;
}

TEST_F(ClusterTest, MoreCallersThanDirectConnectionsAllGetTheirAnswers) {
  for (size_t direct : {size_t{0}, size_t{2}}) {
    TransportConfig config = AdminTransportConfig();
    config.direct_connections = direct;
    ClientOptions unlimited;
    unlimited.qps = -1;  // all 8 callers at once, not paced by the client's limiter
    Client client(std::move(Transport::Create(config)).value(), unlimited, TheClock());
    std::atomic<int> answered{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 8; ++t)
      callers.emplace_back([&, t] {
        for (int i = 0; i < 10; ++i) {
          std::string name =
              "c" + std::to_string(direct) + "-" + std::to_string(t) + "-" + std::to_string(i);
          if (client.Create(kConfigMaps, ns_, ConfigMap(name, "1")).ok() &&
              client.Get(kConfigMaps, ns_, name).ok())
            ++answered;
        }
      });
    for (auto& c : callers) c.join();
    EXPECT_EQ(answered.load(), 80) << "direct connections: " << direct;
    // At most `direct` connections of callers' own, and the I/O thread's multiplexed one for
    // the requests that found them all busy.
    EXPECT_LE(client.transport().ConnectionsOpened(), static_cast<long>(direct) + 1)
        << "direct connections: " << direct;
  }
}

TEST_F(ClusterTest, ABodySizeHintMakesRoomForTheWholeBodyAtOnce) {
  constexpr size_t kHint = 1u << 20;
  for (size_t direct : {size_t{0}, size_t{1}}) {  // the I/O thread's path, then the caller's
    TransportConfig config = AdminTransportConfig();
    config.direct_connections = direct;
    std::unique_ptr<Transport> transport = std::move(Transport::Create(config)).value();
    HttpRequest request;
    request.path = "/api/v1/namespaces/" + ns_ + "/configmaps";
    StatusOr<HttpResponse> plain = transport->Do(request);
    request.body_size_hint = kHint;
    StatusOr<HttpResponse> hinted = transport->Do(request);
    ASSERT_TRUE(plain.ok() && hinted.ok()) << "direct connections: " << direct;
    ASSERT_EQ(hinted->status, 200);
    EXPECT_NE(hinted->body.find("\"kind\":\"ConfigMapList\""), std::string::npos) << hinted->body;
    EXPECT_LT(plain->body.capacity(), kHint) << "direct connections: " << direct;
    EXPECT_GE(hinted->body.capacity(), kHint) << "direct connections: " << direct;
  }
}

struct PodEvents {
  std::mutex mu;
  std::map<std::string, int> added, deleted;
};

TEST_F(ClusterTest, InformerFollowsPodsAcrossAnOutageAndMissedDeletes) {
  // The informer reaches the API server through a proxy the test can cut.
  testing::TcpProxy proxy(PortOf(Env("TRAINCTL_APISERVER_URL")));
  ClientOptions fast;
  fast.qps = -1;
  std::unique_ptr<Client> informer_client = AdminClient(proxy.port(), fast);
  const std::vector<std::string> keep = {"training.kubeflow.org/job-name"};
  Store<PodSummary> store([&](const json& j) { return ProjectPod(j, keep); });
  PodEvents events;
  store.SetHandlers({[&](const std::string& k, const PodSummary&) {
                       std::lock_guard<std::mutex> l(events.mu);
                       events.added[k]++;
                     },
                     nullptr,
                     [&](const std::string& k, const PodSummary&) {
                       std::lock_guard<std::mutex> l(events.mu);
                       events.deleted[k]++;
                     }});
  ReflectorOptions options;
  options.namespace_ = ns_;
  options.label_selector = "training.kubeflow.org/job-name=j";
  options.min_backoff = Duration(100);
  options.max_backoff = Duration(500);
  Reflector reflector(informer_client.get(), kPods, options, &store);
  reflector.Start();
  ASSERT_TRUE(reflector.WaitForSync(Duration(20000)))
      << "no first sync through the proxy: " << reflector.stats().last_error;

  // Pods created, run by kwok (Pending → Running → Succeeded), one outside the selector.
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(client_->Create(kPods, ns_, KwokPod("p" + std::to_string(i), "j", "2s")).ok());
  ASSERT_TRUE(client_->Create(kPods, ns_, KwokPod("other", "k", "2s")).ok());
  ASSERT_TRUE(Eventually([&] {
    int done = 0;
    for (const PodSummary& p : store.List()) done += p.phase == PodPhase::kSucceeded;
    return done == 4;
  })) << "kwok did not complete the pods in the informer's view";
  EXPECT_EQ(store.size(), 4u);

  // Cut the informer off; meanwhile p0 is deleted and p9 created.
  proxy.SetBlocked(true);
  ASSERT_TRUE(Eventually([&] { return !reflector.stats().last_error.empty(); }));
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(kPods, ns_, "p0", now).ok());
  ASSERT_TRUE(client_->Create(kPods, ns_, KwokPod("p9", "j", "30s")).ok());
  ASSERT_TRUE(Eventually(
      [&] { return client_->Get(kPods, ns_, "p0").status().code() == StatusCode::kNotFound; }));
  proxy.SetBlocked(false);

  ASSERT_TRUE(Eventually([&] {
    return !store.Get(ns_ + "/p0") && store.Get(ns_ + "/p9").has_value();
  })) << "the informer did not converge after the outage: "
      << reflector.stats().last_error;
  std::lock_guard<std::mutex> l(events.mu);
  EXPECT_EQ(events.deleted[ns_ + "/p0"], 1);  // reported once, not lost, not duplicated
  EXPECT_EQ(events.added[ns_ + "/p9"], 1);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(events.added[ns_ + "/p" + std::to_string(i)], 1);
  EXPECT_EQ(events.added.count(ns_ + "/other"), 0u);
  EXPECT_GE(proxy.connections_accepted(), 2);
  reflector.Stop();
}

TEST_F(ClusterTest, RelistAfterApiServerRestartSynthesizesDeletes) {
  ClientOptions fast;
  fast.qps = -1;
  testing::TcpProxy proxy(PortOf(Env("TRAINCTL_APISERVER_URL")));
  std::unique_ptr<Client> informer_client = AdminClient(proxy.port(), fast);
  Store<PodSummary> store([](const json& j) { return ProjectPod(j, {}); });
  ReflectorOptions options;
  options.namespace_ = ns_;
  options.min_backoff = Duration(100);
  options.max_backoff = Duration(1000);
  Reflector reflector(informer_client.get(), kPods, options, &store);
  reflector.Start();
  ASSERT_TRUE(reflector.WaitForSync(Duration(20000)))
      << "no first sync: " << reflector.stats().last_error;
  ASSERT_TRUE(client_->Create(kPods, ns_, KwokPod("keep", "j", "60s")).ok());
  ASSERT_TRUE(client_->Create(kPods, ns_, KwokPod("vanish", "j", "60s")).ok());
  ASSERT_TRUE(Eventually([&] { return store.size() == 2; }));

  // While the informer is cut off: delete a pod, compact etcd and restart the API server (its
  // watch cache starts again at the current revision and etcd no longer has the informer's
  // resourceVersion: 410).
  proxy.SetBlocked(true);
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(kPods, ns_, "vanish", now).ok());
  ASSERT_TRUE(Eventually(
      [&] { return client_->Get(kPods, ns_, "vanish").status().code() == StatusCode::kNotFound; }));
  // SIGKILL: a crash, and no 60 s graceful wait for the open watches.
  std::string restart =
      "kill -9 $(cat \"$TRAINCTL_CLUSTER_DIR/run/kube-apiserver.pid\") && "
      "while kill -0 $(cat \"$TRAINCTL_CLUSTER_DIR/run/kube-apiserver.pid\") "
      "2>/dev/null; do sleep 0.1; done; \"$TRAINCTL_HACK_DIR/up.sh\" -q";
  CompactEtcd();
  ASSERT_EQ(std::system(restart.c_str()), 0);
  proxy.SetBlocked(false);

  ASSERT_TRUE(
      Eventually([&] { return store.size() == 1 && store.Get(ns_ + "/keep"); }, Duration(60000)))
      << reflector.stats().last_error;
  ReflectorStats stats = reflector.stats();
  std::printf("lists %ld, watches %ld, relists after 410 %ld, errors %ld (last: %s)\n", stats.lists,
              stats.watches, stats.relists_after_gone, stats.errors, stats.last_error.c_str());
  EXPECT_GE(stats.lists, 2);
  EXPECT_GE(stats.relists_after_gone, 1)
      << "the restart should have made the resourceVersion too old";
  reflector.Stop();
}

TEST_F(ClusterTest, EventsAreRecordedAndDeduplicated) {
  EventRecorder recorder(client_.get(), TheClock(), {});
  ObjectReference job{"kubeflow.org/v1", "PyTorchJob", ns_, "job", "1234"};
  for (int i = 0; i < 3; ++i)
    recorder.Record({job, "Normal", "SuccessfulCreatePod", "Created pod: job-0"});
  recorder.Record({job, "Warning", "Exited", "job-0 exited with code 1"});
  ASSERT_TRUE(recorder.Flush(Duration(20000)));
  RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.created, 2);
  EXPECT_EQ(stats.patched, 2);
  EXPECT_EQ(stats.failed, 0);
  StatusOr<json> events = client_->List(kEvents, ns_, {});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ((*events)["items"].size(), 2u);
  std::map<std::string, int> counts;
  for (const json& e : (*events)["items"]) counts[e["reason"]] = e["count"];
  EXPECT_EQ(counts["SuccessfulCreatePod"], 3);
  EXPECT_EQ(counts["Exited"], 1);
}

TEST_F(ClusterTest, OverItsBudgetTheRecorderFoldsEventsAndLosesNone) {
  // 2 Events a second, none saved up: the first goes at once, the other 39 arrive while the
  // writer waits for its budget and are folded by reason.
  EventRecorder recorder(client_.get(), TheClock(), {}, RecorderBudget{2, 1, 1000});
  ObjectReference job{"kubeflow.org/v1", "PyTorchJob", ns_, "burst", "5678"};
  for (int i = 0; i < 40; ++i)
    recorder.Record(
        {job, "Normal", "SuccessfulCreatePod", "Created pod: burst-" + std::to_string(i)});
  ASSERT_TRUE(recorder.Flush(Duration(30000)));
  RecorderStats stats = recorder.stats();
  EXPECT_EQ(stats.failed, 0);
  EXPECT_LE(stats.created, 10) << "over the budget, events should fold";
  EXPECT_EQ(stats.created + stats.folded, 40);
  StatusOr<json> events = client_->List(kEvents, ns_, {});
  ASSERT_TRUE(events.ok());
  int counted = 0;
  std::set<std::string> named;
  std::string messages;
  for (const json& e : (*events)["items"]) {
    if (e["involvedObject"]["name"] != "burst") continue;
    counted += e["count"].get<int>();
    std::string message = e["message"].get<std::string>();
    messages += message + "\n";
    ASSERT_EQ(message.rfind("Created pod: ", 0), 0u) << message;
    std::stringstream names(message.substr(13));
    for (std::string name; std::getline(names, name, ',');)
      named.insert(name.substr(name.find_first_not_of(' ')));
  }
  EXPECT_EQ(counted, 40) << messages;
  EXPECT_EQ(named.size(), 40u) << messages;  // every pod named once, alone or folded
  EXPECT_TRUE(named.count("burst-0") && named.count("burst-39")) << messages;
}

TEST_F(ClusterTest, WarningsAreSurfacedAndBadCredentialsAreUnauthorized) {
  std::vector<std::string> warnings;
  std::mutex mu;
  TransportConfig config = AdminTransportConfig();
  config.on_warning = [&](const std::string& w) {
    std::lock_guard<std::mutex> l(mu);
    warnings.push_back(w);
  };
  Client warned(std::move(Transport::Create(config)).value(), {}, TheClock());
  json cm = ConfigMap("w", "1");
  cm["unknownField"] = true;
  WriteOptions warn;
  warn.field_validation = "Warn";
  ASSERT_TRUE(warned.Create(kConfigMaps, ns_, cm, warn).ok());
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("unknown field \"unknownField\""), std::string::npos) << warnings[0];
  }
  WriteOptions strict;
  strict.field_validation = "Strict";
  cm["metadata"]["name"] = "s";
  EXPECT_EQ(warned.Create(kConfigMaps, ns_, cm, strict).status().code(), StatusCode::kInvalid);

  // An expired or wrong token: 401 once, the credentials callback is asked to refresh, then the
  // request fails clearly instead of hanging or retrying forever.
  int refreshed = 0;
  TransportConfig bad;
  bad.server = config.server;
  bad.ca_pem = config.ca_pem;
  bad.credentials = []() -> StatusOr<Credentials> { return Credentials{"expired-token", "", ""}; };
  bad.on_unauthorized = [&refreshed] { ++refreshed; };
  Client unauthorized(std::move(Transport::Create(bad)).value(), {}, TheClock());
  Status st = unauthorized.Get(kNamespaces, "", ns_).status();
  EXPECT_EQ(st.code(), StatusCode::kUnauthorized) << st.message();
  EXPECT_EQ(refreshed, 1);
}

TEST_F(ClusterTest, TlsServerNameIsVerifiedInsteadOfTheAddress) {
  StatusOr<RestConfig> config = LoadKubeconfig(Env("TRAINCTL_CLUSTER_DIR") + "/kubeconfig", "");
  ASSERT_TRUE(config.ok());
  config->tls_server_name = "kubernetes.default.svc";  // in the serving certificate
  StatusOr<std::unique_ptr<Client>> good = Connect(*config, TheClock());
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE((*good)->Get(kNamespaces, "", ns_).ok());
  config->tls_server_name = "not-in-the-certificate.example";
  ClientOptions no_retry;
  no_retry.max_retries = 0;
  StatusOr<std::unique_ptr<Client>> bad = Connect(*config, TheClock(), no_retry);
  ASSERT_TRUE(bad.ok());
  Status st = (*bad)->Get(kNamespaces, "", ns_).status();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("not-in-the-certificate.example"), std::string::npos) << st.message();
}

TEST_F(ClusterTest, ExecPluginCredentialsAreUsedAndCached) {
  // A kubeconfig whose user is an exec plugin handing out the admin client certificate.
  std::string dir = ::testing::TempDir() + "exec-" + ns_;
  std::filesystem::create_directories(dir);
  std::string pki = Env("TRAINCTL_CLUSTER_DIR") + "/pki/";
  json credential = {{"apiVersion", "client.authentication.k8s.io/v1"},
                     {"kind", "ExecCredential"},
                     {"status",
                      {{"clientCertificateData", ReadFile(pki + "admin.crt")},
                       {"clientKeyData", ReadFile(pki + "admin.key")}}}};
  std::ofstream(dir + "/credential.json") << credential.dump();
  std::ofstream(dir + "/plugin.sh")
      << "#!/bin/sh\necho run >> " << dir << "/runs\ncat " << dir << "/credential.json\n";
  std::filesystem::permissions(dir + "/plugin.sh", std::filesystem::perms::owner_all);
  std::ofstream(dir + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
      << "clusters:\n- name: k\n  cluster:\n    server: " << Env("TRAINCTL_APISERVER_URL")
      << "\n    certificate-authority: " << pki << "ca.crt\n"
      << "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
         "client.authentication.k8s.io/v1\n      command: "
      << dir << "/plugin.sh\n      interactiveMode: Never\n"
      << "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: " << ns_ << "}\n";
  StatusOr<RestConfig> config = LoadKubeconfig(dir + "/kubeconfig", "");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->namespace_name, ns_);
  StatusOr<std::unique_ptr<Client>> client = Connect(*config, TheClock());
  ASSERT_TRUE(client.ok()) << client.status().message();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*client)->Get(kNamespaces, "", ns_).ok());
  EXPECT_EQ(ReadFile(dir + "/runs"), "run\n");  // no expiry given: one run, then cached
  std::filesystem::remove_all(dir);
}

TEST_F(ClusterTest, LeaderElectionFailsOverWithinTheLeaseDuration) {
  LeaderElectionConfig base;
  base.namespace_ = ns_;
  base.name = "trainctl-operator";
  base.lease_duration = Duration(3000);
  base.renew_deadline = Duration(2000);
  base.retry_period = Duration(300);
  struct Candidate {
    std::unique_ptr<Client> client = AdminClient();
    std::unique_ptr<LeaderElector> elector;
    std::atomic<long long> started_ms{0};
    std::atomic<bool> stopped{false};
    std::thread thread;
  };
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  Candidate a, b;
  auto launch = [&](Candidate& c, const std::string& id, bool release) {
    LeaderElectionConfig config = base;
    config.identity = id;
    config.release_on_stop = release;
    c.elector = std::make_unique<LeaderElector>(
        c.client.get(), TheClock(), config,
        LeaderElector::Callbacks{[&c, now_ms] { c.started_ms = now_ms(); },
                                 [&c] { c.stopped = true; }, nullptr});
    c.thread = std::thread([&c] { c.elector->Run(); });
  };
  launch(a, "candidate-a", /*release=*/false);
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }));
  launch(b, "candidate-b", /*release=*/true);
  // While a renews, b must not take over, for several lease durations.
  std::this_thread::sleep_for(std::chrono::milliseconds(7000));
  EXPECT_FALSE(b.elector->IsLeader());
  EXPECT_TRUE(a.elector->IsLeader());

  // a dies without releasing (its renewals stop); b takes over after about a lease duration.
  long long died = now_ms();
  a.elector->Stop();
  a.thread.join();
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, Duration(10000)));
  long long took = b.started_ms.load() - died;
  std::printf("b took over %lld ms after a stopped renewing (lease duration 3000 ms)\n", took);
  EXPECT_GE(took, 2500);  // not before the lease could have expired (a renewed just before)
  EXPECT_LE(took, 3000 + 2 * 300 + 1000);

  StatusOr<json> lease = client_->Get(kLeases, ns_, "trainctl-operator");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "candidate-b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);

  // A clean stop releases the lease at once.
  b.elector->Stop();
  b.thread.join();
  EXPECT_TRUE(b.stopped.load());
  lease = client_->Get(kLeases, ns_, "trainctl-operator");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "");
}

}  // namespace
}  // namespace trainctl::kube
