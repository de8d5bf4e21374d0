"""gen.py: writes the ONNX backend node tests of the installed onnx package
(model.onnx + test_data_set_*/{input,output}_N.pb per case) into a folder.

Recent onnx wheels ship the case definitions but not their data, so the data
is made here at test time from the same definitions; nothing is committed.
Usage: gen.py OUTDIR   (skips the work when OUTDIR/.stamp matches onnx's version and FORMAT)
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def to_proto(v, tp, name):
    """A value as the proto its declared type calls for: TensorProto,
    SequenceProto (a list of arrays) or OptionalProto (None when empty)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type" or (kind is None and not isinstance(v, list)):
        return v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(np.asarray(v), name)
    if kind == "sequence_type":
        if tp.sequence_type.elem_type.WhichOneof("value") != "tensor_type":
            raise TypeError("a sequence of non-tensors")
        return numpy_helper.from_list([np.asarray(x) for x in v], name)
    if kind == "optional_type":
        inner = tp.optional_type.elem_type
        ik = inner.WhichOneof("value")
        if ik not in ("tensor_type", "sequence_type"):
            raise TypeError("an optional of a map")
        o = onnx.OptionalProto()
        o.name = name
        if v is None:  # empty: the element type only
            o.elem_type = onnx.OptionalProto.TENSOR if ik == "tensor_type" else onnx.OptionalProto.SEQUENCE
        elif ik == "tensor_type":
            o.elem_type = onnx.OptionalProto.TENSOR
            o.tensor_value.CopyFrom(to_proto(v, inner, name))
        else:
            o.elem_type = onnx.OptionalProto.SEQUENCE
            o.sequence_value.CopyFrom(to_proto(v, inner, name))
        return o
    raise TypeError(f"a {kind} value")


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
                t = to_proto(v, decl[j].type, decl[j].name)
                with open(os.path.join(d, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
    # Per-case tolerances, as onnx's own runner uses them.
    with open(os.path.join(out, "tolerance.txt"), "w") as f:
        f.write(f"{case.rtol} {case.atol}\n")


# Bumped when what is written changes (2: sequence and optional values), so
# that an older folder is written again.
FORMAT = 2


def main():
    root = sys.argv[1]
    stamp = os.path.join(root, ".stamp")
    tag = f"{onnx.__version__} format {FORMAT}"
    if os.path.exists(stamp) and open(stamp).read() == tag:
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
            skipped += 1  # maps and the like: neither tensors, sequences nor optionals
    with open(stamp, "w") as f:
        f.write(tag)
    print(f"gen.py: wrote {written} node tests ({skipped} with values of other types skipped) to {root}")


if __name__ == "__main__":
    main()
