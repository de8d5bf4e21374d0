# tests/real.cmake: the accuracy tests that load the shared library from Python
# (ctypes): scripts/compare.py's own tests, the quantization ops and quantized
# models against onnxruntime (tests/python/test_quant.py), and the real PP-OCRv4
# models against onnxruntime (skipped, exit 77, until scripts/fetch-models has
# run). Included from tests/CMakeLists.txt. Not under sanitizers: a
# ctypes-loaded ASan/TSan library needs its runtime preloaded into Python, so
# these run in the normal build.
if(NOT BRAID_SANITIZE)
  add_test(NAME python/compare
    COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/python/test_compare.py)
  set_tests_properties(python/compare PROPERTIES LABELS "python" TIMEOUT 300
    ENVIRONMENT "BRAID_LIB=$<TARGET_FILE:braid>")

  add_test(NAME python/quant
    COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/python/test_quant.py)
  set_tests_properties(python/quant PROPERTIES LABELS "python" TIMEOUT 600
    ENVIRONMENT "BRAID_LIB=$<TARGET_FILE:braid>")

  add_test(NAME real/pp-ocrv4
    COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/real/run_real.py
            --lib $<TARGET_FILE:braid> --python ${BRAID_PYTHON} --models ${CMAKE_SOURCE_DIR}/models/real)
  set_tests_properties(real/pp-ocrv4 PROPERTIES LABELS "real" SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
