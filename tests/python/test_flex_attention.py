"""test_flex_attention.py: ai.onnx.preview FlexAttention (expanded at load by
src/onnx/flexattn.c) against onnx's reference implementation, on what the node
tests leave out, and its refusals with their exact messages.

Cases (expected outputs from onnx.reference.ReferenceEvaluator; `braid check`
must match within atol + rtol * |ref|: 1e-5 for float, 1e-12 for double,
2e-3 for float16 and 2e-2 for bfloat16 outputs, one rounding of the output
type at most):
  - a score_mod that reads a value of the outer graph (an additive bias given
    as a graph input) and one with its own initializer;
  - a score_mod whose output is its input, and a prob_mod that gives back an
    outer value of the same shape;
  - score_mod and prob_mod together, with GQA (8 query heads on 2) and a scale;
  - float16 with softmax_precision 10 (the softmax in float16), bfloat16
    with softmax_precision 1, double;
  - a query sequence of length 0 (an empty output) and Q produced by another
    node (its dtype unknown at load) with softmax_precision set;
  - -inf scores from score_mod in all but one key.
Refusals: softmax_precision 2, a score_mod with two inputs, a subgraph that
holds a subgraph, an integer Q, an unknown attribute, Q of unknown dtype with
no softmax_precision, and a model whose default-domain opset is below 15.
Usage: test_flex_attention.py BRAID WORK_DIR"""
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

PV = "ai.onnx.preview"


def vi(name, dt, shape=None):
    return helper.make_tensor_value_info(name, dt, shape)


def model_of(nodes, inputs, outputs, inits=(), opset=26):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(PV, 1)])
    m.ir_version = 11
    return m


def write(path, m, feeds, tol, ref=None):
    """ref: (model, feeds) for the reference when it differs: onnx's
    reference evaluator does not let a modifier read an outer value, so
    those cases give it the same value as the modifier's own initializer."""
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(path, "model.onnx"))
    rm, rf = ref if ref else (m, feeds)
    want = ReferenceEvaluator(rm).run(None, rf)
    for i, (k, v) in enumerate(feeds.items()):
        open(os.path.join(path, "test_data_set_0", f"input_{i}.pb"), "wb").write(
            numpy_helper.from_array(v, k).SerializeToString())
    for i, v in enumerate(want):
        open(os.path.join(path, "test_data_set_0", f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(np.asarray(v), m.graph.output[i].name).SerializeToString())
    with open(os.path.join(path, "tolerance.txt"), "w") as f:
        f.write(f"{tol} {tol}\n")


def sub(name, nodes, dt=TP.FLOAT, inp="s", out="o", inits=()):
    return helper.make_graph(nodes, name, [vi(inp, dt, ["B", "H", "L", "S"])], [vi(out, dt, ["B", "H", "L", "S"])],
                             list(inits))


def flex(inputs=("Q", "K", "V"), **attrs):
    return helper.make_node("FlexAttention", list(inputs), ["Y"], domain=PV, **attrs)


def qkv(rng, b, hq, hk, l, s, e, ev, np_dt):
    return {"Q": rng.standard_normal((b, hq, l, e)).astype(np_dt),
            "K": rng.standard_normal((b, hk, s, e)).astype(np_dt),
            "V": rng.standard_normal((b, hk, s, ev)).astype(np_dt)}


def io(feeds, tp, extra=()):
    return [vi(k, tp, list(v.shape)) for k, v in feeds.items()] + list(extra), [vi("Y", tp, None)]


def cases(rng):
    out = []
    # score_mod reads an outer graph input (an additive bias, broadcast over batch and heads)
    f = qkv(rng, 1, 2, 2, 3, 5, 4, 4, np.float32)
    f["bias"] = rng.standard_normal((1, 1, 3, 5)).astype(np.float32)
    ins, outs = io(f, TP.FLOAT)
    sm = sub("sm", [helper.make_node("Add", ["s", "bias"], ["o"])])
    rsm = sub("sm", [helper.make_node("Add", ["s", "bias"], ["o"])], inits=[numpy_helper.from_array(f["bias"], "bias")])
    rf = {k: v for k, v in f.items() if k != "bias"}
    rins, routs = io(rf, TP.FLOAT)
    out.append(("outer_bias", model_of([flex(score_mod=sm)], ins, outs), f, 1e-5,
                (model_of([flex(score_mod=rsm)], rins, routs), rf)))
    # score_mod with an initializer of its own; prob_mod that squares the probabilities
    f = qkv(rng, 2, 2, 2, 4, 4, 8, 3, np.float32)
    ins, outs = io(f, TP.FLOAT)
    sm = sub("sm", [helper.make_node("Mul", ["s", "k"], ["o"])],
             inits=[numpy_helper.from_array(np.array(0.25, np.float32), "k")])
    pm = sub("pm", [helper.make_node("Mul", ["s", "s"], ["o"])])
    out.append(("own_init_and_prob_mod", model_of([flex(score_mod=sm, prob_mod=pm)], ins, outs), f, 1e-5, None))
    # score_mod that gives back its input; prob_mod that gives back an outer value
    f = qkv(rng, 1, 1, 1, 2, 3, 4, 4, np.float32)
    f["P"] = np.abs(rng.standard_normal((1, 1, 2, 3))).astype(np.float32)
    ins, outs = io(f, TP.FLOAT)
    sm = helper.make_graph([], "sm", [vi("s", TP.FLOAT)], [vi("s", TP.FLOAT)])
    pm = helper.make_graph([], "pm", [vi("p", TP.FLOAT)], [vi("P", TP.FLOAT)])
    rpm = helper.make_graph([], "pm", [vi("p", TP.FLOAT)], [vi("P", TP.FLOAT)], [numpy_helper.from_array(f["P"], "P")])
    rf = {k: v for k, v in f.items() if k != "P"}
    rins, routs = io(rf, TP.FLOAT)
    out.append(("identity_and_outer_output", model_of([flex(score_mod=sm, prob_mod=pm)], ins, outs), f, 1e-5,
                (model_of([flex(score_mod=sm, prob_mod=rpm)], rins, routs), rf)))
    # GQA, a scale, both modifiers: soft cap (tanh) and a renormalisation
    f = qkv(rng, 2, 8, 2, 3, 6, 16, 5, np.float32)
    ins, outs = io(f, TP.FLOAT)
    sm = sub("sm", [helper.make_node("Tanh", ["s"], ["t"]), helper.make_node("Mul", ["t", "c"], ["o"])],
             inits=[numpy_helper.from_array(np.array(3.0, np.float32), "c")])
    pm = sub("pm", [helper.make_node("ReduceMax", ["s"], ["m"], axes=[3], keepdims=1),
                    helper.make_node("Div", ["s", "m"], ["o"])], inp="s", out="o")
    m = model_of([flex(score_mod=sm, prob_mod=pm, scale=0.3)], ins, outs, opset=17)
    out.append(("gqa_scale_both_mods", m, f, 1e-5, None))
    # float16 with the softmax in float16
    f = qkv(rng, 1, 4, 2, 5, 7, 8, 8, np.float16)
    ins, outs = io(f, TP.FLOAT16)
    out.append(("fp16_softmax_fp16", model_of([flex(softmax_precision=TP.FLOAT16)], ins, outs), f, 2e-3, None))
    # bfloat16 with the softmax in float32
    f = {k: v.astype(ml_dtypes.bfloat16) for k, v in qkv(rng, 1, 2, 2, 3, 4, 8, 8, np.float32).items()}
    ins, outs = io(f, TP.BFLOAT16)
    out.append(("bf16_softmax_f32", model_of([flex(softmax_precision=TP.FLOAT)], ins, outs), f, 2e-2, None))
    # double, score_mod in double
    f = qkv(rng, 1, 2, 1, 3, 4, 4, 4, np.float64)
    ins, outs = io(f, TP.DOUBLE)
    sm = sub("sm", [helper.make_node("Mul", ["s", "two"], ["o"])], dt=TP.DOUBLE,
             inits=[numpy_helper.from_array(np.array(2.0), "two")])
    out.append(("double_score_mod", model_of([flex(score_mod=sm)], ins, outs), f, 1e-12, None))
    # an empty query sequence
    f = qkv(rng, 1, 2, 2, 0, 4, 4, 4, np.float32)
    ins, outs = io(f, TP.FLOAT)
    out.append(("empty_queries", model_of([flex()], ins, outs), f, 1e-5, None))
    # Q made by another node: its dtype is unknown at load, softmax_precision says the softmax's
    f = qkv(rng, 1, 2, 2, 3, 4, 4, 4, np.float32)
    ins, outs = io(f, TP.FLOAT)
    m = model_of([helper.make_node("Neg", ["Q"], ["Qn"]), flex(("Qn", "K", "V"), softmax_precision=TP.FLOAT)],
                 ins, outs)
    out.append(("q_from_a_node", m, f, 1e-5, None))
    # every key but the first masked to -inf: Y is V's first row
    f = qkv(rng, 1, 1, 1, 2, 4, 4, 4, np.float32)
    ins, outs = io(f, TP.FLOAT)
    mask = np.full((1, 1, 1, 4), -np.inf, np.float32)
    mask[..., 0] = 0
    sm = sub("sm", [helper.make_node("Add", ["s", "mask"], ["o"])], inits=[numpy_helper.from_array(mask, "mask")])
    out.append(("neg_inf_mask", model_of([flex(score_mod=sm)], ins, outs), f, 1e-6, None))
    return out


def refusals(rng):
    """(name, model, exit code, expected message text)."""
    f = qkv(rng, 1, 2, 2, 3, 4, 4, 4, np.float32)
    ins, outs = io(f, TP.FLOAT)
    two = helper.make_graph([helper.make_node("Add", ["a", "b"], ["o"])], "sm",
                            [vi("a", TP.FLOAT), vi("b", TP.FLOAT)], [vi("o", TP.FLOAT)])
    nested = sub("sm", [helper.make_node("If", ["c"], ["o"],
                                         then_branch=sub("t", [helper.make_node("Identity", ["s"], ["o"])]),
                                         else_branch=sub("e", [helper.make_node("Identity", ["s"], ["o"])]))])
    fi = {k: (v * 4).astype(np.int32) for k, v in f.items()}
    ins_i, outs_i = io(fi, TP.INT32)
    pre = "node 'FlexAttention_0' (FlexAttention): "
    return [
        ("bad_precision", model_of([flex(softmax_precision=2)], ins, outs), 1,
         pre + "attribute 'softmax_precision' is 2; it must be 1 (float), 10 (float16), 16 (bfloat16) or 11 (double)"),
        ("two_inputs", model_of([flex(score_mod=two)], ins, outs), 1,
         pre + "subgraph 'score_mod' has 2 inputs and 1 outputs; it must have 1 and 1"),
        ("nested", model_of([flex(score_mod=nested)], ins, outs), 3,
         pre + "subgraph 'score_mod': node '' (If) holds a subgraph of its own"),
        ("int_q", model_of([flex()], ins_i, outs_i), 1,
         pre + "input Q has dtype int32; FlexAttention takes float16, bfloat16, float or double"),
        ("unknown_attr", model_of([flex(causal=1)], ins, outs), 1,
         pre + "unknown attribute 'causal' (FlexAttention has scale, softmax_precision, score_mod and prob_mod)"),
        ("q_dtype_unknown", model_of([helper.make_node("Neg", ["Q"], ["Qn"]), flex(("Qn", "K", "V"))], ins, outs), 3,
         "node 'FlexAttention_1' (FlexAttention): the dtype of input Q is not known when the model is loaded, and without it the softmax's precision "
         "is not either: set attribute 'softmax_precision'"),
        ("old_opset", model_of([flex()], ins, outs, opset=14), 3,
         pre + "braid expands FlexAttention into default-domain ops of opset 15 or later; the model imports opset 14"),
    ], f


def main():
    braid, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    rng = np.random.default_rng(11)
    made, failed = 0, []
    for name, m, feeds, tol, ref in cases(rng):
        case = os.path.join(work, name)
        write(case, m, feeds, tol, ref)
        made += 1
        for streams in ("1", "0"):
            p = subprocess.run([braid, "check", case, "--streams", streams], capture_output=True, text=True)
            if p.returncode != 0:
                failed.append(f"{name} (streams {streams}): {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")
    bad, feeds = refusals(rng)
    for name, m, code, msg in bad:
        path = os.path.join(work, name)
        os.makedirs(path, exist_ok=True)
        onnx.save(m, os.path.join(path, "model.onnx"))
        p = subprocess.run([braid, "run", os.path.join(path, "model.onnx"), "--output-dir", path], capture_output=True, text=True)
        made += 1
        text = p.stdout + p.stderr
        if p.returncode != code or msg not in text:
            failed.append(f"refusal {name}: exit {p.returncode} (want {code}), output: {text.strip()[:400]}")
    for f in failed:
        print("FAILED", f)
    print(f"{made} cases, {made - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
