# tests/triton/triton.cmake: the Triton backend against a real tritonserver
# (tests/triton/test_triton.py; label "triton"), skipped (exit 77) when
# scripts/setup could not install the server. Normal builds only: the server
# cannot load a sanitizer-built libtriton_braid.so without its runtime
# preloaded. Included from tests/CMakeLists.txt.
if(BRAID_TRITON AND NOT BRAID_SANITIZE AND NOT BRAID_FUZZ)
  add_test(NAME triton/server
    COMMAND ${CMAKE_SOURCE_DIR}/tests/triton/run.sh ${CMAKE_SOURCE_DIR}
            --backends ${CMAKE_BINARY_DIR}/backends --models ${CMAKE_SOURCE_DIR}/models/gen
            --real ${CMAKE_SOURCE_DIR}/models/real --tmp ${CMAKE_BINARY_DIR}/tmp/triton)
  set_tests_properties(triton/server PROPERTIES LABELS triton FIXTURES_REQUIRED models SKIP_RETURN_CODE 77 TIMEOUT 600)
  if(BRAID_HAVE_CUDA) # and a model on braid's CUDA backend, on the emulated device
    set_tests_properties(triton/server PROPERTIES ENVIRONMENT "BRAID_CUDA_EMULATOR=1"
      FAIL_REGULAR_EXPRESSION "braid CUDA emulator: ")
  endif()
endif()

# The backend driven by tests/triton/fake_server.c, which plays tritonserver
# (no server needed): every build, sanitizers included, and under valgrind.
if(BRAID_TRITON)
  add_executable(triton_fake_server ${CMAKE_CURRENT_SOURCE_DIR}/triton/fake_server.c)
  target_link_libraries(triton_fake_server PRIVATE braid_static ${CMAKE_DL_LIBS} m)
  target_include_directories(triton_fake_server PRIVATE ${CMAKE_SOURCE_DIR}/src)
  set_target_properties(triton_fake_server PROPERTIES ENABLE_EXPORTS ON) # dlopen resolves TRITON* here
  add_dependencies(triton_fake_server triton_braid)
  set(TRITON_FAKE_ARGS $<TARGET_FILE:triton_braid> ${CMAKE_SOURCE_DIR}/models/gen/two_conv_add/model.onnx
      ${CMAKE_BINARY_DIR}/tmp/triton_fake)
  add_test(NAME triton/fake_server COMMAND triton_fake_server ${TRITON_FAKE_ARGS})
  set_tests_properties(triton/fake_server PROPERTIES LABELS "triton;unit" FIXTURES_REQUIRED models TIMEOUT 300)
  if(VALGRIND AND NOT BRAID_SANITIZE AND NOT BRAID_FUZZ)
    add_test(NAME valgrind/triton_fake COMMAND ${VALGRIND} --suppressions=${CMAKE_SOURCE_DIR}/tests/valgrind.supp
      --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
      --error-exitcode=1 $<TARGET_FILE:triton_fake_server> ${TRITON_FAKE_ARGS})
    set_tests_properties(valgrind/triton_fake PROPERTIES LABELS "valgrind;triton" FIXTURES_REQUIRED models TIMEOUT 600)
  endif()
endif()

# The backend's JSON reader and writer (src/triton/json.c) on its own.
if(BRAID_TRITON)
  add_executable(test_triton_json ${CMAKE_CURRENT_SOURCE_DIR}/triton/test_json.c ${CMAKE_SOURCE_DIR}/src/triton/json.c)
  target_link_libraries(test_triton_json PRIVATE braid_static)
  target_include_directories(test_triton_json PRIVATE ${CMAKE_SOURCE_DIR}/src)
  add_test(NAME triton/json COMMAND test_triton_json)
  set_tests_properties(triton/json PROPERTIES LABELS "triton;unit" TIMEOUT 60)
endif()
