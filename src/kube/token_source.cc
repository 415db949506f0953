#include "kube/token_source.h"

#include <unistd.h>

#include <mutex>
#include <utility>

#include "kube/exec_credential.h"
#include "kube/read_file.h"
#include "common/subprocess.h"

extern char** environ;

namespace trainctl::kube {
namespace {

std::string TrimToken(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return std::string();
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

class StaticTokenSource final : public TokenSource {
 public:
  explicit StaticTokenSource(AuthCredentials credentials) : credentials_(std::move(credentials)) {}
  StatusOr<AuthCredentials> Get() override { return credentials_; }
  void Invalidate() override {}

 private:
  const AuthCredentials credentials_;
};

class FileTokenSource final : public TokenSource {
 public:
  FileTokenSource(std::string path, AuthCredentials base, const Clock* clock, Duration max_age)
      : path_(std::move(path)), base_(std::move(base)), clock_(clock), max_age_(max_age) {}

  StatusOr<AuthCredentials> Get() override {
    std::lock_guard<std::mutex> lock(mu_);
    Time now = clock_->Now();
    if (!token_ || stale_ || now - read_at_ >= max_age_) {
      StatusOr<std::string> token = ReadToken();
      if (token.ok()) {
        token_ = std::move(*token);
        read_at_ = now;
        stale_ = false;
      } else if (!token_) {
        return token.status();
      }
      // else: keep the previous token and try again on the next request.
    }
    AuthCredentials out = base_;
    out.bearer_token = *token_;
    return out;
  }

  void Invalidate() override {
    std::lock_guard<std::mutex> lock(mu_);
    stale_ = true;
  }

 private:
  StatusOr<std::string> ReadToken() const {
    StatusOr<std::string> text = ReadWholeFile(path_);
    if (!text.ok()) {
      return Status(text.status().code(), "token file " + text.status().message());
    }
    std::string token = TrimToken(*text);
    if (token.empty())
      return Status(StatusCode::kUnauthorized, "token file " + path_ + " is empty");
    return token;
  }

  const std::string path_;
  const AuthCredentials base_;
  const Clock* const clock_;
  const Duration max_age_;
  std::mutex mu_;
  std::optional<std::string> token_;  // guarded by mu_
  Time read_at_;                      // guarded by mu_
  bool stale_ = false;                // guarded by mu_
};

class ExecTokenSource final : public TokenSource {
 public:
  ExecTokenSource(RestConfig config, const Clock* clock, ExecOptions options)
      : config_(std::move(config)), clock_(clock), options_(std::move(options)) {}

  StatusOr<AuthCredentials> Get() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ && (!cached_->expiry || clock_->Now() < *cached_->expiry)) return Merge(*cached_);
    cached_.reset();
    StatusOr<ExecCredential> fresh = Run();
    if (!fresh.ok()) return fresh.status();
    cached_ = std::move(*fresh);
    return Merge(*cached_);
  }

  void Invalidate() override {
    std::lock_guard<std::mutex> lock(mu_);
    cached_.reset();
  }

 private:
  AuthCredentials Merge(const ExecCredential& cred) const {
    AuthCredentials out{config_.bearer_token, config_.client_cert_pem, config_.client_key_pem};
    if (!cred.token.empty()) out.bearer_token = cred.token;
    if (!cred.client_cert_pem.empty()) {
      out.client_cert_pem = cred.client_cert_pem;
      out.client_key_pem = cred.client_key_pem;
    }
    return out;
  }

  std::vector<std::string> BaseEnv() const {
    if (options_.base_env) return *options_.base_env;
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
    return env;
  }

  StatusOr<ExecCredential> Run() const {
    const ExecConfig& exec = *config_.exec;
    bool terminal = options_.stdin_is_terminal.value_or(isatty(STDIN_FILENO) == 1);
    StatusOr<bool> interactive = ExecIsInteractive(exec, terminal);
    if (!interactive.ok()) return interactive.status();

    SubprocessSpec spec;
    spec.argv.push_back(exec.command);
    spec.argv.insert(spec.argv.end(), exec.args.begin(), exec.args.end());
    spec.env = ExecEnvironment(BaseEnv(), exec, ExecInfoJson(config_, *interactive));
    spec.inherit_stdin = *interactive;
    spec.timeout = options_.timeout;
    StatusOr<SubprocessResult> result = RunSubprocess(spec);
    if (!result.ok()) return ExecStartError(exec, result.status());
    if (result->timed_out) return ExecTimeoutError(exec, options_.timeout);
    if (result->exit_code != 0 || result->signal != 0) {
      return ExecExitError(exec, result->exit_code, result->signal, result->stderr_text);
    }
    return ParseExecCredential(result->stdout_text, exec.api_version, exec.command);
  }

  const RestConfig config_;
  const Clock* const clock_;
  const ExecOptions options_;
  std::mutex mu_;
  std::optional<ExecCredential> cached_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<TokenSource> NewStaticTokenSource(AuthCredentials credentials) {
  return std::make_unique<StaticTokenSource>(std::move(credentials));
}

std::unique_ptr<TokenSource> NewFileTokenSource(std::string path, AuthCredentials base,
                                                const Clock* clock, Duration max_age) {
  return std::make_unique<FileTokenSource>(std::move(path), std::move(base), clock, max_age);
}

std::unique_ptr<TokenSource> NewExecTokenSource(const RestConfig& config, const Clock* clock,
                                                ExecOptions options) {
  return std::make_unique<ExecTokenSource>(config, clock, std::move(options));
}

std::unique_ptr<TokenSource> NewTokenSource(const RestConfig& config, const Clock* clock,
                                            ExecOptions exec_options) {
  if (config.exec) return NewExecTokenSource(config, clock, std::move(exec_options));
  AuthCredentials base{config.bearer_token, config.client_cert_pem, config.client_key_pem};
  if (config.bearer_token.empty() && !config.token_file.empty()) {
    return NewFileTokenSource(config.token_file, std::move(base), clock);
  }
  return NewStaticTokenSource(std::move(base));
}

}  // namespace trainctl::kube
