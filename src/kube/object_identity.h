// ObjectIdentity and ProjectIdentityList: who each object of a list page is (its store key,
// namespace, name and controller owner's UID), read straight from the response's text with
// simdjson, for caches that keep nothing more of an object (the operator's services); and the
// same of one watch event (ProjectIdentityEvent).
//
// Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kube/pod_summary.h"
#include "kube/watch_decoder.h"

namespace trainctl::kube {

struct ObjectIdentity {
  std::string key;  // "<namespace>/<name>", or "<name>" (Store's keys)
  std::string namespace_;
  std::string name;
  Uid owner_uid{};  // the first ownerReference with controller: true; zero when none or bad
};

// "<namespace>/<name>", or "<name>" when there is no namespace: the key stores use.
std::string StoreKey(const std::string& namespace_, const std::string& name);

// One object's identity; nullopt when it has no metadata object or no name. Reads what
// ProjectIdentityList reads, the same way.
std::optional<ObjectIdentity> ProjectIdentity(const nlohmann::json& object);

// Each item of a list body that has a name. nullopt when the body cannot be read as a list
// (see ForEachListItem): the caller then takes the ordinary path, which says what is wrong.
std::optional<std::vector<ObjectIdentity>> ProjectIdentityList(std::string_view body);

// A watch event's object, straight from the event's text: its store key and identity (nullopt
// when it has no name). nullopt when simdjson does not accept the text or it has no object.
std::optional<EventProjection<ObjectIdentity>> ProjectIdentityEvent(std::string_view event_text);

}  // namespace trainctl::kube
