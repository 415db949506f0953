// Unit tests for client configuration: kubeconfig merging and resolution, loading from files
// and the environment, in-cluster config, token files and exec credential plugins (run as
// small shell scripts in a temporary directory).
#include "kube/config.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/yaml.h"
#include "common/clock.h"
#include "kube/base64.h"
#include "kube/config_loader.h"
#include "kube/exec_credential.h"
#include "kube/token_source.h"

namespace trainctl::kube {
namespace {

::testing::AssertionResult HasSubstr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" does not start with \"" << prefix << "\"";
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "kube_config_test.XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

  std::string Write(const std::string& name, const std::string& text, bool executable = false) {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    if (executable) chmod(p.c_str(), 0755);
    return p;
  }

 private:
  std::string path_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

KubeconfigFile Kc(const std::string& path, const std::string& yaml) {
  StatusOr<std::vector<nlohmann::json>> docs = api::ParseYamlDocuments(yaml, path);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  if (!docs.ok() || docs->empty()) return KubeconfigFile{path, nullptr};
  return KubeconfigFile{path, (*docs)[0]};
}

Time At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

// ---------------------------------------------------------------------------------------------
// base64

TEST(Base64Test, DecodesPaddedTextAndRejectsGarbage) {
  EXPECT_EQ(Base64Decode("aGVsbG8="), std::optional<std::string>("hello"));
  EXPECT_EQ(Base64Decode("aGk="), std::optional<std::string>("hi"));
  EXPECT_EQ(Base64Decode("aGV5"), std::optional<std::string>("hey"));
  EXPECT_EQ(Base64Decode(""), std::optional<std::string>(""));
  EXPECT_EQ(Base64Decode("aGVs\nbG8=\n"), std::optional<std::string>("hello"));
  EXPECT_EQ(Base64Decode(std::string("AP8A", 4)),
            std::optional<std::string>(std::string("\0\xff\0", 3)));
  EXPECT_EQ(Base64Decode("aGVsbG8"), std::nullopt);   // length not a multiple of 4
  EXPECT_EQ(Base64Decode("aG=sbG8="), std::nullopt);  // padding in the middle
  EXPECT_EQ(Base64Decode("aGVsbG8*"), std::nullopt);  // not in the alphabet
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
}

// ---------------------------------------------------------------------------------------------
// ResolveKubeconfig

constexpr char kFileA[] = R"(
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: shared
  cluster: {server: "https://a.example:6443/"}
users:
- name: ua
  user: {token: token-a}
contexts:
- name: a
  context: {cluster: shared, user: ua, namespace: team-a}
)";

constexpr char kFileB[] = R"(
current-context: b
clusters:
- name: shared
  cluster: {server: "https://b.example:6443"}
- name: onlyb
  cluster: {server: "https://onlyb.example"}
users:
- name: ua
  user: {token: token-from-b}
- name: ub
  user: {token: token-b}
contexts:
- name: a
  context: {cluster: onlyb, user: ub}
- name: b
  context: {cluster: shared, user: ub}
- name: c
  context: {cluster: onlyb, user: ub}
)";

TEST(ResolveKubeconfigTest, MergesFilesFirstWins) {
  std::vector<KubeconfigFile> files = {Kc("/ka/config", kFileA), Kc("/kb/config", kFileB)};
  // current-context from the first file; context, cluster and user from the first definer.
  StatusOr<RestConfig> config = ResolveKubeconfig(files, "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->context, "a");
  EXPECT_EQ(config->server, "https://a.example:6443");
  EXPECT_EQ(config->bearer_token, "token-a");
  EXPECT_EQ(config->namespace_name, "team-a");
  EXPECT_EQ(config->source, "kubeconfig /ka/config");

  // A context from the second file refers to a cluster that the first file defines.
  StatusOr<RestConfig> b = ResolveKubeconfig(files, "b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->server, "https://a.example:6443");
  EXPECT_EQ(b->bearer_token, "token-b");
  EXPECT_EQ(b->namespace_name, "default");
  EXPECT_EQ(b->source, "kubeconfig /kb/config");

  // Reversed order: the second file's entries win now.
  std::vector<KubeconfigFile> reversed = {files[1], files[0]};
  StatusOr<RestConfig> r = ResolveKubeconfig(reversed, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->context, "b");
  EXPECT_EQ(r->server, "https://b.example:6443");
  EXPECT_EQ(r->bearer_token, "token-b");
}

TEST(ResolveKubeconfigTest, ContextOverrideAndNamespaceDefault) {
  std::vector<KubeconfigFile> files = {Kc("/kb/config", kFileB)};
  StatusOr<RestConfig> c = ResolveKubeconfig(files, "c");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->context, "c");
  EXPECT_EQ(c->server, "https://onlyb.example");
  EXPECT_EQ(c->namespace_name, "default");
  EXPECT_EQ(c->qps, 20);
  EXPECT_EQ(c->burst, 30);
}

TEST(ResolveKubeconfigTest, MissingContextClusterUserNameTheFile) {
  std::vector<KubeconfigFile> files = {Kc("/x/config", R"(
current-context: prod
clusters: [{name: c1, cluster: {server: "https://c1"}}]
users: [{name: u1, user: {token: t}}]
contexts:
- {name: a, context: {cluster: c1, user: u1}}
- {name: b, context: {cluster: nope, user: u1}}
- {name: d, context: {cluster: c1, user: ghost}}
- {name: e, context: {user: u1}}
)")};
  StatusOr<RestConfig> r = ResolveKubeconfig(files, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(r.status().message(),
            "kubeconfig /x/config: context \"prod\" not found (contexts: a, b, d, e)");

  r = ResolveKubeconfig(files, "b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "kubeconfig /x/config: context \"b\": cluster \"nope\" not found (clusters: c1)");

  r = ResolveKubeconfig(files, "d");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "kubeconfig /x/config: context \"d\": user \"ghost\" not found (users: u1)");

  r = ResolveKubeconfig(files, "e");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "kubeconfig /x/config: context \"e\": no cluster is set");

  std::vector<KubeconfigFile> two = {Kc("/x/one", "clusters: []"), Kc("/x/two", "kind: Config")};
  r = ResolveKubeconfig(two, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "kubeconfig /x/one:/x/two: current-context is not set and no context was given (no "
            "contexts defined)");
}

TEST(ResolveKubeconfigTest, RelativePathsResolveAgainstTheDefiningFile) {
  std::vector<KubeconfigFile> files = {Kc("/home/u/.kube/config", R"(
current-context: a
clusters:
- name: c
  cluster: {server: "https://c", certificate-authority: certs/ca.pem}
users:
- name: u
  user: {client-certificate: ../pki/u.crt, client-key: /etc/pki/u.key}
contexts: [{name: a, context: {cluster: c, user: u}}, {name: t, context: {cluster: c, user: t}},
           {name: x, context: {cluster: c, user: x}}]
)"),
                                       Kc("/srv/conf/extra", R"(
users:
- name: t
  user: {tokenFile: ./tokens/t}
- name: x
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: bin/plugin,
           interactiveMode: Never}
)")};
  StatusOr<RestConfig> a = ResolveKubeconfig(files, "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->unread_files.size(), 3u);
  EXPECT_EQ(a->unread_files[0].field, FileField::kCertificateAuthority);
  EXPECT_EQ(a->unread_files[0].path, "/home/u/.kube/certs/ca.pem");
  EXPECT_EQ(a->unread_files[0].where,
            "kubeconfig /home/u/.kube/config: cluster \"c\": certificate-authority");
  EXPECT_EQ(a->unread_files[1].field, FileField::kClientCertificate);
  EXPECT_EQ(a->unread_files[1].path, "/home/u/pki/u.crt");
  EXPECT_EQ(a->unread_files[2].field, FileField::kClientKey);
  EXPECT_EQ(a->unread_files[2].path, "/etc/pki/u.key");
  EXPECT_EQ(a->ca_pem, "");

  StatusOr<RestConfig> t = ResolveKubeconfig(files, "t");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->token_file, "/srv/conf/tokens/t");
  ASSERT_EQ(t->unread_files.size(), 2u);
  EXPECT_EQ(t->unread_files[1].field, FileField::kTokenFile);
  EXPECT_EQ(t->unread_files[1].where, "kubeconfig /srv/conf/extra: user \"t\": tokenFile");

  StatusOr<RestConfig> x = ResolveKubeconfig(files, "x");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_TRUE(x->exec.has_value());
  EXPECT_EQ(x->exec->command, "/srv/conf/bin/plugin");
}

TEST(ResolveKubeconfigTest, DecodesDataFieldsWhichWinOverFiles) {
  std::string ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
  std::string cert = "CERT PEM";
  std::string key = "KEY PEM";
  std::string ca64 = Base64Encode(ca);
  // A long value folded over lines, as some tools write it.
  std::string ca64_folded = ca64.substr(0, 10) + "\n  " + ca64.substr(10);
  std::vector<KubeconfigFile> files = {Kc("/k/config", R"(
current-context: a
clusters:
- name: c
  cluster:
    server: https://c
    certificate-authority: ca.pem
    certificate-authority-data: ")" + ca64_folded + R"("
users:
- name: u
  user:
    client-certificate-data: )" + Base64Encode(cert) + R"(
    client-key-data: )" + Base64Encode(key) + R"(
- name: bad
  user: {client-certificate-data: "not*base64", client-key-data: "a2V5"}
contexts: [{name: a, context: {cluster: c, user: u}}, {name: b, context: {cluster: c, user: bad}}]
)")};
  StatusOr<RestConfig> a = ResolveKubeconfig(files, "");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->ca_pem, ca);
  EXPECT_EQ(a->client_cert_pem, cert);
  EXPECT_EQ(a->client_key_pem, key);
  EXPECT_TRUE(a->unread_files.empty());

  StatusOr<RestConfig> b = ResolveKubeconfig(files, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "kubeconfig /k/config: user \"bad\": client-certificate-data: not valid base64");
}

TEST(ResolveKubeconfigTest, ClusterTlsFieldsAndInsecureDropsTheCa) {
  std::vector<KubeconfigFile> files = {Kc("/k/config", R"(
current-context: a
clusters:
- name: c
  cluster:
    server: 10.0.0.1:6443/
    insecure-skip-tls-verify: true
    certificate-authority: ca.pem
    certificate-authority-data: Q0E=
    tls-server-name: kubernetes.default
    proxy-url: socks5://proxy:1080
- name: typo
  cluster: {server: https://c, insecure-skip-tls-verify: "yes please"}
- name: noserver
  cluster: {}
contexts: [{name: a, context: {cluster: c}}, {name: t, context: {cluster: typo}},
           {name: "n", context: {cluster: noserver}}, {name: y, context: {cluster: c}}]
)")};
  // A bare y is a YAML 1.1 boolean, as in kubectl: such a name must be quoted.
  StatusOr<RestConfig> y = ResolveKubeconfig(files, "a");
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().message(),
            "kubeconfig /k/config: contexts[3]: name: expected a string, got a boolean (quote "
            "it)");
  files[0].doc["contexts"].erase(3);

  StatusOr<RestConfig> a = ResolveKubeconfig(files, "");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->server, "https://10.0.0.1:6443");
  EXPECT_TRUE(a->insecure_skip_tls_verify);
  EXPECT_EQ(a->ca_pem, "");
  EXPECT_TRUE(a->unread_files.empty());
  EXPECT_EQ(a->tls_server_name, "kubernetes.default");
  EXPECT_EQ(a->proxy_url, "socks5://proxy:1080");
  EXPECT_EQ(a->bearer_token, "");  // no user: anonymous
  EXPECT_FALSE(a->exec.has_value());

  StatusOr<RestConfig> t = ResolveKubeconfig(files, "t");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "kubeconfig /k/config: cluster \"typo\": insecure-skip-tls-verify: expected true or "
            "false, got a string");

  StatusOr<RestConfig> n = ResolveKubeconfig(files, "n");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), "kubeconfig /k/config: cluster \"noserver\": server is not set");
}

TEST(ResolveKubeconfigTest, AuthProviderAndOtherUnsupportedAuthAreErrors) {
  std::vector<KubeconfigFile> files = {Kc("/k/config", R"(
clusters: [{name: c, cluster: {server: "https://c"}}]
users:
- name: gke
  user:
    auth-provider:
      name: gcp
      config: {access-token: x}
- name: basic
  user: {username: admin, password: secret}
- name: both
  user:
    token: t
    exec: {apiVersion: client.authentication.k8s.io/v1, command: p, interactiveMode: Never}
contexts: [{name: g, context: {cluster: c, user: gke}}, {name: b, context: {cluster: c, user: basic}},
           {name: t, context: {cluster: c, user: both}}]
)")};
  StatusOr<RestConfig> g = ResolveKubeconfig(files, "g");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalid);
  EXPECT_TRUE(StartsWith(g.status().message(),
                         "kubeconfig /k/config: user \"gke\": auth-provider \"gcp\" is no longer "
                         "supported (it was removed"));
  EXPECT_TRUE(HasSubstr(g.status().message(), "use an exec credential plugin"));

  StatusOr<RestConfig> b = ResolveKubeconfig(files, "b");
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(HasSubstr(b.status().message(), "user \"basic\": username/password"));

  StatusOr<RestConfig> t = ResolveKubeconfig(files, "t");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(HasSubstr(t.status().message(), "token/tokenFile and exec are both set"));
}

TEST(ResolveKubeconfigTest, ParsesExecConfig) {
  std::vector<KubeconfigFile> files = {Kc("/k/config", R"(
clusters:
- name: c
  cluster:
    server: https://c
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: trainctl}
users:
- name: v1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: my-plugin
      args: [get-token, --verbose]
      env: [{name: FOO, value: bar}]
      interactiveMode: Always
      provideClusterInfo: true
      installHint: install my-plugin
- name: v1beta1
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: p}
- name: v1nomode
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: p}
- name: alpha
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: p}
contexts:
- {name: v1, context: {cluster: c, user: v1}}
- {name: v1beta1, context: {cluster: c, user: v1beta1}}
- {name: v1nomode, context: {cluster: c, user: v1nomode}}
- {name: alpha, context: {cluster: c, user: alpha}}
)")};
  StatusOr<RestConfig> v1 = ResolveKubeconfig(files, "v1");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  ASSERT_TRUE(v1->exec.has_value());
  const ExecConfig& e = *v1->exec;
  EXPECT_EQ(e.api_version, kExecApiV1);
  EXPECT_EQ(e.command, "my-plugin");
  EXPECT_EQ(e.args, (std::vector<std::string>{"get-token", "--verbose"}));
  ASSERT_EQ(e.env.size(), 1u);
  EXPECT_EQ(e.env[0].name, "FOO");
  EXPECT_EQ(e.env[0].value, "bar");
  EXPECT_EQ(e.interactive_mode, InteractiveMode::kAlways);
  EXPECT_TRUE(e.provide_cluster_info);
  EXPECT_EQ(e.install_hint, "install my-plugin");
  EXPECT_EQ(e.cluster_config, nlohmann::json({{"audience", "trainctl"}}));

  StatusOr<RestConfig> beta = ResolveKubeconfig(files, "v1beta1");
  ASSERT_TRUE(beta.ok()) << beta.status().ToString();
  EXPECT_EQ(beta->exec->interactive_mode, InteractiveMode::kIfAvailable);

  StatusOr<RestConfig> nomode = ResolveKubeconfig(files, "v1nomode");
  ASSERT_FALSE(nomode.ok());
  EXPECT_TRUE(
      HasSubstr(nomode.status().message(), "user \"v1nomode\": exec: interactiveMode is required"));

  StatusOr<RestConfig> alpha = ResolveKubeconfig(files, "alpha");
  ASSERT_FALSE(alpha.ok());
  EXPECT_TRUE(HasSubstr(alpha.status().message(),
                        "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported"));
}

TEST(KubeconfigSearchPathsTest, ExplicitThenEnvThenHome) {
  KubeconfigPaths p = KubeconfigSearchPaths("/explicit", "/a:/b", "/home/u");
  EXPECT_EQ(p.paths, std::vector<std::string>{"/explicit"});
  EXPECT_TRUE(p.explicit_path);

  p = KubeconfigSearchPaths("", ":/a::/b:/a:", "/home/u");
  EXPECT_EQ(p.paths, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_FALSE(p.explicit_path);

  p = KubeconfigSearchPaths("", "::", "/home/u");
  EXPECT_EQ(p.paths, std::vector<std::string>{"/home/u/.kube/config"});
}

// ---------------------------------------------------------------------------------------------
// Loading from files

TEST(LoadKubeconfigTest, ReadsEnvListSkipsMissingAndLoadsReferencedFiles) {
  TempDir dir;
  dir.Write("one/certs/ca.pem", "CA FROM FILE");
  dir.Write("two/u.crt", "CERT FROM FILE");
  dir.Write("two/u.key", "KEY FROM FILE");
  std::string one = dir.Write("one/config", R"(
current-context: main
clusters: [{name: c, cluster: {server: "https://c:443", certificate-authority: certs/ca.pem}}]
contexts: [{name: main, context: {cluster: c, user: u, namespace: ns1}}]
)");
  std::string two = dir.Write("two/config", R"(
users: [{name: u, user: {client-certificate: u.crt, client-key: u.key}}]
)");
  std::string kubeconfig = dir.path() + "/missing:" + ":" + one + ":" + two;
  std::string saved = std::getenv("KUBECONFIG") ? std::getenv("KUBECONFIG") : "";
  setenv("KUBECONFIG", kubeconfig.c_str(), 1);
  StatusOr<RestConfig> config = LoadKubeconfig("", "");
  if (saved.empty()) {
    unsetenv("KUBECONFIG");
  } else {
    setenv("KUBECONFIG", saved.c_str(), 1);
  }
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://c:443");
  EXPECT_EQ(config->ca_pem, "CA FROM FILE");
  EXPECT_EQ(config->client_cert_pem, "CERT FROM FILE");
  EXPECT_EQ(config->client_key_pem, "KEY FROM FILE");
  EXPECT_EQ(config->namespace_name, "ns1");
  EXPECT_TRUE(config->unread_files.empty());

  // An explicit path wins over $KUBECONFIG and must exist.
  StatusOr<RestConfig> missing = LoadKubeconfig(dir.path() + "/nope", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "kubeconfig " + dir.path() + "/nope: No such file or directory");
}

TEST(LoadKubeconfigTest, MissingReferencedFileNamesFieldAndPath) {
  TempDir dir;
  std::string path = dir.Write("config", R"(
current-context: a
clusters: [{name: c, cluster: {server: "https://c", certificate-authority: ca.pem}}]
users: [{name: t, user: {tokenFile: tok}}]
contexts: [{name: a, context: {cluster: c}}, {name: t, context: {cluster: c, user: t}}]
)");
  StatusOr<RestConfig> a = LoadKubeconfig(path, "");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(a.status().message(), "kubeconfig " + path +
                                      ": cluster \"c\": certificate-authority: " + dir.path() +
                                      "/ca.pem does not exist");

  dir.Write("ca.pem", "CA");
  StatusOr<RestConfig> t = LoadKubeconfig(path, "t");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "kubeconfig " + path + ": user \"t\": tokenFile: " + dir.path() +
                                      "/tok does not exist");

  dir.Write("tok", "secret\n");
  t = LoadKubeconfig(path, "t");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->token_file, dir.path() + "/tok");
  EXPECT_EQ(t->bearer_token, "");
  EXPECT_EQ(t->ca_pem, "CA");
}

TEST(LoadKubeconfigTest, MalformedYamlNamesTheFile) {
  TempDir dir;
  std::string bad = dir.Write("bad", "clusters:\n- name: c\n  cluster: [unclosed\n");
  StatusOr<std::vector<KubeconfigFile>> files = ReadKubeconfigFiles(KubeconfigPaths{{bad}, false});
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kInvalid);
  EXPECT_TRUE(StartsWith(files.status().message(), "kubeconfig " + bad + ":"));

  std::string list = dir.Write("list", "- just\n- a list\n");
  files = ReadKubeconfigFiles(KubeconfigPaths{{list}, false});
  ASSERT_TRUE(files.ok());
  StatusOr<RestConfig> r = ResolveKubeconfig(*files, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "kubeconfig " + list + ": expected a mapping at the top level, got a list");

  files = ReadKubeconfigFiles(KubeconfigPaths{{dir.path() + "/a", dir.path() + "/b"}, false});
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(HasSubstr(files.status().message(), "no kubeconfig found"));
}

// ---------------------------------------------------------------------------------------------
// In-cluster

TEST(InClusterTest, ResolvesIpv6HostAndNamespace) {
  InClusterInputs in;
  in.service_host = "fd00:10:96::1";
  in.service_port = "443";
  in.token_file = "/t";
  in.ca_pem = "CA";
  in.namespace_text = "team-x\n";
  StatusOr<RestConfig> c = ResolveInCluster(in);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://[fd00:10:96::1]:443");
  EXPECT_EQ(c->namespace_name, "team-x");
  EXPECT_EQ(c->token_file, "/t");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->source, "in-cluster");

  in.pod_namespace = "from-env";
  EXPECT_EQ(ResolveInCluster(in)->namespace_name, "from-env");
  in.pod_namespace.clear();
  in.namespace_text.clear();
  EXPECT_EQ(ResolveInCluster(in)->namespace_name, "default");

  in.service_host.clear();
  StatusOr<RestConfig> none = ResolveInCluster(in);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);

  EXPECT_EQ(JoinHostPort("10.96.0.1", "443"), "10.96.0.1:443");
  EXPECT_EQ(JoinHostPort("[::1]", "6443"), "[::1]:6443");
}

TEST(InClusterTest, LoadsFromEnvironmentAndServiceAccountFiles) {
  TempDir dir;
  InClusterPaths paths;
  paths.token = dir.Write("sa/token", "tok-1\n");
  paths.ca = dir.Write("sa/ca.crt", "CLUSTER CA");
  paths.namespace_file = dir.Write("sa/namespace", "kubeflow");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
  unsetenv("POD_NAMESPACE");
  StatusOr<RestConfig> c = LoadInCluster(paths);
  InClusterPaths no_token = paths;
  no_token.token = dir.path() + "/sa/missing";
  StatusOr<RestConfig> missing = LoadInCluster(no_token);
  unsetenv("KUBERNETES_SERVICE_HOST");
  StatusOr<RestConfig> outside = LoadInCluster(paths);
  unsetenv("KUBERNETES_SERVICE_PORT");

  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://[fd00::1]:6443");
  EXPECT_EQ(c->ca_pem, "CLUSTER CA");
  EXPECT_EQ(c->namespace_name, "kubeflow");
  EXPECT_EQ(c->token_file, paths.token);
  EXPECT_EQ(c->bearer_token, "");  // read per request, see the token source

  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(HasSubstr(missing.status().message(), no_token.token));

  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().code(), StatusCode::kFailedPrecondition);

  FakeClock clock(At("2025-01-01T00:00:00Z"));
  std::unique_ptr<TokenSource> source = NewTokenSource(*c, &clock);
  StatusOr<AuthCredentials> creds = source->Get();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->bearer_token, "tok-1");
}

// ---------------------------------------------------------------------------------------------
// Token sources

TEST(TokenSourceTest, TokenFileIsReReadAfterMaxAgeAndOnInvalidate) {
  TempDir dir;
  std::string path = dir.Write("token", "first\n");
  FakeClock clock(At("2025-01-01T00:00:00Z"));
  std::unique_ptr<TokenSource> source =
      NewFileTokenSource(path, AuthCredentials{"", "CERT", "KEY"}, &clock);
  StatusOr<AuthCredentials> c = source->Get();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bearer_token, "first");
  EXPECT_EQ(c->client_cert_pem, "CERT");

  dir.Write("token", "second");  // the kubelet rotated it
  clock.Advance(std::chrono::seconds(59));
  EXPECT_EQ(source->Get()->bearer_token, "first");
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(source->Get()->bearer_token, "second");

  dir.Write("token", "third");
  EXPECT_EQ(source->Get()->bearer_token, "second");
  source->Invalidate();
  EXPECT_EQ(source->Get()->bearer_token, "third");

  // A failed re-read keeps the last good token.
  std::filesystem::remove(path);
  clock.Advance(std::chrono::minutes(5));
  EXPECT_EQ(source->Get()->bearer_token, "third");

  std::unique_ptr<TokenSource> never = NewFileTokenSource(path, {}, &clock);
  StatusOr<AuthCredentials> none = never->Get();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(HasSubstr(none.status().message(), path));
}

TEST(TokenSourceTest, PicksTheSourceTheConfigCallsFor) {
  TempDir dir;
  FakeClock clock(At("2025-01-01T00:00:00Z"));
  RestConfig config;
  config.bearer_token = "fixed";
  config.token_file = dir.Write("token", "from-file");
  EXPECT_EQ(NewTokenSource(config, &clock)->Get()->bearer_token, "fixed");
  config.bearer_token.clear();
  EXPECT_EQ(NewTokenSource(config, &clock)->Get()->bearer_token, "from-file");
  config.token_file.clear();
  config.client_cert_pem = "C";
  StatusOr<AuthCredentials> anon = NewTokenSource(config, &clock)->Get();
  EXPECT_EQ(anon->bearer_token, "");
  EXPECT_EQ(anon->client_cert_pem, "C");
}

// ---------------------------------------------------------------------------------------------
// Exec credential protocol (pure)

TEST(ExecCredentialTest, ParsesTokenCertificatesAndExpiry) {
  static const std::string kDeepJsonText = std::string(300, '[') + std::string(300, ']');
  const char* kDeepJson = kDeepJsonText.c_str();
  StatusOr<ExecCredential> c = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
          "status":{"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      kExecApiV1, "p");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->expiry, At("2030-01-02T03:04:05Z"));

  c = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
          "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})",
      kExecApiV1Beta1, "p");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_FALSE(c->expiry.has_value());

  struct Case {
    const char* output;
    const char* want;
  } cases[] = {
      {"not json", "stdout is not JSON"},
      {kDeepJson, "stdout is nested deeper than 256 levels"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
           "status":{"token":"t"}})",
       "returned apiVersion \"client.authentication.k8s.io/v1beta1\" but the kubeconfig asks"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Pod","status":{"token":"t"}})",
       "kind is not ExecCredential"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})",
       "neither a token nor"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"clientCertificateData":"C"}})",
       "only one of clientCertificateData and clientKeyData"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
           "status":{"token":"t","expirationTimestamp":"tomorrow"}})",
       "expirationTimestamp \"tomorrow\" is not RFC 3339"},
  };
  for (const Case& tc : cases) {
    StatusOr<ExecCredential> bad = ParseExecCredential(tc.output, kExecApiV1, "my-plugin");
    ASSERT_FALSE(bad.ok()) << tc.output;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalid);
    EXPECT_TRUE(StartsWith(bad.status().message(), "exec plugin \"my-plugin\": "));
    EXPECT_TRUE(HasSubstr(bad.status().message(), tc.want));
  }
}

TEST(ExecCredentialTest, InteractiveModeAgainstTheTerminal) {
  ExecConfig exec;
  exec.command = "p";
  exec.interactive_mode = InteractiveMode::kNever;
  EXPECT_EQ(*ExecIsInteractive(exec, true), false);
  exec.interactive_mode = InteractiveMode::kIfAvailable;
  EXPECT_EQ(*ExecIsInteractive(exec, true), true);
  EXPECT_EQ(*ExecIsInteractive(exec, false), false);
  exec.interactive_mode = InteractiveMode::kAlways;
  EXPECT_EQ(*ExecIsInteractive(exec, true), true);
  StatusOr<bool> no_tty = ExecIsInteractive(exec, false);
  ASSERT_FALSE(no_tty.ok());
  EXPECT_EQ(no_tty.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(HasSubstr(no_tty.status().message(), "standard input is not a terminal"));
}

TEST(ExecCredentialTest, ExecInfoAndEnvironment) {
  RestConfig config;
  config.server = "https://c:6443";
  config.ca_pem = "CA";
  config.tls_server_name = "kubernetes";
  config.exec = ExecConfig{};
  config.exec->api_version = kExecApiV1;
  config.exec->env = {{"FOO", "override"}, {"NEW", "1"}};
  config.exec->cluster_config = {{"audience", "x"}};

  nlohmann::json info = nlohmann::json::parse(ExecInfoJson(config, false));
  EXPECT_EQ(info, nlohmann::json::parse(R"({"apiVersion":"client.authentication.k8s.io/v1",
      "kind":"ExecCredential","spec":{"interactive":false}})"));
  config.exec->provide_cluster_info = true;
  info = nlohmann::json::parse(ExecInfoJson(config, true));
  EXPECT_EQ(info["spec"], nlohmann::json::parse(R"({"interactive":true,"cluster":{
      "server":"https://c:6443","tls-server-name":"kubernetes",
      "certificate-authority-data":"Q0E=","config":{"audience":"x"}}})"));

  std::vector<std::string> env =
      ExecEnvironment({"PATH=/bin", "FOO=base", "KUBERNETES_EXEC_INFO=old"}, *config.exec, "{}");
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "FOO=override", "KUBERNETES_EXEC_INFO={}",
                                           "NEW=1"}));
}

// ---------------------------------------------------------------------------------------------
// Exec plugins, run for real

class ExecPluginTest : public ::testing::Test {
 protected:
  // A plugin script; `body` is POSIX shell.
  std::string Plugin(const std::string& name, const std::string& body) {
    return dir_.Write(name, "#!/bin/sh\n" + body, /*executable=*/true);
  }

  RestConfig Config(const std::string& command, const char* api_version = kExecApiV1) {
    RestConfig config;
    config.server = "https://c:6443";
    config.exec = ExecConfig{};
    config.exec->api_version = api_version;
    config.exec->command = command;
    config.exec->interactive_mode = InteractiveMode::kIfAvailable;
    return config;
  }

  ExecOptions Options(Duration timeout = std::chrono::seconds(10)) {
    ExecOptions options;
    options.timeout = timeout;
    options.stdin_is_terminal = false;
    options.base_env = std::vector<std::string>{"PATH=/usr/bin:/bin", "DIR=" + dir_.path()};
    return options;
  }

  TempDir dir_;
  FakeClock clock_{At("2029-12-31T23:00:00Z")};
};

TEST_F(ExecPluginTest, TokenIsCachedUntilExpiryAndAfterInvalidate) {
  // Counts its runs, records its argv and env, answers token-<n> expiring 2030-01-01.
  std::string plugin = Plugin("token-plugin", R"(
echo run >> "$DIR/runs"
n=$(wc -l < "$DIR/runs" | tr -d ' ')
echo "$1 $2 $GREETING" > "$DIR/args"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$DIR/info"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"token-%s","expirationTimestamp":"2030-01-01T00:00:00Z"}}\n' "$n"
)");
  RestConfig config = Config(plugin);
  config.exec->args = {"get", "token"};
  config.exec->env = {{"GREETING", "hello"}};
  config.exec->provide_cluster_info = true;
  config.client_cert_pem = "BASE CERT";
  config.client_key_pem = "BASE KEY";
  std::unique_ptr<TokenSource> source = NewTokenSource(config, &clock_, Options());

  StatusOr<AuthCredentials> c = source->Get();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bearer_token, "token-1");
  EXPECT_EQ(c->client_cert_pem, "BASE CERT");
  EXPECT_EQ(ReadText(dir_.path() + "/args"), "get token hello\n");
  nlohmann::json info = nlohmann::json::parse(ReadText(dir_.path() + "/info"));
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://c:6443");

  clock_.Advance(std::chrono::minutes(59));
  EXPECT_EQ(source->Get()->bearer_token, "token-1");  // cached: 1 min left
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_EQ(source->Get()->bearer_token, "token-2");  // expired: run again
  EXPECT_EQ(source->Get()->bearer_token, "token-3");  // the plugin's expiry is still the past
  clock_.Set(At("2029-12-31T23:00:00Z"));
  EXPECT_EQ(source->Get()->bearer_token, "token-3");
  source->Invalidate();  // a 401
  EXPECT_EQ(source->Get()->bearer_token, "token-4");
}

TEST_F(ExecPluginTest, V1beta1ClientCertificateWithoutExpiry) {
  std::string plugin = Plugin("cert-plugin", R"(
echo run >> "$DIR/runs"
cat <<'JSON'
{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
 "status": {"clientCertificateData": "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n",
            "clientKeyData": "-----BEGIN PRIVATE KEY-----\nY\n-----END PRIVATE KEY-----\n"}}
JSON
)");
  std::unique_ptr<TokenSource> source =
      NewTokenSource(Config(plugin, kExecApiV1Beta1), &clock_, Options());
  StatusOr<AuthCredentials> c = source->Get();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bearer_token, "");
  EXPECT_EQ(c->client_cert_pem, "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(c->client_key_pem, "-----BEGIN PRIVATE KEY-----\nY\n-----END PRIVATE KEY-----\n");
  clock_.Advance(std::chrono::hours(24 * 365));
  ASSERT_TRUE(source->Get().ok());
  EXPECT_EQ(ReadText(dir_.path() + "/runs"), "run\n");  // no expiry: cached
}

TEST_F(ExecPluginTest, NonZeroExitReportsCommandAndStderr) {
  std::string plugin = Plugin("failing-plugin", R"(
echo "some stdout" 
echo "error: not logged in; run 'cloud auth login'" >&2
exit 3
)");
  StatusOr<AuthCredentials> c = NewTokenSource(Config(plugin), &clock_, Options())->Get();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(c.status().message(), "exec plugin \"" + plugin +
                                      "\" exited with status 3: error: not logged in; run "
                                      "'cloud auth login'");

  std::string noisy = Plugin("noisy-plugin", "head -c 5000 /dev/zero | tr '\\0' x >&2; exit 1\n");
  c = NewTokenSource(Config(noisy), &clock_, Options())->Get();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(HasSubstr(c.status().message(), "exited with status 1: xxxx"));
  EXPECT_TRUE(HasSubstr(c.status().message(), "... (truncated)"));
  EXPECT_LT(c.status().message().size(), 1200u);
}

TEST_F(ExecPluginTest, GarbageOutputNamesCommandAndExpectation) {
  std::string plugin = Plugin("garbage-plugin", "echo 'here is your token: hunter2'\n");
  StatusOr<AuthCredentials> c = NewTokenSource(Config(plugin), &clock_, Options())->Get();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(c.status().message(), "exec plugin \"" + plugin +
                                      "\": stdout is not JSON (expected an ExecCredential of "
                                      "client.authentication.k8s.io/v1 on stdout)");
  EXPECT_EQ(c.status().message().find("hunter2"), std::string::npos);
}

TEST_F(ExecPluginTest, HangingPluginIsKilledAtTheTimeout) {
  // The script starts a child in the background and waits; both must die at the deadline.
  std::string plugin = Plugin("hanging-plugin", R"(
sleep 30 &
echo $! > "$DIR/child"
wait
)");
  auto start = std::chrono::steady_clock::now();
  StatusOr<AuthCredentials> c =
      NewTokenSource(Config(plugin), &clock_, Options(std::chrono::milliseconds(300)))->Get();
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(c.status().message(),
            "exec plugin \"" + plugin + "\" did not finish within 300ms and was killed");
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));

  pid_t child = static_cast<pid_t>(std::stol(ReadText(dir_.path() + "/child")));
  // Killed means gone or a zombie waiting for init (or a subreaper) to reap it.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::string stat = ReadText("/proc/" + std::to_string(child) + "/stat");
    size_t paren = stat.rfind(')');
    gone = stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "the plugin's child " << child << " survived";
}

TEST_F(ExecPluginTest, AlwaysInteractiveWithoutTerminalAndMissingCommand) {
  std::string plugin = Plugin("never-run", "echo run >> \"$DIR/runs\"\n");
  RestConfig config = Config(plugin);
  config.exec->interactive_mode = InteractiveMode::kAlways;
  StatusOr<AuthCredentials> c = NewTokenSource(config, &clock_, Options())->Get();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/runs"));

  RestConfig missing = Config(dir_.path() + "/no-such-plugin");
  missing.exec->install_hint = "Install it with: apt install no-such-plugin\n";
  c = NewTokenSource(missing, &clock_, Options())->Get();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(StartsWith(c.status().message(),
                         "exec plugin \"" + dir_.path() + "/no-such-plugin\": cannot run it: "));
  EXPECT_TRUE(HasSubstr(c.status().message(), "\nInstall it with: apt install no-such-plugin"));
}

}  // namespace
}  // namespace trainctl::kube
