// MPIJob between kubeflow.org/v1 and kubeflow.org/v2beta1: the conversion a CRD serving both
// versions of mpijobs.kubeflow.org asks its webhook for (docs/compatibility.md, "MPIJob
// v2beta1"). Both ways keep every field the other version has (replica specs, slotsPerWorker,
// runPolicy, status as is; managedBy's controller name is each version's own), and carry the
// fields the other version lacks in one annotation, restored and removed on the way back, as
// Kubernetes does for its own lossy conversions:
//
//   v1 → v2beta1: spec.mainContainer and spec.cleanPodPolicy (v1's legacy field) into
//                 kMpiV1FieldsAnnotation;
//   v2beta1 → v1: spec.runLauncherAsWorker, sshAuthMountPath, launcherCreationPolicy and
//                 mpiImplementation into kMpiV2FieldsAnnotation.
//
// The annotation is written even when it holds no field, so an object read in the other
// version says which one it was written in (a v2beta1 job stored as v1 keeps v2beta1's
// launcher: WrittenAsMpiV2); on the way back it is removed. So v1 → v2beta1 → v1 (and the
// other way) gives back the object it started from. Objects are converted as they are (no
// defaulting, no validation); unknown spec fields stay. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace trainctl::api {

inline constexpr const char* kMpiV1FieldsAnnotation = "mpi.trainctl.dev/v1-fields";
inline constexpr const char* kMpiV2FieldsAnnotation = "mpi.trainctl.dev/v2beta1-fields";

// True for an MPIJob read as kubeflow.org/v1 that was written as kubeflow.org/v2beta1.
bool WrittenAsMpiV2(const nlohmann::json& v1_object);

// Converts an MPIJob object to `to_version` (kubeflow.org/v1 or kubeflow.org/v2beta1). The
// object must be an MPIJob of one of those versions; converting to its own version returns it
// unchanged. Errors name what is wrong (kind, version, an annotation that is not a JSON object).
StatusOr<nlohmann::json> ConvertMpiJob(const nlohmann::json& object, const std::string& to_version);

}  // namespace trainctl::api
