#!/usr/bin/env bash
# tests/emu/full.sh: the whole matrix of the CUDA backend on the emulated
# device, longer than CI allows (scripts/test --emulator-full runs it after
# the normal suite): the node tests and the generated models at 1, 2, 4 and
# automatic streams, with and without CUDA graphs, in the three I/O modes;
# every real model the same way; the branchy models 200 times each under
# random delays, with three seeds.
#   full.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
export BRAID_CUDA_EMULATOR=1 BRAID_CUDA_EMULATOR_MODULE=$build/libbraid_cuda_emu.so
export BRAID_SOURCE_DIR=$src BRAID_NODE_DATA=$build/onnx_node BRAID_TEST_TMP=$build/tmp
py=${BRAID_PYTHON:-$src/.venv/bin/python}
fails=0 runs=0
run() { # run LABEL CMD...: one cell of the matrix
  local label=$1
  shift
  runs=$((runs + 1))
  if "$@" >"$build/tmp/emu-full.log" 2>&1; then
    echo "PASS $label"
  else
    fails=$((fails + 1))
    echo "FAIL $label"
    grep -E '^FAIL|emulator:' "$build/tmp/emu-full.log" | head -5 | sed 's/^/  /'
  fi
}
mkdir -p "$build/tmp"
for io in staged mapped managed; do
  for streams in 1 2 4 0; do
    for graph in "" graph; do
      BRAID_CUDA_IO=$io run "nodes io=$io streams=$streams ${graph:-nograph}" \
        "$build/tests/test_cuda_models" nodes "$streams" $graph
    done
  done
  for graph in "" graph; do
    BRAID_CUDA_IO=$io run "models io=$io ${graph:-nograph}" "$build/tests/test_cuda_models" models $graph
  done
  if ls "$src"/models/real/*.onnx >/dev/null 2>&1; then
    BRAID_CUDA_IO=$io run "real models io=$io streams 1,2,4,0" "$py" "$src/tests/real/run_real.py" \
      --lib "$build/libbraid.so" --braid "$build/braid" --python "$py" --models "$src/models/real" \
      --backend cuda --streams 1,2,4,0
  fi
done
for seed in 1 2 3; do
  BRAID_CUDA_EMULATOR_DELAY=$seed:300 run "branchy x200 delays seed $seed" "$build/tests/test_cuda_models" branchy 200
done
echo "emulator matrix: $((runs - fails)) of $runs pass"
[ "$fails" = 0 ]
