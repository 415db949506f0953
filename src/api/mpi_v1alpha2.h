// MPIJob kubeflow.org/v1alpha2 (mpi-operator up to v0.3, the version of the MPI Operator blog's
// manifests) for `trainctl run`: converted to kubeflow.org/v1, its successor with the same
// launcher mechanics and fields (slotsPerWorker, cleanPodPolicy, mainContainer,
// mpiReplicaSpecs, runPolicy), moving the two run-policy fields v1alpha2 kept at the top of the
// spec (backoffLimit, activeDeadlineSeconds) under spec.runPolicy. Everything else stays as
// written (spec.mpiDistribution too: v1's launcher env covers Open MPI and Intel MPI alike). A
// cluster does not serve v1alpha2 (upstream dropped it); only the local loader converts. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace trainctl::api {

inline constexpr const char* kApiVersionMpiV1alpha2 = "kubeflow.org/v1alpha2";

// True for an object of kind MPIJob and apiVersion kubeflow.org/v1alpha2.
bool IsMpiV1alpha2(const nlohmann::json& doc);

// The kubeflow.org/v1 object, and in `note` one line saying what became of it. Errors name the
// field path of a moved field of the wrong type (spec.backoffLimit must be an integer, ...).
StatusOr<nlohmann::json> ConvertMpiV1alpha2(const nlohmann::json& doc, std::string* note);

}  // namespace trainctl::api
