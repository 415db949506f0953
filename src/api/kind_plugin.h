// KindPlugin: the contract of one job kind. Everything that differs between PyTorchJob, TFJob,
// XGBoostJob, MPIJob, PaddleJob, JAXJob and MXJob lives behind it: the kind's facts (KindInfo,
// data given at construction) and its behaviour (the virtual methods). One implementation per
// kind in src/kinds/<kind>.cc, registered in src/kinds/registry.cc; the generic code (decoding,
// defaulting, validation, the engine, the substrates) asks the plugin and never compares kinds.
//
// Plugins are stateless singletons built on first use: every method is pure and thread-safe.
#pragma once

#include <utility>
#include <vector>

#include "api/kinds.h"

namespace trainctl::api {

class KindPlugin {
 public:
  explicit KindPlugin(KindInfo info) : info_(std::move(info)) {}
  virtual ~KindPlugin() = default;
  KindPlugin(const KindPlugin&) = delete;
  KindPlugin& operator=(const KindPlugin&) = delete;

  // The kind's fixed facts (names, replica types, defaults, rules given as data).
  const KindInfo& info() const { return info_; }

 private:
  KindInfo info_;
};

// The registry (src/kinds/registry.cc): every kind's plugin, in api::Kind order.
const std::vector<const KindPlugin*>& AllPlugins();
const KindPlugin& PluginFor(Kind kind);

}  // namespace trainctl::api
