# Client configuration: kubeconfig files, in-cluster service account, exec credential plugins.
add_library(trainctl_kube_config STATIC
  ${CMAKE_CURRENT_LIST_DIR}/base64.cc ${CMAKE_CURRENT_LIST_DIR}/config.cc
  ${CMAKE_CURRENT_LIST_DIR}/read_file.cc ${CMAKE_CURRENT_LIST_DIR}/config_loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/exec_credential.cc
  ${CMAKE_CURRENT_LIST_DIR}/token_source.cc)
trainctl_pch(trainctl_kube_config)
target_link_libraries(trainctl_kube_config PUBLIC trainctl_api OpenSSL::Crypto Threads::Threads)

if(BUILD_TESTING)
  trainctl_test(kube_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/config_test.cc
    DEPS trainctl_kube_config)
endif()
