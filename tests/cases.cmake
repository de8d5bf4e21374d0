# cases.cmake: ctest registrations beyond the unit tests: generated data
# (fixtures), the ONNX node tests, the models/ tests at several stream
# counts, plan-shape tests, and command-line error tests.
set(PY ${BRAID_PYTHON})
set(BRAID_BIN $<TARGET_FILE:braid_cli>)
set(NODE_DATA ${CMAKE_BINARY_DIR}/onnx_node)
set(MODELS ${CMAKE_SOURCE_DIR}/models/gen)

add_test(NAME gen/node_tests COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/onnx_node/gen.py ${NODE_DATA})
set_tests_properties(gen/node_tests PROPERTIES FIXTURES_SETUP node_data TIMEOUT 600)
add_test(NAME gen/models COMMAND ${PY} ${CMAKE_SOURCE_DIR}/scripts/make-models ${MODELS})
set_tests_properties(gen/models PROPERTIES FIXTURES_SETUP models TIMEOUT 600)

# Every node test whose ops braid supports must pass; at least 350 must.
add_test(NAME onnx_node/cpu COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/onnx_node/run.py ${BRAID_BIN} ${NODE_DATA} --min-pass 350)
set_tests_properties(onnx_node/cpu PROPERTIES FIXTURES_REQUIRED node_data LABELS node TIMEOUT 1500)

# The elementwise families (unary, activation, binary, cast) against onnx's
# reference on every op and dtype, and their float32 loops still vectorized.
add_test(NAME elementwise/reference COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_elementwise.py ${BRAID_BIN})
set_tests_properties(elementwise/reference PROPERTIES LABELS node TIMEOUT 900)
add_test(NAME elementwise/vectorized COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_vectorized.py $<TARGET_OBJECTS:braid_obj>)
set_tests_properties(elementwise/vectorized PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)

foreach(model two_conv_add inception fpn wide race residual affine if_branches loop)
  foreach(streams 1 2 4 0)
    add_test(NAME models/${model}/streams${streams} COMMAND ${BRAID_BIN} check ${MODELS}/${model} --backend cpu --streams ${streams})
    set_tests_properties(models/${model}/streams${streams} PROPERTIES FIXTURES_REQUIRED models LABELS models TIMEOUT 300)
  endforeach()
endforeach()

add_test(NAME models/plans COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/models/test_plans.py ${BRAID_BIN} ${MODELS})
set_tests_properties(models/plans PROPERTIES FIXTURES_REQUIRED models LABELS models TIMEOUT 600)

add_test(NAME cli/errors COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/cli/test_errors.py ${BRAID_BIN} ${CMAKE_BINARY_DIR}/tmp/cli)
set_tests_properties(cli/errors PROPERTIES FIXTURES_REQUIRED models LABELS cli TIMEOUT 300)

if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/real.cmake)
  include(${CMAKE_CURRENT_SOURCE_DIR}/real.cmake)
endif()
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/gpu.cmake)
  include(${CMAKE_CURRENT_SOURCE_DIR}/gpu.cmake)
endif()

# The embedding example, from the build tree and against an installed copy.
add_test(NAME examples/embed COMMAND $<TARGET_FILE:embed> ${MODELS}/two_conv_add/model.onnx 2)
set_tests_properties(examples/embed PROPERTIES FIXTURES_REQUIRED models LABELS api
  PASS_REGULAR_EXPRESSION "output y: float32 \\[2, 32, 32, 32\\]")
# (normal builds only: a program built without a sanitizer cannot load a
# sanitizer-built libbraid.so)
if(NOT BRAID_SANITIZE)
  add_test(NAME install/embed COMMAND ${CMAKE_SOURCE_DIR}/tests/install/test_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/tmp/install)
  set_tests_properties(install/embed PROPERTIES FIXTURES_REQUIRED models LABELS api TIMEOUT 600)
endif()

# valgrind: `braid run` on a multi-stream model leaks nothing and touches no
# uninitialised memory (normal builds only; sanitizer builds have their own).
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT BRAID_SANITIZE AND NOT BRAID_FUZZ)
  add_test(NAME valgrind/run COMMAND ${VALGRIND} --suppressions=${CMAKE_SOURCE_DIR}/tests/valgrind.supp --leak-check=full --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=1 ${BRAID_BIN} run ${MODELS}/inception/model.onnx
    --backend cpu --streams 0)
  set_tests_properties(valgrind/run PROPERTIES FIXTURES_REQUIRED models LABELS valgrind TIMEOUT 600)
endif()

# The data-movement ops on every dtype braid holds, against onnx's reference.
add_test(NAME unit/data_dtypes COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_data_dtypes.py ${BRAID_BIN}
         ${CMAKE_BINARY_DIR}/tmp/data_dtypes)
set_tests_properties(unit/data_dtypes PROPERTIES LABELS unit TIMEOUT 600)

# Narrow float conversions (src/util/dtype.h) against ml_dtypes and onnx.
add_executable(dtype_dump ${CMAKE_SOURCE_DIR}/tests/dtype/dtype_dump.c)
target_link_libraries(dtype_dump PRIVATE braid_static)
add_test(NAME unit/dtype COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/dtype/test_dtype.py $<TARGET_FILE:dtype_dump>)
set_tests_properties(unit/dtype PROPERTIES LABELS unit TIMEOUT 300)

# The recurrent ops (LSTM, GRU, RNN, com.microsoft DynamicQuantizeLSTM) through the
# shared library against a double reference, onnxruntime and onnx's reference, at
# streams 1, 2 and automatic (ctypes: not under sanitizers).
if(NOT BRAID_SANITIZE)
  add_test(NAME python/rnn COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_rnn.py)
  set_tests_properties(python/rnn PROPERTIES LABELS "python" TIMEOUT 600
    ENVIRONMENT "BRAID_LIB=$<TARGET_FILE:braid>;BRAID_BIN=${BRAID_BIN};BRAID_TEST_TMP=${CMAKE_BINARY_DIR}/tmp")
endif()
# The com.microsoft transformer ops (FusedMatMul, FusedGemm, MultiHeadAttention,
# Attention, EmbedLayerNormalization, RotaryEmbedding) against onnxruntime.
add_test(NAME unit/contrib_attention COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_contrib_attention.py ${BRAID_BIN}
         ${CMAKE_BINARY_DIR}/tmp/contrib_attention)
set_tests_properties(unit/contrib_attention PROPERTIES LABELS unit TIMEOUT 600)
# ai.onnx.preview FlexAttention (expanded at load) against onnx's reference:
# modifiers reading outer values, GQA, dtypes and softmax precisions, refusals.
add_test(NAME unit/flex_attention COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_flex_attention.py ${BRAID_BIN}
         ${CMAKE_BINARY_DIR}/tmp/flex_attention)
set_tests_properties(unit/flex_attention PROPERTIES LABELS unit TIMEOUT 600)
# ai.onnx.ml on strings (LabelEncoder, CategoryMapper) and the SVMs against onnxruntime.
add_test(NAME unit/ml_strings COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_ml_strings.py ${BRAID_BIN}
         ${CMAKE_BINARY_DIR}/tmp/ml_strings)
set_tests_properties(unit/ml_strings PROPERTIES LABELS unit TIMEOUT 600)
# Cast and CastLike between strings and numbers, against numpy's text and parse.
add_test(NAME unit/cast_strings COMMAND ${PY} ${CMAKE_SOURCE_DIR}/tests/python/test_cast_strings.py ${BRAID_BIN}
         ${CMAKE_BINARY_DIR}/tmp/cast_strings)
set_tests_properties(unit/cast_strings PROPERTIES LABELS unit TIMEOUT 600)
