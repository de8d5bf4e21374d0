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
endif()
