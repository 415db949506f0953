// Helpers shared by several kinds' plugins (src/kinds/<kind>.cc): the elastic policy of
// PyTorchJob and PaddleJob (decoding, encoding, defaulting), the validation checks several
// admission webhooks share, and a plain env variable. Internal to src/kinds/; pure.
#pragma once

#include <string>
#include <vector>

#include "api/field_reader.h"
#include "api/job.h"
#include "api/replica_env.h"

namespace trainctl::kinds {

// spec.elasticPolicy into job->elastic_policy (when present).
void DecodeElasticPolicy(api::FieldReader& spec, api::Job* job);
// Writes the defaulted minReplicas/maxReplicas over spec.elasticPolicy when the spec has one.
void EncodeElasticPolicy(const api::Job& job, nlohmann::json* spec);
// min/max replicas default to each other, or to the Worker replicas when both are unset.
void DefaultElasticPolicy(api::Job* job);

// Every replica type must be one of `allowed` (Unsupported value on the replica specs map).
void ValidateTypeNames(const api::Job& job, const std::vector<std::string>& allowed,
                       api::FieldErrorList* errors);

// The template checks the webhooks share: containers present, each with an image, one named
// after the kind's default container. `shown_name` is how the message names that container
// (PaddleJob's webhook quotes it).
void ValidateReplicaTemplates(const api::Job& job, const std::string& shown_name,
                              api::FieldErrorList* errors);
void ValidateReplicaTemplates(const api::Job& job, api::FieldErrorList* errors);

// An env variable with a plain value.
inline api::EnvVar Env(std::string name, std::string value) {
  return api::EnvVar{std::move(name), std::move(value), nullptr};
}

}  // namespace trainctl::kinds
