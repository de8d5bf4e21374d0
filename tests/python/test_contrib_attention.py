"""test_contrib_attention.py: braid's com.microsoft ops against onnxruntime.
Each case is a one-node model (domain com.microsoft); onnxruntime's CPU
provider computes the expected outputs on random inputs; `braid check` must
match them within the case's tolerance. Covered: FusedMatMul (every
transA/transB/transBatchA/transBatchB combination, alpha, broadcast batches),
FusedGemm (its activations, C broadcast, transposes), MultiHeadAttention
(bias, the three key padding mask forms, attention_bias, past/present,
unidirectional self-attention, the qk output, 4-D key/value,
mask_filter_value, scale), Attention (projection, qkv_hidden_sizes,
mask_index forms, past/present, unidirectional, attention_bias),
EmbedLayerNormalization (segments, mask_index, position_ids) and
RotaryEmbedding (one offset or ids, interleaved, 4-D, partial rotation,
float16). What braid refuses (packed QKV...) is not generated here.
Usage: test_contrib_attention.py BRAID WORK_DIR"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

MS = "com.microsoft"


def tensor_type(a):
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def write_case(path, op, inputs, n_out, attrs, tol):
    """inputs: list of (name, array or None for an omitted input); n_out: how
    many outputs (names y0..); returns None or why the case failed to build."""
    names = [n if a is not None else "" for n, a in inputs]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=MS, **attrs)
    ins = [helper.make_tensor_value_info(n, tensor_type(a), a.shape) for n, a in inputs if a is not None]
    # outputs typed like the float inputs (EmbedLayerNormalization's mask_index is int32)
    ft = next(tensor_type(a) for _, a in inputs if a is not None and a.dtype.kind == "f")
    otypes = [TP.INT32 if op == "EmbedLayerNormalization" and i == 1 else ft for i in range(n_out)]
    graph = helper.make_graph([node], "t", ins, [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, otypes)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    feeds = {n: a for n, a in inputs if a is not None}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(path, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        open(os.path.join(path, "test_data_set_0", f"input_{i}.pb"), "wb").write(
            numpy_helper.from_array(v, k).SerializeToString())
    for i, v in enumerate(got):
        open(os.path.join(path, "test_data_set_0", f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(np.asarray(v), outs[i]).SerializeToString())
    with open(os.path.join(path, "tolerance.txt"), "w") as f:
        f.write(f"{tol[0]} {tol[1]}\n")


def cases(rng):
    """(name, op, inputs, n_out, attrs, (rtol, atol))."""
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    tol = (1e-4, 1e-5)
    # FusedMatMul: logical A (3, 4, 2, 5) x B (3, 4, 5, 6) stored as each flag asks
    a, b = f32(3, 4, 2, 5), f32(3, 4, 5, 6)
    for ta in (0, 1):
        for tb in (0, 1):
            for tba in (0, 1):
                for tbb in (0, 1):
                    sa = a.swapaxes(-1, -2) if ta else a
                    sa = np.ascontiguousarray(sa.transpose(2, 0, 1, 3) if tba else sa)  # stored (d2, d0, d1, d3)
                    sb = b.swapaxes(-1, -2) if tb else b
                    sb = np.ascontiguousarray(sb.transpose(2, 0, 1, 3) if tbb else sb)
                    yield (f"fmm_{ta}{tb}{tba}{tbb}", "FusedMatMul", [("a", sa), ("b", sb)], 1,
                           dict(transA=ta, transB=tb, transBatchA=tba, transBatchB=tbb, alpha=0.75), tol)
    yield "fmm_bcast", "FusedMatMul", [("a", f32(2, 1, 3, 4)), ("b", f32(5, 4, 2))], 1, dict(alpha=-2.0), tol
    yield "fmm_1d", "FusedMatMul", [("a", f32(4)), ("b", f32(3, 4, 2))], 1, dict(transA=1), tol
    # FusedGemm with each activation onnxruntime fuses
    acts = [("Relu", {}), ("LeakyRelu", dict(activation_alpha=0.2)), ("Tanh", {}), ("Sigmoid", {}),
            ("HardSigmoid", dict(activation_alpha=0.3, activation_beta=0.4)), ("Elu", dict(activation_alpha=0.7)),
            ("Selu", dict(activation_alpha=1.5, activation_gamma=1.1)), ("Softplus", {}), ("Softsign", {}),
            ("ThresholdedRelu", dict(activation_alpha=0.3)), ("ScaledTanh", dict(activation_alpha=0.5, activation_beta=2.0)),
            ("ParametricSoftplus", dict(activation_alpha=0.5, activation_beta=2.0))]
    for act, extra in acts:
        yield (f"fgemm_{act}", "FusedGemm", [("a", f32(5, 3)), ("b", f32(4, 5)), ("c", f32(4))], 1,
               dict(activation=act, transA=1, transB=1, alpha=0.5, beta=2.0, **extra), tol)
    # MultiHeadAttention: B 2, S 3, L 4 (self: 3), N 2, H 4 (Hv 3)
    B, S, L, N, H, HV = 2, 3, 4, 2, 4, 3
    q, k, v = f32(B, S, N * H), f32(B, L, N * H), f32(B, L, N * HV)
    bias = f32(2 * N * H + N * HV)
    yield "mha_plain", "MultiHeadAttention", [("q", q), ("k", k), ("v", v)], 1, dict(num_heads=N), tol
    yield "mha_bias_scale", "MultiHeadAttention", [("q", q), ("k", k), ("v", v), ("bias", bias)], 1, dict(num_heads=N, scale=0.3), tol
    lens = np.array([3, 1], np.int32)
    yield "mha_mask_lens", "MultiHeadAttention", [("q", q), ("k", k), ("v", v), ("bias", None), ("m", lens)], 1, dict(num_heads=N), tol
    m2 = np.array([[1, 0, 1, 1], [0, 0, 0, 0]], np.int32)  # batch 1 fully masked: uniform weights
    yield ("mha_mask_keys", "MultiHeadAttention", [("q", q), ("k", k), ("v", v), ("bias", None), ("m", m2)], 4,
           dict(num_heads=N, mask_filter_value=-50.0), (1e-4, 1e-4))
    m3 = (rng.random((B, S, L)) > 0.4).astype(np.int32)
    yield "mha_mask_full", "MultiHeadAttention", [("q", q), ("k", k), ("v", v), ("bias", None), ("m", m3)], 1, dict(num_heads=N), tol
    ab = f32(1, N, S, L)
    yield ("mha_attn_bias_qk", "MultiHeadAttention", [("q", q), ("k", k), ("v", v), ("bias", None), ("m", None), ("ab", ab)],
           4, dict(num_heads=N), tol)
    P = 2
    pk, pv = f32(B, N, P, H), f32(B, N, P, H)  # onnxruntime wants one head size with a past
    qs, ks, vs = f32(B, S, N * H), f32(B, S, N * H), f32(B, S, N * H)
    mp = np.ones((B, P + S), np.int32)
    mp[1, 0] = 0
    yield ("mha_past_causal", "MultiHeadAttention", [("q", qs), ("k", ks), ("v", vs), ("bias", f32(3 * N * H)), ("m", mp), ("ab", None),
                                                      ("pk", pk), ("pv", pv)], 3, dict(num_heads=N, unidirectional=1), tol)
    yield ("mha_self_causal", "MultiHeadAttention", [("q", qs), ("k", ks), ("v", vs)], 1, dict(num_heads=N, unidirectional=1), tol)
    yield ("mha_bnsh_kv", "MultiHeadAttention", [("q", q), ("k", f32(B, N, L, H)), ("v", f32(B, N, L, H))], 1,
           dict(num_heads=N), tol)
    # Attention: input (B, S, 6) projected to Q, K (N*H each) and V (N*HV)
    DIN = 6
    x, w, wb = f32(B, S, DIN), f32(DIN, 3 * N * H), f32(3 * N * H)
    sizes = dict(qkv_hidden_sizes=[N * H, N * H, N * H])
    yield "att_plain", "Attention", [("x", x), ("w", w), ("wb", wb)], 1, dict(num_heads=N, **sizes), tol
    ws = f32(DIN, 3 * N * H)  # (onnxruntime's CPU Attention crashes without the bias input: always given)
    yield "att_uni", "Attention", [("x", x), ("w", ws), ("wb", f32(3 * N * H))], 1, dict(num_heads=N, unidirectional=1), tol
    yield ("att_mask_lens", "Attention", [("x", x), ("w", w), ("wb", wb), ("m", np.array([2, 3], np.int32))], 1,
           dict(num_heads=N, **sizes), tol)
    yield ("att_mask_keys", "Attention", [("x", x), ("w", w), ("wb", wb), ("m", np.array([[1, 1, 0], [0, 1, 1]], np.int32))], 1,
           dict(num_heads=N, scale=0.25, **sizes), tol)
    yield ("att_mask_full", "Attention", [("x", x), ("w", w), ("wb", wb), ("m", (rng.random((B, S, S)) > 0.3).astype(np.int32))],
           1, dict(num_heads=N, **sizes), tol)
    past = f32(2, B, N, P, H)
    yield ("att_past_uni", "Attention", [("x", x), ("w", ws), ("wb", f32(3 * N * H)), ("m", None), ("past", past)], 2,
           dict(num_heads=N, unidirectional=1), tol)
    yield ("att_bias", "Attention", [("x", x), ("w", ws), ("wb", wb), ("m", None), ("past", None), ("ab", f32(B, 1, S, S))], 1,
           dict(num_heads=N), tol)
    # GroupQueryAttention: 4 query heads over 2 kv heads of 8 (onnxruntime wants head sizes of multiples of 8)
    HQ, HKV, GD = 4, 2, 8
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    gq, gk, gv = f32(B, S, HQ * GD), f32(B, S, HKV * GD), f32(B, S, HKV * GD)
    gqa = dict(num_heads=HQ, kv_num_heads=HKV)
    yield ("gqa_prompt_ragged", "GroupQueryAttention", [("q", gq), ("k", gk), ("v", gv), ("pk", None), ("pv", None),
                                                        ("sl", i32(2, 1)), ("tl", i32(S))], 3, gqa, tol)
    P = 5
    pkc, pvc = f32(B, HKV, P, GD), f32(B, HKV, P, GD)
    yield ("gqa_decode", "GroupQueryAttention", [("q", gq[:, :1]), ("k", gk[:, :1]), ("v", gv[:, :1]), ("pk", pkc), ("pv", pvc),
                                                 ("sl", i32(3, 2)), ("tl", i32(4))], 3, gqa, tol)
    yield ("gqa_packed_window_softcap", "GroupQueryAttention",
           [("q", f32(1, 6, (HQ + 2 * HKV) * GD)), ("k", None), ("v", None), ("pk", None), ("pv", None), ("sl", i32(5)), ("tl", i32(6))],
           3, dict(local_window_size=2, softcap=1.5, scale=0.4, **gqa), tol)
    # with rotary, onnxruntime wants head sizes of multiples of 16; with a past and 2 new tokens, one batch
    MP, RD = 16, 16
    for inter in (0, 1):
        yield (f"gqa_rotary_{inter}", "GroupQueryAttention",
               [("q", f32(1, 2, HQ * RD)), ("k", f32(1, 2, HKV * RD)), ("v", f32(1, 2, HKV * RD)), ("pk", f32(1, HKV, P, RD)),
                ("pv", f32(1, HKV, P, RD)), ("sl", i32(4)), ("tl", i32(5)), ("cos", f32(MP, RD // 2)),
                ("sin", f32(MP, RD // 2))], 3, dict(do_rotary=1, rotary_interleaved=inter, **gqa), tol)
    # EmbedLayerNormalization
    V, D, PS = 11, 8, 7
    ids = rng.integers(0, V, (B, S)).astype(np.int32)
    seg = rng.integers(0, 2, (B, S)).astype(np.int32)
    mask = np.array([[1, 1, 0], [1, 2, 1]], np.int32)
    emb = [("ids", ids), ("seg", seg), ("we", f32(V, D)), ("pe", f32(PS, D)), ("se", f32(2, D)), ("g", f32(D)), ("b", f32(D))]
    yield "eln_full", "EmbedLayerNormalization", emb + [("mask", mask)], 3, dict(epsilon=1e-5), tol
    emb2 = [("ids", ids), ("seg", None), ("we", f32(V, D)), ("pe", f32(PS, D)), ("se", None), ("g", f32(D)), ("b", f32(D))]
    pos = rng.integers(0, PS, (1, S)).astype(np.int32)
    yield "eln_noseg_pos", "EmbedLayerNormalization", emb2 + [("mask", None), ("pos", pos)], 2, {}, tol
    # RotaryEmbedding (com.microsoft): input, position_ids, cos, sin
    RD, MP = 8, 12
    cos, sin = f32(MP, RD // 2), f32(MP, RD // 2)
    xr = f32(B, S, N * RD)
    yield "rope_offset", "RotaryEmbedding", [("x", xr), ("p", np.array([4], np.int64)), ("c", cos), ("s", sin)], 1, {}, tol
    pid = rng.integers(0, MP, (B, S)).astype(np.int64)
    yield "rope_ids_inter", "RotaryEmbedding", [("x", xr), ("p", pid), ("c", cos), ("s", sin)], 1, dict(interleaved=1), tol
    yield ("rope_4d", "RotaryEmbedding", [("x", f32(B, N, S, RD)), ("p", pid), ("c", cos), ("s", sin)], 1, {}, tol)
    c4, s4 = f32(MP, 2), f32(MP, 2)
    yield ("rope_partial", "RotaryEmbedding", [("x", xr), ("p", pid), ("c", c4), ("s", s4)], 1,
           dict(num_heads=N, rotary_embedding_dim=4), tol)
    h = lambda a: a.astype(np.float16)  # noqa: E731
    yield ("rope_fp16", "RotaryEmbedding", [("x", h(xr)), ("p", pid), ("c", h(cos)), ("s", h(sin))], 1, {}, (2e-3, 2e-3))


def main():
    braid, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    rng = np.random.default_rng(5)
    made, failed = 0, []
    for name, op, inputs, n_out, attrs, tol in cases(rng):
        case = os.path.join(work, name)
        write_case(case, op, inputs, n_out, attrs, tol)
        made += 1
        p = subprocess.run([braid, "check", case], capture_output=True, text=True)
        if p.returncode != 0:
            failed.append(f"{name}: {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")
    for f in failed:
        print("FAILED", f)
    print(f"{made} cases, {made - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
