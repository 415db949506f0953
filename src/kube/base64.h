// Standard base64 (RFC 4648 §4, with padding) decoding, as Kubernetes uses for `[]byte` fields
// such as a kubeconfig's `certificate-authority-data`.
//
// Whitespace (spaces, tabs, line breaks) inside the text is ignored, like Go's decoder does for
// line breaks. Pure, thread-safe; backed by OpenSSL's EVP_DecodeBlock.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainctl::kube {

// The decoded bytes, or nullopt when `text` is not valid padded base64.
std::optional<std::string> Base64Decode(std::string_view text);

// Encodes bytes as padded base64 on one line.
std::string Base64Encode(std::string_view bytes);

}  // namespace trainctl::kube
