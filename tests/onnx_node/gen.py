"""gen.py: writes the ONNX backend node tests of the installed onnx package
(model.onnx + test_data_set_*/{input,output}_N.pb per case) into a folder.

Recent onnx wheels ship the case definitions but not their data, so the data
is made here at test time from the same definitions; nothing is committed.
Usage: gen.py OUTDIR   (skips the work when OUTDIR/.stamp matches onnx's version)
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def write_case(case, root):
    out = os.path.join(root, case.name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    for i, (inputs, outputs) in enumerate(case.data_sets):
        d = os.path.join(out, f"test_data_set_{i}")
        os.makedirs(d, exist_ok=True)
        for kind, values, decl in (("input", inputs, case.model.graph.input),
                                   ("output", outputs, case.model.graph.output)):
            for j, v in enumerate(values):
                if not decl[j].type.HasField("tensor_type"):
                    raise TypeError("not a tensor")
                t = v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(
                    np.asarray(v), decl[j].name)
                with open(os.path.join(d, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
    # Per-case tolerances, as onnx's own runner uses them.
    with open(os.path.join(out, "tolerance.txt"), "w") as f:
        f.write(f"{case.rtol} {case.atol}\n")


def main():
    root = sys.argv[1]
    stamp = os.path.join(root, ".stamp")
    if os.path.exists(stamp) and open(stamp).read() == onnx.__version__:
        return
    os.makedirs(root, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = node.collect_testcases()
    written = skipped = 0
    for case in cases:
        try:
            write_case(case, root)
            written += 1
        except (TypeError, ValueError):
            shutil.rmtree(os.path.join(root, case.name), ignore_errors=True)
            skipped += 1  # sequences, maps, optionals: not tensors
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print(f"gen.py: wrote {written} node tests ({skipped} with non-tensor values skipped) to {root}")


if __name__ == "__main__":
    main()
