"""test_vectorized.py: the float32 loops of the elementwise CPU kernels must
stay vectorized. A select that GCC cannot if-convert (a short-circuit ||, an
equality on a clamped value) silently turns a loop scalar and 4-8 times
slower, with every result still right, so no other test would notice. This
one disassembles the x86-64-v3 clones of the float32 kernels of
src/backend/cpu/ops/{unary,activation}.c and fails when one has no ymm
(256-bit) instruction.

Usage: test_vectorized.py OBJECT...   (the library's object files; the two
       kernel objects are picked among them). Exits 77 (skipped) where there
       is nothing to check: no objdump, or a build without the clones (not
       x86-64 GCC, or a sanitizer build).
"""
import re
import shutil
import subprocess
import sys

# The float32 kernels that call libm (one scalar call per element).
SCALAR = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}


def functions(obj):
    """{name: disassembly} of every function in obj."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True).stdout
    funcs, name = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name and line.strip():
            funcs[name].append(line)
    return funcs


def main():
    args = [o for a in sys.argv[1:] for o in a.split(";")]  # ctest hands a CMake list as one argument
    objs = [o for o in args if re.search(r"backend/cpu/ops/(unary|activation)\.c\.o$", o)]
    if not shutil.which("objdump") or len(objs) != 2:
        print("SKIPPED: no objdump, or the kernel objects were not given")
        return 77
    checked, bad = 0, []
    for obj in objs:
        for name, body in functions(obj).items():
            m = re.match(r"^(un|act|row)_(\w+)_FLOAT\.arch_x86_64_v3$", name)
            if not m or m.group(2) in SCALAR:
                continue
            checked += 1
            if not any("ymm" in line for line in body):
                bad.append(name)
    if not checked:
        print("SKIPPED: this build has no x86-64-v3 clones")
        return 77
    for name in bad:
        print(f"NOT VECTORIZED: {name}")
    print(f"vectorized: {checked - len(bad)} of {checked} float32 kernels")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
