#include "cli/cluster_commands.h"

#include <iostream>

#include "api/checkpoint_notice.h"
#include "api/job.h"
#include "api/json_fields.h"
#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/job_commands.h"
#include "jobs/cluster_source.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

const Clock& TheClock() {
  static RealClock clock;
  return clock;
}

// Connects; on failure prints the error and returns nullptr.
std::unique_ptr<jobs::ClusterJobSource> Open(const GlobalOptions& g) {
  StatusOr<std::unique_ptr<jobs::ClusterJobSource>> source =
      jobs::ClusterJobSource::Open({g.kubeconfig, g.namespace_, g.all_namespaces}, TheClock());
  if (!source.ok()) {
    Fail(source.status().message(), 1);
    return nullptr;
  }
  return std::move(*source);
}

}  // namespace

int ClusterBackend::Get(const std::vector<std::string>& args, const std::string& output) {
  if (!output.empty() && output != "json" && output != "name" && output != "wide")
    return Fail("unsupported output format \"" + output + "\" (json, name, wide)", 2);
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  return source ? GetJobs(*source, args, output, global_.all_namespaces) : 1;
}

int ClusterBackend::Describe(const std::vector<std::string>& args, const std::string& output) {
  if (!output.empty() && output != "json")
    return Fail("unsupported output format \"" + output + "\" (json)", 2);
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  return source ? DescribeJob(*source, args, output) : 1;
}

int ClusterBackend::Logs(const std::vector<std::string>& args, const std::string& replica,
                         bool follow) {
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  return source ? JobLogs(*source, args, replica, follow) : 1;
}

int ClusterBackend::Metrics(const std::vector<std::string>& args, const std::string& output,
                            const std::string& replica) {
  if (!output.empty() && output != "json")
    return Fail("unsupported output format \"" + output + "\" (json)", 2);
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  return source ? JobMetrics(*source, args, output, replica) : 1;
}

int ClusterBackend::Patch(const std::vector<std::string>& /*args*/, const std::string& /*patch*/) {
  return Fail("patch is for local jobs; on a cluster use kubectl patch", 2);
}

int ClusterBackend::Delete(const std::vector<std::string>& args, bool delete_workspace) {
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  if (!source) return 1;
  StatusOr<json> job = source->Get(*ref);
  if (!job.ok()) return Fail(job.status().message(), ExitFor(job.status()));
  api::Kind kind = *api::KindFromName(api::StringAt(*job, "kind"));
  const json& md = (*job)["metadata"];
  std::string name = api::StringAt(md, "name");
  kube::DeleteOptions options;
  options.propagation_policy = "Background";  // as kubectl: the garbage collector removes pods
  options.precondition_uid = api::StringAt(md, "uid");
  const std::string& ns = source->namespace_();
  Status st = source->client().Delete(jobs::JobResource(kind), ns, name, options);
  if (!st.ok()) return Fail(st.message(), 1);
  std::cout << jobs::ResourceName(kind) << " \"" << name << "\" deleted\n";
  StatusOr<api::Job> decoded = api::DecodeJob(*job);
  if (decoded.ok() && api::HasNoticeFinalizer(md))
    if (std::optional<api::NoticePolicy> notice = api::NoticePolicyOf(*decoded))
      std::cout << "its replicas are told to checkpoint: it goes within " << notice->seconds
                << " s, sooner once every one reports done (finalizer " << api::kNoticeFinalizer
                << ")\n";
  if (!delete_workspace) return 0;
  if (!decoded.ok()) return Fail("--delete-workspace: " + decoded.status().message(), 1);
  for (const api::ClaimRef& claim : api::JobClaims(*decoded)) {
    Status gone = source->client().Delete(kube::kPersistentVolumeClaims, ns, claim.claim);
    if (!gone.ok() && gone.code() != StatusCode::kNotFound)
      return Fail("persistentvolumeclaim \"" + claim.claim + "\": " + gone.message(), 1);
    std::cout << "persistentvolumeclaim \"" << claim.claim << "\" "
              << (gone.ok() ? "deleted" : "already gone") << "\n";
  }
  return 0;
}

int ClusterBackend::Wait(const std::vector<std::string>& args, const std::string& for_condition,
                         const std::string& timeout) {
  // Bad flags are refused before connecting.
  StatusOr<jobs::JobRef> ref = jobs::ParseJobRef(args);
  if (!ref.ok()) return Fail(ref.status().message(), 2);
  StatusOr<std::string> condition = jobs::ParseWaitCondition(for_condition);
  if (!condition.ok()) return Fail(condition.status().message(), 2);
  if (!ParseDurationMs(timeout))
    return Fail("--timeout: cannot parse \"" + timeout + "\" (e.g. 30s, 10m)", 2);
  std::unique_ptr<jobs::ClusterJobSource> source = Open(global_);
  return source ? WaitForJob(*source, args, for_condition, timeout, TheClock()) : 1;
}

}  // namespace trainctl::cli
