# tests/package: braid's Python package (python/braid) run by ctest: its API
# and errors and threads from the source tree over this build's libbraid, onnx's
# own backend test runner over braid.backend (at least BRAID_MIN_NODE_PASS node
# tests must pass), and the wheel built and installed into a fresh venv.
# (normal builds only: ctypes cannot load a sanitizer-built libbraid.so)
set(PKG_ENV "BRAID_LIB=$<TARGET_FILE:braid>;PYTHONPATH=${CMAKE_SOURCE_DIR}/python;BRAID_CUDA_MODULE=${CMAKE_BINARY_DIR}/libbraid_cuda.so")
if(NOT BRAID_HAVE_CUDA)
  set(PKG_ENV "BRAID_LIB=$<TARGET_FILE:braid>;PYTHONPATH=${CMAKE_SOURCE_DIR}/python")
endif()
add_test(NAME package/api COMMAND ${BRAID_PYTHON} -m pytest -q -p no:cacheprovider -W ignore
         ${CMAKE_SOURCE_DIR}/tests/package/test_api.py)
set_tests_properties(package/api PROPERTIES LABELS "python;api" TIMEOUT 300 ENVIRONMENT "${PKG_ENV}")
add_test(NAME package/sequence COMMAND ${BRAID_PYTHON} -m pytest -q -p no:cacheprovider -W ignore
         ${CMAKE_SOURCE_DIR}/tests/package/test_sequence.py)
set_tests_properties(package/sequence PROPERTIES LABELS "python;api" TIMEOUT 300 ENVIRONMENT "${PKG_ENV}")
if(BRAID_HAVE_CUDA) # the package on the CUDA backend, on the emulated device
  add_test(NAME package/cuda_emulated COMMAND ${BRAID_PYTHON} -m pytest -q -p no:cacheprovider -W ignore
           ${CMAKE_SOURCE_DIR}/tests/package/test_cuda_emulated.py)
  set_tests_properties(package/cuda_emulated PROPERTIES LABELS "python;api;emu" TIMEOUT 300 FIXTURES_REQUIRED models
    ENVIRONMENT "${PKG_ENV};BRAID_CUDA_EMULATOR=1;BRAID_CUDA_EMULATOR_MODULE=${CMAKE_BINARY_DIR}/libbraid_cuda_emu.so"
    FAIL_REGULAR_EXPRESSION "braid CUDA emulator: ")
endif()
add_test(NAME package/onnx_backend COMMAND ${BRAID_PYTHON} -m pytest -q -p no:cacheprovider -W ignore
         ${CMAKE_SOURCE_DIR}/tests/package/test_onnx_backend.py)
set_tests_properties(package/onnx_backend PROPERTIES LABELS "python;node" TIMEOUT 1200
  ENVIRONMENT "${PKG_ENV};BRAID_MIN_NODE_PASS=1700")
add_test(NAME package/wheel COMMAND ${CMAKE_SOURCE_DIR}/tests/package/test_wheel.sh ${BRAID_PYTHON}
         ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${CMAKE_BINARY_DIR}/tmp/wheel)
set_tests_properties(package/wheel PROPERTIES LABELS "python;api" TIMEOUT 600)
