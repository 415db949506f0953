// The seven framework plugins (one .cc file each). Internal to frameworks/; use ForKind().
#pragma once

#include "frameworks/framework.h"

namespace trainctl::frameworks {

#define TRAINCTL_DECLARE_FRAMEWORK(Name)                                                    \
  class Name final : public Framework {                                                     \
   public:                                                                                  \
    bool IsMasterRole(const api::Job& job, const std::string& type, int index) const override; \
    StatusOr<ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,     \
                                const Endpoints& endpoints) const override;                 \
  };

TRAINCTL_DECLARE_FRAMEWORK(PyTorchFramework)
TRAINCTL_DECLARE_FRAMEWORK(TensorFlowFramework)
TRAINCTL_DECLARE_FRAMEWORK(XGBoostFramework)
TRAINCTL_DECLARE_FRAMEWORK(MpiFramework)
TRAINCTL_DECLARE_FRAMEWORK(PaddleFramework)
TRAINCTL_DECLARE_FRAMEWORK(JaxFramework)
TRAINCTL_DECLARE_FRAMEWORK(MxnetFramework)

#undef TRAINCTL_DECLARE_FRAMEWORK

inline EnvVar Env(std::string name, std::string value) {
  return EnvVar{std::move(name), std::move(value), nullptr};
}

}  // namespace trainctl::frameworks
