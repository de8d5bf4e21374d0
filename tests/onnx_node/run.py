"""run.py: runs every ONNX backend node test through `braid check` and
prints how many ran, passed, failed and were skipped as unsupported.

A test is skipped only when braid reports the model as unsupported (exit 3:
an op, dtype or attribute it does not run). Any other failure, such as a wrong
number, fails the suite, and so does a pass count under --min-pass.
Usage: run.py BRAID DATA_DIR [--min-pass N] [--backend cpu] [--streams N]
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import sys


def run_one(braid, case, extra):
    try:
        p = subprocess.run([braid, "check", case] + extra, capture_output=True, text=True, timeout=120)
        out = (p.stdout.strip().splitlines() or [""])[-1] + p.stderr.strip()
        return case, p.returncode, out
    except subprocess.TimeoutExpired:
        return case, 124, "timed out after 120 s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("braid")
    ap.add_argument("data")
    ap.add_argument("--min-pass", type=int, default=0)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--streams", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list-skips", action="store_true")
    a = ap.parse_args()
    extra = ["--backend", a.backend, "--threads", "1"]
    if a.streams:
        extra += ["--streams", a.streams]
    cases = sorted(os.path.join(a.data, d) for d in os.listdir(a.data) if d.startswith("test_"))
    passed, failed, skipped = [], [], []
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        for case, rc, out in ex.map(lambda c: run_one(a.braid, c, extra), cases):
            if rc == 0:
                passed.append(case)
            elif rc == 3:
                skipped.append((case, out))
            else:
                failed.append((case, out))
    for case, out in failed:
        print(f"FAILED {os.path.basename(case)}: {out}")
    if a.list_skips:
        for case, out in skipped:
            print(f"skipped {os.path.basename(case)}: {out}")
    print(f"node tests: {len(cases)} ran, {len(passed)} passed, {len(failed)} failed, "
          f"{len(skipped)} skipped as unsupported")
    if len(passed) < a.min_pass:
        print(f"node tests: fewer than {a.min_pass} passed")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
