"""run.py: runs every ONNX backend node test through `braid check` and
prints how many ran, passed, failed and were skipped as unsupported, then
ranks what the skipped tests lack, so that progress is visible.

A test is skipped only when braid reports the model as unsupported (exit 3:
an op, dtype or attribute it does not run). Any other failure, such as a wrong
number, fails the suite, and so does a pass count under --min-pass.

The ranking: `braid info` lists the ops a model uses that braid does not
run; each op is counted once per test it blocks, and again under "only
blocker" where it is the test's one missing op. Tests whose ops are all
known are ranked by braid's reason (a dtype, an attribute), made generic by
dropping node and value names.
Usage: run.py BRAID DATA_DIR [--min-pass N] [--backend cpu] [--streams N] [--list-skips]
"""
import argparse
import collections
import concurrent.futures as cf
import os
import re
import subprocess
import sys


def run_one(braid, case, extra):
    try:
        p = subprocess.run([braid, "check", case] + extra, capture_output=True, text=True, timeout=120)
        out = (p.stdout.strip().splitlines() or [""])[-1] + p.stderr.strip()
        return case, p.returncode, out
    except subprocess.TimeoutExpired:
        return case, 124, "timed out after 120 s"


def missing_ops(braid, case):
    """The ops of the case's model that braid does not run (from `braid info`)."""
    p = subprocess.run([braid, "info", os.path.join(case, "model.onnx")], capture_output=True, text=True,
                       timeout=60)
    for line in p.stdout.splitlines():
        if line.startswith("unsupported ops:"):
            return line.split()[3:]
    return []


def reason(out):
    """A skip message without names, so that equal causes count together."""
    r = re.sub(r"^SKIP \S+: ", "", out.split("model.onnx: ")[-1])
    r = re.sub(r"node '[^']*' ", "", r)
    r = re.sub(r"(input|output|tensor|value|graph input) '[^']*'", r"\1", r)
    return r[:150]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("braid")
    ap.add_argument("data")
    ap.add_argument("--min-pass", type=int, default=0)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--streams", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--list-skips", action="store_true")
    ap.add_argument("--top", type=int, default=40, help="rows of each ranking")
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
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        lacks = list(ex.map(lambda s: missing_ops(a.braid, s[0]), skipped))
    by_op, only_op, by_reason = collections.Counter(), collections.Counter(), collections.Counter()
    for (case, out), ops in zip(skipped, lacks):
        for op in set(ops):
            by_op[op] += 1
        if len(set(ops)) == 1:
            only_op[ops[0]] += 1
        if not ops:
            by_reason[reason(out)] += 1
    if skipped:
        print(f"what the {len(skipped)} skipped tests lack (tests blocked; only blocker):")
        for op, n in by_op.most_common(a.top):
            print(f"  op {op:32s} {n:4d}  {only_op[op]:4d}")
        if len(by_op) > a.top:
            print(f"  ... and {len(by_op) - a.top} more ops")
        for r, n in by_reason.most_common(a.top):
            print(f"  {n:4d}  {r}")
    total = len(cases)
    print(f"node tests: {total} ran, {len(passed)} passed ({100.0 * len(passed) / max(total, 1):.1f}%), "
          f"{len(failed)} failed, {len(skipped)} skipped as unsupported")
    if len(passed) < a.min_pass:
        print(f"node tests: fewer than {a.min_pass} passed")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
