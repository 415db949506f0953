// The conversion webhook of a CRD that serves MPIJob as kubeflow.org/v1 and v2beta1: a
// ConversionReview (apiextensions.k8s.io/v1) request in, the review with its response out,
// every object converted by api::ConvertMpiJob (api/mpi_conversion.h). The response converts
// all objects or none: the first object that cannot be converted fails the review, naming its
// index, name and what is wrong (the API server shows that message to the client). A body that
// is not a ConversionReview gets a failed review (the uid echoed when it can be read). Pure and
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace trainctl::admission {

inline constexpr const char* kMpiConversionPath = "/convert-kubeflow-org-mpijob";

nlohmann::json ReviewConversion(const std::string& body);

}  // namespace trainctl::admission
