#!/usr/bin/env bash
# test_install.sh: installs braid into a fresh prefix with cmake --install,
# then builds examples/embed.c against that copy twice, through pkg-config and
# through find_package(braid), and runs both on a model.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR TMP_DIR
set -u
build=$1 src=$2 tmp=$3
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
rm -rf "$tmp" && mkdir -p "$tmp"
prefix=$tmp/prefix
model=$src/models/gen/two_conv_add/model.onnx
want="output y: float32 [2, 32, 32, 32]"

if cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then ok; else bad "cmake --install"; cat "$tmp/install.log"; fi
libdir=$(dirname "$(find "$prefix" -name 'libbraid.so' | head -1)")
for f in include/braid.h "$(basename "$libdir")/pkgconfig/braid.pc" "$(basename "$libdir")/cmake/braid/braidConfig.cmake" bin/braid; do
  [ -e "$prefix/$f" ] && ok || bad "missing $prefix/$f"
done

# pkg-config
if PKG_CONFIG_PATH=$libdir/pkgconfig cc "$src/examples/embed.c" $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs braid) \
     -Wl,-rpath,"$libdir" -o "$tmp/embed_pc" 2>"$tmp/pc.log"; then ok; else bad "build with pkg-config"; cat "$tmp/pc.log"; fi
out=$("$tmp/embed_pc" "$model" 2 2>&1); echo "$out" | grep -qF "$want" && ok || bad "embed (pkg-config) printed: $out"

# find_package
if cmake -S "$src/examples" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_RPATH="$libdir" >"$tmp/cm.log" 2>&1 &&
   cmake --build "$tmp/cm" >>"$tmp/cm.log" 2>&1; then ok; else bad "build with find_package"; cat "$tmp/cm.log"; fi
out=$("$tmp/cm/embed" "$model" 2 2>&1); echo "$out" | grep -qF "$want" && ok || bad "embed (find_package) printed: $out"

# The CUDA backend is a library of its own: when built, it is installed beside
# libbraid.so and the installed program loads it from there (here it then
# finds no device), while braid itself never needs cuDNN or cuBLAS to start.
if [ -e "$build/libbraid_cuda.so" ]; then
  [ -e "$libdir/libbraid_cuda.so" ] && ok || bad "missing $libdir/libbraid_cuda.so"
  out=$("$prefix/bin/braid" run "$model" --shape x=1x16x32x32 --backend cuda 2>&1)
  case "$out" in
    *"could not be loaded"*) bad "the installed braid did not load its CUDA library: $out" ;;
    *"no CUDA device answers"*|*"backend cuda"*) ok ;;
    *) bad "installed braid --backend cuda printed: $out" ;;
  esac
fi
for f in "$prefix/bin/braid" "$libdir/libbraid.so"; do
  if readelf -d "$f" | grep -q 'NEEDED.*\(cudnn\|cublas\|cudart\)'; then bad "$f needs a CUDA library to start"; else ok; fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
