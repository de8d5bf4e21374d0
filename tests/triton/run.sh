#!/usr/bin/env bash
# tests/triton/run.sh: runs test_triton.py with .venv-triton's Python (the
# Triton client and onnxruntime, installed by scripts/setup); reports the test
# skipped (exit 77) when that environment was not installed.
#   run.sh SOURCE_DIR ARGS...   (ARGS go to test_triton.py)
src=$1; shift
py=$src/.venv-triton/bin/python
if [ ! -x "$py" ]; then
  echo "SKIPPED: $src/.venv-triton is not installed (scripts/setup installs Triton Inference Server and its client there)"
  exit 77
fi
exec "$py" "$src/tests/triton/test_triton.py" "$@"
