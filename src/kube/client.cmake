# REST client: transport (libcurl: HTTP/2 streams on an I/O thread, requests on callers' threads), API errors, watch decoding, rate limiting.
find_package(CURL REQUIRED)
find_package(simdjson REQUIRED)

add_library(trainctl_kube STATIC
  ${CMAKE_CURRENT_LIST_DIR}/transport.cc ${CMAKE_CURRENT_LIST_DIR}/curl_handle_pool.cc
  ${CMAKE_CURRENT_LIST_DIR}/api_error.cc
  ${CMAKE_CURRENT_LIST_DIR}/watch_decoder.cc ${CMAKE_CURRENT_LIST_DIR}/rate_limiter.cc
  ${CMAKE_CURRENT_LIST_DIR}/client.cc ${CMAKE_CURRENT_LIST_DIR}/list_metadata.cc
  ${CMAKE_CURRENT_LIST_DIR}/reflector.cc
  ${CMAKE_CURRENT_LIST_DIR}/store.cc ${CMAKE_CURRENT_LIST_DIR}/pod_summary.cc
  ${CMAKE_CURRENT_LIST_DIR}/object_identity.cc ${CMAKE_CURRENT_LIST_DIR}/list_parse_scope.cc
  ${CMAKE_CURRENT_LIST_DIR}/leader_election.cc ${CMAKE_CURRENT_LIST_DIR}/event_correlator.cc
  ${CMAKE_CURRENT_LIST_DIR}/event_recorder.cc ${CMAKE_CURRENT_LIST_DIR}/event_queue.cc
  ${CMAKE_CURRENT_LIST_DIR}/connect.cc
  ${CMAKE_CURRENT_LIST_DIR}/work_queue.cc)
trainctl_pch(trainctl_kube)
target_link_libraries(trainctl_kube PUBLIC trainctl_kube_config trainctl_common
  nlohmann_json::nlohmann_json CURL::libcurl Threads::Threads)
target_link_libraries(trainctl_kube PRIVATE simdjson::simdjson)

if(BUILD_TESTING)
  trainctl_test(kube_client_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_parts_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/curl_handle_pool_test.cc ${CMAKE_CURRENT_LIST_DIR}/transport_test.cc
    DEPS trainctl_kube)
  trainctl_test(kube_verbs_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_test.cc DEPS trainctl_kube)
  trainctl_test(kube_leader_election_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/leader_election_test.cc DEPS trainctl_kube)
  trainctl_test(kube_events_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/event_correlator_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/event_queue_test.cc ${CMAKE_CURRENT_LIST_DIR}/event_recorder_test.cc
    DEPS trainctl_kube)
  trainctl_test(kube_store_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/store_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/pod_summary_test.cc ${CMAKE_CURRENT_LIST_DIR}/work_queue_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/list_parse_scope_test.cc
    DEPS trainctl_kube)
  target_link_libraries(kube_store_test PRIVATE simdjson::simdjson)  # json_node.h's readers
endif()
