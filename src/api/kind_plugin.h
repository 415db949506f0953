// KindPlugin: the contract of one job kind. Everything that differs between PyTorchJob, TFJob,
// XGBoostJob, MPIJob, PaddleJob, JAXJob and MXJob lives behind it: the kind's facts (KindInfo,
// data given at construction) and its behaviour (the virtual methods). One implementation per
// kind in src/kinds/<kind>.cc, registered in src/kinds/registry.cc; the generic code (decoding,
// defaulting, validation, the engine, the substrates) asks the plugin and never compares kinds.
//
// Plugins are stateless singletons built on first use: every method is pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/field_reader.h"
#include "api/job.h"
#include "api/kinds.h"
#include "api/replica_env.h"
#include "api/validation.h"
#include "common/status.h"

namespace trainctl::api {

class KindPlugin {
 public:
  explicit KindPlugin(KindInfo info) : info_(std::move(info)) {}
  virtual ~KindPlugin() = default;
  KindPlugin(const KindPlugin&) = delete;
  KindPlugin& operator=(const KindPlugin&) = delete;

  // The kind's fixed facts (names, replica types, defaults, rules given as data).
  const KindInfo& info() const { return info_; }

  // Decodes the kind's own spec fields (beside the replica specs and runPolicy) into `job`.
  // `spec` reads job->spec at path "spec" and collects type errors with their field paths.
  virtual void DecodeSpec(FieldReader& spec, Job* job) const {}
  // Writes the kind's typed spec fields over `spec`, the verbatim spec being encoded.
  virtual void EncodeSpec(const Job& job, nlohmann::json* spec) const {}

  // The kind's defaulting. Runs after replica type names are normalized and before the generic
  // defaults fill what is still unset (runPolicy.cleanPodPolicy None, replicas 1, the default
  // restart policy, the default port), so a kind sets first what differs from those.
  virtual void Default(Job* job) const {}

  // The kind's validation, after the generic checks (name, managedBy, replica specs present,
  // restart policies, replica counts, runPolicy); appends errors and warnings to `out` in the
  // order upstream reports them.
  virtual void Validate(const Job& job, ValidationResult* out) const = 0;

  // True for the replica that gets the label job-role=master.
  virtual bool IsMasterRole(const Job& job, const std::string& type, int index) const = 0;
  // The env replica (type, index) of a defaulted job gets (as upstream v1 computes it,
  // docs/compatibility.md), from the job and the substrate's endpoints.
  virtual StatusOr<ReplicaEnv> EnvFor(const Job& job, const std::string& type, int index,
                                      const Endpoints& endpoints) const = 0;
  // True when the operator gives the pods of `type` an init container that waits until the
  // Master's service resolves (PyTorch Workers of a job with a Master).
  virtual bool WaitsForMaster(const Job& job, const std::string& type) const { return false; }

 private:
  KindInfo info_;
};

// The registry (src/kinds/registry.cc): every kind's plugin, in api::Kind order.
const std::vector<const KindPlugin*>& AllPlugins();
const KindPlugin& PluginFor(Kind kind);

}  // namespace trainctl::api
