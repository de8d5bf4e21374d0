#!/usr/bin/env bash
# test_wheel.sh: builds braid's wheel with pip from the repository root and
# installs it into a fresh venv, as a user would, then runs test_api.py there
# with nothing set (no PYTHONPATH, no BRAID_LIB) from outside the repository.
# To keep CI short the wheel takes the libbraid.so this build already made
# (CMake option BRAID_PREBUILT_DIR) instead of compiling braid a second time;
# everything else is the real path (pyproject.toml, scikit-build-core, CMake
# install rules, pip). Without network: the wheel is built with the
# build-requirements of PYTHON's venv (--no-build-isolation, scikit-build-core
# from scripts/setup) and installed --no-index --no-deps; the fresh venv sees
# numpy, onnx and pytest through a .pth file naming PYTHON's site-packages.
# Usage: test_wheel.sh PYTHON SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
py=$1 src=$2 build=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
"$py" -m pip wheel "$src" --no-build-isolation --no-deps --disable-pip-version-check -q -w "$work/dist" \
  -Ccmake.define.BRAID_PREBUILT_DIR="$build" -Cbuild-dir="$work/skbuild"
whl=$(ls "$work"/dist/braid-*.whl)
echo "wheel: $whl"
"$py" -m venv --without-pip "$work/venv" 2>/dev/null || python3 -m venv --without-pip "$work/venv"
"$py" -m pip --python "$work/venv/bin/python" install --no-index --no-deps --disable-pip-version-check -q "$whl" 2>/dev/null ||
  "$py" -m pip install --no-index --no-deps --disable-pip-version-check -q --prefix "$work/venv" "$whl"
site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$py" -c "import numpy, sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/zz_deps.pth"
cd "$work"
env -u PYTHONPATH -u BRAID_LIB "$work/venv/bin/python" - "$work/venv" <<'PY'
import os, sys
import braid
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(braid.__file__).startswith(venv), braid.__file__
assert os.path.realpath(braid.library_path()).startswith(venv), braid.library_path()
print("installed braid", braid.__version__, "from", os.path.dirname(braid.__file__), "providers", braid.get_available_providers())
PY
test -x "$work/venv/bin/braid" && "$work/venv/bin/braid" --help >/dev/null 2>&1 || echo "note: no braid command in the venv's bin"
env -u PYTHONPATH -u BRAID_LIB "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore \
  --rootdir "$work" "$src/tests/package/test_api.py"
