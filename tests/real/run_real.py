#!/usr/bin/env python3
"""run_real.py: the real models of tests/real/models.tsv (fetched by scripts/fetch-models
into models/real/) run by braid and by onnxruntime on the fixed inputs of
tests/real/cases.py, every output compared at the tolerances stated there.

Each case runs through scripts/compare.py in a child process (so a crash in braid is a
failure of that case, not of the runner), once per --streams value, and its outputs are
then checked here output by output: elementwise |braid - ort| <= atol + rtol*|ort|, the
arg-max over the class axis wherever onnxruntime's top two differ by more than the
case's margin, and, for the quantized models, a cosine-similarity floor.

The two statically quantized models are made by tests/real/derive.py (called by
fetch-models) from fetched float ones. A model braid cannot run yet is skipped, naming the ops it lacks (subgraphs of If, Loop
and Scan included, asked of `braid info` through a probe model), so that its test starts
passing as soon as those ops land. A model not fetched is skipped too.

Usage: run_real.py [--model FILE]... [--lib build/libbraid.so] [--braid build/braid]
                   [--python PY] [--models DIR] [--backend cpu|cuda] [--streams 0,1,...]
Exit 0 when every model run passes, 1 on any failure, 77 (ctest's skip code) when no
model could be run (not fetched, or every one lacks ops).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
import cases  # noqa: E402
from compare import compare, report_line  # noqa: E402

SKIP = 77


def manifest_files():
    """The fetched models (models.tsv), then the derived ones (derive.py)."""
    import derive
    files = []
    with open(os.path.join(HERE, "models.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                files.append(line.split("\t")[0])
    return files + [d[0] for d in derive.DERIVED]


def check_outputs(case, names, save):
    """Per-output verdicts on the saved arrays; returns (ok, report lines)."""
    ok, lines = True, []
    for i, name in enumerate(names):
        got = np.load(os.path.join(save, f"braid_{i}.npy"))
        ref = np.load(os.path.join(save, f"onnxruntime_{i}.npy"))
        atol, rtol = case.tol_of(name)
        res = compare(got, ref, atol, rtol)
        this = res[0]
        line = report_line(name, got, ref, res) + f"  (atol {atol:g} rtol {rtol:g})"
        if case.cosine is not None and got.dtype.kind == "f" and res[3] < case.cosine:
            this = False
            line += f"  cosine under {case.cosine}: FAIL"
        lines.append(line)
        if name in case.argmax and got.shape == ref.shape and got.size:
            axis, margin = case.argmax[name]
            top2 = np.moveaxis(np.sort(ref, axis=axis), axis, -1)[..., -2:]
            clear = (top2[..., 1] - top2[..., 0]) > margin
            same = np.argmax(got, axis=axis) == np.argmax(ref, axis=axis)
            bad = int((clear & ~same).sum())
            this &= bad == 0
            lines.append(f"    arg-max over axis {axis}: {int(clear.sum()) - bad} of {int(clear.sum())} positions "
                         f"clear by more than {margin:g} agree{'' if bad == 0 else ': FAIL'}")
        ok &= this
    return ok, lines


def run_model(a, file, ctx, tmp):
    """Returns 'pass', 'fail' or 'skip', printing what happened."""
    path = os.path.join(a.models, file)
    if not os.path.exists(path):
        print(f"real: SKIP {file}: not in {a.models} (run scripts/fetch-models)")
        return "skip"
    try:
        missing = cases.missing_ops(a.braid, path)
    except RuntimeError as e:
        print(f"real: FAIL {file}: {e}")
        return "fail"
    if missing:
        print(f"real: SKIP {file}: braid does not run yet: {', '.join(missing)}")
        return "skip"
    if file in cases.KNOWN_WRONG:  # a known bug, named, until it is fixed
        print(f"real: SKIP {file}: known wrong in braid: {cases.KNOWN_WRONG[file]}")
        return "skip"
    if cases.reference_unreliable(file):
        print(f"real: SKIP {file}: {cases.reference_unreliable(file)}")
        return "skip"
    import onnx
    names = [o.name for o in onnx.load(path, load_external_data=False).graph.output]
    verdicts = []
    for k, case in enumerate(cases.MODELS[file]):
        feeds = case.feeds(ctx)
        args = []
        for name, arr in feeds.items():
            npy = os.path.join(tmp, f"{file}.{k}.{name.replace('/', '_')}.npy")
            np.save(npy, arr)
            args += ["--input", f"{name}={npy}"]
        loosest = max((case.tol_of(n) for n in names), key=lambda t: t[0] + t[1])
        for streams in a.streams:
            save = os.path.join(tmp, f"{file}.{k}.s{streams}")
            cmd = [a.python, os.path.join(REPO, "scripts", "compare.py"), path, "--lib", a.lib, "--backend", a.backend,
                   "--streams", str(streams), "--atol", str(loosest[0]), "--rtol", str(loosest[1]),
                   "--save-dir", save] + args
            p = subprocess.run(cmd, capture_output=True, text=True)
            label = f"{file} [{case.name}] streams {streams or 'auto'}"
            if p.returncode == 2 or not os.path.isdir(save):
                out = (p.stdout + p.stderr).strip().splitlines()
                why = next((l for l in out if l.startswith("braid failed")), out[-1] if out else "no output")
                if "UNSUPPORTED" in why:
                    print(f"real: SKIP {label}: {why}")
                    verdicts.append("skip")
                else:
                    print(f"real: FAIL {label}: compare.py exited {p.returncode}")
                    print("    " + "\n    ".join(out[-6:]))
                    verdicts.append("fail")
                continue
            ok, lines = check_outputs(case, names, save)
            print(f"real: {'PASS' if ok else 'FAIL'} {label}")
            for l in lines:
                print(f"    {l.strip()}")
            verdicts.append("pass" if ok else "fail")
    if "fail" in verdicts:
        return "fail"
    return "pass" if "pass" in verdicts else "skip"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=[], help="a file of tests/real/models.tsv (default: all)")
    ap.add_argument("--lib", default=os.environ.get("BRAID_LIB", os.path.join(REPO, "build", "libbraid.so")))
    ap.add_argument("--braid", default=None, help="the braid command (default: next to --lib)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--models", default=os.path.join(REPO, "models", "real"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--streams", default="0", help="comma-separated braid stream counts (0 = automatic)")
    a = ap.parse_args()
    a.braid = a.braid or os.path.join(os.path.dirname(os.path.abspath(a.lib)), "braid")
    a.streams = [int(s) for s in a.streams.split(",")]
    listed = manifest_files()
    cmake = open(os.path.join(REPO, "tests", "real.cmake")).read()
    import derive
    for f in (d[0] for d in derive.DERIVED):
        if f not in cmake:
            sys.exit(f"real: {f} (tests/real/derive.py) has no test in tests/real.cmake")
    for f in a.model:
        if f not in listed:
            sys.exit(f"real: {f} is not in tests/real/models.tsv")
    unlisted = [f for f in listed if f not in cases.MODELS]
    if unlisted:
        sys.exit(f"real: {', '.join(unlisted)} in models.tsv without cases in tests/real/cases.py")
    ctx = cases.Ctx(a.models)
    results = {}
    with tempfile.TemporaryDirectory(prefix="braid-real-") as tmp:
        for f in a.model or listed:
            results[f] = run_model(a, f, ctx, tmp)
    counts = {v: sum(1 for r in results.values() if r == v) for v in ("pass", "fail", "skip")}
    print(f"real: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    if counts["fail"]:
        return 1
    return 0 if counts["pass"] else SKIP


if __name__ == "__main__":
    sys.exit(main())
