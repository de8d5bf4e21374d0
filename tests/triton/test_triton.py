#!/usr/bin/env python3
"""test_triton.py: braid's Triton backend (libtriton_braid.so) in a real
tritonserver on 127.0.0.1, driven by tritonclient over HTTP and gRPC.

The model repository holds models of models/gen and the PP-OCR direction
classifier of models/real, with and without dynamic batching, configurations
completed by the backend and written out in full. Checked:
  - the library has no NEEDED entry for the server (its symbols resolve at load);
  - configurations the backend completes (names, dtypes, dims, max_batch_size
    from --backend-config default-max-batch-size, dynamic batching), and
    configurations it refuses at load with a message naming the problem;
  - outputs against onnxruntime over HTTP and gRPC, a subset of the outputs;
  - 64+ concurrent requests from 8 threads on batching and non-batching
    models, and requests of different shapes at once; batches of more than one
    request formed (a model with a queue delay), one execution per request
    without dynamic batching, the statistics Triton reports;
  - bad requests answered with errors (Triton's checks, and braid's own
    message for a shape the configuration allows and the model does not)
    while the requests batched with them get their outputs, and the server
    keeps serving;
  - unload and load again (explicit model control), three times: the
    backend's count of live braid sessions and models back to what it was,
    and 0 once everything is unloaded and at shutdown.
Every wait is bounded, only 127.0.0.1 is used, and the server is stopped
however the test ends (and killed with it if the test is killed).

Usage: test_triton.py --backends build/backends --models models/gen --real models/real --tmp DIR
Exit 0 pass, 1 fail, 77 skip (no tritonserver installed: scripts/setup).
"""
import argparse
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tritonrun  # noqa: E402

FAILS = []


def check(cond, what):
    if cond:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        FAILS.append(what)
    return cond


def close(a, b, what, tol=1e-4):
    import numpy as np
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return check(False, f"{what}: shape {a.shape} vs onnxruntime's {b.shape}")
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    return check(err <= tol * scale, f"{what}: max |braid - onnxruntime| = {err:.3g} (limit {tol * scale:.3g})")


FULL_TCA = """backend: "braid"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ %s ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ %s ] } ]
"""


def make_repo(repo, gen, real):
    w = tritonrun.write_model
    tca = os.path.join(gen, "two_conv_add", "model.onnx")
    # completed by the backend: max_batch_size from default-max-batch-size, dynamic batching
    w(repo, "tca", tca, 'backend: "braid"\n')
    # completed, with a queue delay so that concurrent requests are batched
    w(repo, "tca_db", tca, 'backend: "braid"\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n')
    # written out in full, no dynamic batching: one execution per request
    w(repo, "tca_nodb", tca, FULL_TCA % ("16, 32, 32", "32, 32, 32"))
    # dims Triton does not check, so a wrong channel count reaches braid
    w(repo, "tca_any", tca, FULL_TCA % ("-1, -1, -1", "-1, -1, -1") +
      "dynamic_batching { max_queue_delay_microseconds: 100000 }\n")
    # two outputs; braid options from parameters
    w(repo, "residual", os.path.join(gen, "residual", "model.onnx"),
      'backend: "braid"\nparameters { key: "streams" value: { string_value: "2" } }\n'
      'parameters { key: "fold" value: { string_value: "false" } }\n')
    # fixed batch of 1 (max_batch_size 0), two instances: two sessions
    w(repo, "inception", os.path.join(gen, "inception", "model.onnx"),
      'backend: "braid"\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n'
      'parameters { key: "threads" value: { string_value: "1" } }\n')
    # a real model: PP-OCR's text direction classifier, N x 3 x H x W
    cls = os.path.join(real, "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    if os.path.exists(cls):
        w(repo, "cls", cls, 'backend: "braid"\ndynamic_batching { max_queue_delay_microseconds: 20000 }\n')
    # an id out of range fails braid's Gather: one bad request among good ones of the same shape
    gather = make_gather(repo)
    w(repo, "gather", gather, 'backend: "braid"\ndynamic_batching { max_queue_delay_microseconds: 200000 }\n')
    # ragged batches: Triton hands requests of different lengths to one Execute, the backend groups them
    w(repo, "gather_ragged", gather, 'backend: "braid"\nmax_batch_size: 8\n'
      'input [ { name: "ids" data_type: TYPE_INT64 dims: [ -1 ] allow_ragged_batch: true } ]\n'
      'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1, 8 ] } ]\n'
      'dynamic_batching { max_queue_delay_microseconds: 300000 }\n')
    # braid's CUDA backend on a KIND_CPU instance (the server has no GPU): on
    # the emulated device when the test runs with BRAID_CUDA_EMULATOR=1
    if os.environ.get("BRAID_CUDA_EMULATOR") == "1":
        w(repo, "tca_cuda", tca, 'backend: "braid"\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n'
          'parameters { key: "backend" value: { string_value: "cuda" } }\n'
          'parameters { key: "streams" value: { string_value: "0" } }\n')
    w(repo, "bad_backend", tca, 'backend: "braid"\nparameters { key: "backend" value: { string_value: "tpu" } }\n')
    # refused at load
    w(repo, "bad_param", tca, 'backend: "braid"\nparameters { key: "streamz" value: { string_value: "2" } }\n')
    w(repo, "bad_dtype", tca, FULL_TCA.replace("TYPE_FP32", "TYPE_FP16", 1) % ("16, 32, 32", "32, 32, 32"))
    w(repo, "bad_batch", os.path.join(gen, "inception", "model.onnx"), 'backend: "braid"\nmax_batch_size: 4\n')
    return os.path.exists(cls)


def make_gather(repo):
    """ids (N x L, int64) -> Relu(Gather(table[10 x 8], ids)): N x L x 8."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    table = numpy_helper.from_array(np.arange(-40, 40, dtype=np.float32).reshape(10, 8), "table")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
                           helper.make_node("Relu", ["emb"], ["y"])], "gather",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", "L"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "L", 8])], [table])
    path = os.path.join(repo, "gather.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


class Ref:
    """onnxruntime on the same model files."""

    def __init__(self, repo):
        import onnxruntime as ort
        self.repo, self.ort, self.sessions = repo, ort, {}

    def run(self, model, feeds, outputs=None):
        if model not in self.sessions:
            o = self.ort.SessionOptions()
            o.intra_op_num_threads = 1
            self.sessions[model] = self.ort.InferenceSession(os.path.join(self.repo, model, "1", "model.onnx"), o,
                                                             providers=["CPUExecutionProvider"])
        s = self.sessions[model]
        names = outputs or [x.name for x in s.get_outputs()]
        return dict(zip(names, s.run(names, feeds)))


def infer_http(client, model, feeds, outputs=None):
    import tritonclient.http as th
    ins = []
    for name, arr in feeds.items():
        i = th.InferInput(name, list(arr.shape), {"float32": "FP32", "float64": "FP64", "int64": "INT64"}[str(arr.dtype)])
        i.set_data_from_numpy(arr)
        ins.append(i)
    outs = [th.InferRequestedOutput(n) for n in outputs] if outputs else None
    r = client.infer(model, ins, outputs=outs)
    return {o["name"]: r.as_numpy(o["name"]) for o in r.get_response()["outputs"]}


def infer_grpc(client, model, feeds, outputs=None):
    import tritonclient.grpc as tg
    ins = []
    for name, arr in feeds.items():
        i = tg.InferInput(name, list(arr.shape), "FP32")
        i.set_data_from_numpy(arr)
        ins.append(i)
    outs = [tg.InferRequestedOutput(n) for n in outputs] if outputs else None
    r = client.infer(model, ins, outputs=outs)
    return {o.name: r.as_numpy(o.name) for o in r.get_response().outputs}


def burst(srv, model, name, arrays):
    """Sends one request per array at once (clients made first, then a
    barrier), so that Triton's queue delay batches them; returns each
    request's output y, or the exception it raised."""
    import threading
    clients = [srv.http() for _ in arrays]
    gate = threading.Barrier(len(arrays))

    def send(k):
        gate.wait(timeout=60)
        try:
            return infer_http(clients[k], model, {name: arrays[k]})["y"]
        except Exception as e:  # the error response, kept as the result
            return e

    try:
        with cf.ThreadPoolExecutor(len(arrays)) as ex:
            return [f.result(timeout=120) for f in [ex.submit(send, k) for k in range(len(arrays))]]
    finally:
        for c in clients:
            c.close()


def live_counts(text):
    s = re.findall(r"sessions alive: (\d+)", text)
    m = re.findall(r"models alive: (\d+)", text)
    return (int(s[-1]) if s else None), (int(m[-1]) if m else None)


def stats(client, model):
    st = client.get_inference_statistics(model)["model_stats"][0]
    return st


def run_tests(srv, repo, have_cls, lib):
    import numpy as np
    rng = np.random.default_rng(20261124)
    ref = Ref(repo)
    c = srv.http()

    # ---- the library ----
    try:
        dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, timeout=60).stdout
        needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)
        check(needed and not any("tritonserver" in n for n in needed),
              f"libtriton_braid.so needs no server library (NEEDED: {', '.join(needed)})")
    except FileNotFoundError:
        print("note: readelf not found; the NEEDED check is skipped")

    # ---- configurations ----
    cfg = c.get_model_config("tca")
    check(cfg.get("max_batch_size") == 8, f"tca: max_batch_size completed from default-max-batch-size: {cfg.get('max_batch_size')}")
    check("dynamic_batching" in cfg, "tca: dynamic batching turned on by the completion")
    check([(i["name"], i["data_type"], [int(d) for d in i["dims"]]) for i in cfg["input"]] == [("x", "TYPE_FP32", [16, 32, 32])],
          f"tca: input completed: {cfg['input']}")
    check([(o["name"], [int(d) for d in o["dims"]]) for o in cfg["output"]] == [("y", [32, 32, 32])],
          f"tca: output completed: {cfg['output']}")
    cfg = c.get_model_config("inception")
    check(cfg.get("max_batch_size", 0) == 0 and [int(d) for d in cfg["input"][0]["dims"]] == [1, 64, 28, 28],
          "inception (a fixed batch of 1): max_batch_size 0, the batch dim in the dims")
    cfg = c.get_model_config("residual")
    check(sorted(o["name"] for o in cfg["output"]) == ["b1_relu_9", "y"], "residual: both outputs completed")
    if have_cls:
        cfg = c.get_model_config("cls")
        check([int(d) for d in cfg["input"][0]["dims"]] == [3, -1, -1] and cfg["max_batch_size"] == 8,
              f"cls: input dims [3, -1, -1] under max_batch_size 8: {cfg['input'][0]['dims']}, {cfg['max_batch_size']}")
    for model, want in [("bad_param", "unknown parameter 'streamz'"),
                        ("bad_backend", "parameter 'backend' is 'tpu': expected cpu, cuda or auto"),
                        ("bad_dtype", "input 'x' is TYPE_FP16 in config.pbtxt but float32"),
                        ("bad_batch", "max_batch_size is 4 but input 'x' has no dynamic first dim")]:
        try:
            c.load_model(model)
            check(False, f"{model}: refused at load")
        except Exception as e:  # tritonclient raises InferenceServerException
            check(want in str(e), f"{model}: refused at load with braid's message ({str(e)[:160]!r})")

    # ---- outputs against onnxruntime, HTTP and gRPC ----
    x = rng.standard_normal((3, 16, 32, 32), dtype=np.float32)
    close(infer_http(c, "tca", {"x": x})["y"], ref.run("tca", {"x": x})["y"], "tca over HTTP, a request of 3 rows")
    x1 = rng.standard_normal((1, 64, 28, 28), dtype=np.float32)
    close(infer_http(c, "inception", {"x": x1})["y"], ref.run("inception", {"x": x1})["y"], "inception over HTTP")
    xr = rng.standard_normal((2, 16, 32, 32), dtype=np.float32)
    rr = ref.run("residual", {"x": xr})
    got = infer_http(c, "residual", {"x": xr}, outputs=["y"])
    check(list(got) == ["y"], "residual: only the output asked for comes back")
    close(got["y"], rr["y"], "residual output y over HTTP")
    try:
        g = srv.grpc()
        got = infer_grpc(g, "residual", {"x": xr})
        for name in ("y", "b1_relu_9"):
            close(got[name], rr[name], f"residual output {name} over gRPC")
        close(infer_grpc(g, "inception", {"x": x1})["y"], ref.run("inception", {"x": x1})["y"], "inception over gRPC")
        g.close()
    except ImportError as e:
        print(f"note: gRPC client not available ({e}); HTTP only")
    if have_cls:
        xc = rng.uniform(-1, 1, (2, 3, 48, 192)).astype(np.float32)
        rc = ref.run("cls", {"x": xc})
        name = next(iter(rc))
        close(infer_http(c, "cls", {"x": xc})[name], rc[name], "cls (PP-OCR) over HTTP")

    if os.environ.get("BRAID_CUDA_EMULATOR") == "1":
        xe = rng.standard_normal((2, 16, 32, 32), dtype=np.float32)
        close(infer_http(c, "tca_cuda", {"x": xe})["y"], ref.run("tca_cuda", {"x": xe})["y"],
              "tca_cuda: the CUDA backend on the emulated device, over HTTP")
        text = srv.log_text()
        check(re.search(r"tca_cuda_0.*runs on CUDA: .*emulated by braid", text) is not None,
              "tca_cuda: the instance says it runs on CUDA, on the emulated device")

    # ---- concurrency ----
    def many(model, shapes, n, threads=8, grpc=False, outputs=None):
        """n requests from `threads` threads, each with its own client; every
        output checked against onnxruntime. Returns the number that matched."""
        feeds = [rng.standard_normal(shapes[k % len(shapes)], dtype=np.float32) for k in range(n)]
        want = [ref.run(model, {"x": f}) for f in feeds]
        import threading
        local = threading.local()

        def one(k):
            if not hasattr(local, "client"):
                local.client = srv.grpc() if grpc else srv.http()
            fn = infer_grpc if grpc else infer_http
            got = fn(local.client, model, {"x": feeds[k]}, outputs)
            import numpy as np
            return all(np.allclose(got[o], want[k][o], rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want[k][o]).max())))
                       and got[o].shape == want[k][o].shape for o in got)

        with cf.ThreadPoolExecutor(threads) as ex:
            futs = [ex.submit(one, k) for k in range(n)]
            return sum(1 for f in futs if f.result(timeout=300))

    before = stats(c, "tca_db")
    n_ok = many("tca_db", [(1, 16, 32, 32), (2, 16, 32, 32)], 64)
    check(n_ok == 64, f"tca_db: 64 concurrent requests from 8 threads (1 and 2 rows), {n_ok} matched onnxruntime")
    after = stats(c, "tca_db")
    sizes = [int(b["batch_size"]) for b in after["batch_stats"]]
    execs = int(after["execution_count"]) - int(before["execution_count"])
    check(max(sizes) > 2 and execs < 64,
          f"tca_db: requests batched into shared braid runs ({execs} executions for 64 requests; batch sizes {sorted(set(sizes))})")
    check(int(after["inference_stats"]["success"]["count"]) - int(before["inference_stats"]["success"]["count"]) == 64,
          "tca_db: Triton's statistics count 64 successful requests")
    before = stats(c, "tca_nodb")
    n_ok = many("tca_nodb", [(1, 16, 32, 32), (3, 16, 32, 32)], 64, grpc=True)
    check(n_ok == 64, f"tca_nodb (no dynamic batching): 64 concurrent requests over gRPC, {n_ok} matched")
    after = stats(c, "tca_nodb")
    check(int(after["execution_count"]) - int(before["execution_count"]) == 64,
          "tca_nodb: one braid run per request without dynamic batching")
    n_ok = many("residual", [(1, 16, 32, 32), (2, 16, 32, 32)], 32, outputs=["y", "b1_relu_9"])
    check(n_ok == 32, f"residual: 32 concurrent requests with both outputs, {n_ok} matched")
    n_ok = many("tca", [(1, 16, 32, 32)], 64, threads=16)
    check(n_ok == 64, f"tca: 64 concurrent requests from 16 threads, {n_ok} matched")
    if have_cls:
        n_ok = many("cls", [(1, 3, 48, 192), (1, 3, 48, 160), (2, 3, 48, 192), (1, 3, 32, 100)], 64)
        check(n_ok == 64, f"cls: 64 concurrent requests of four shapes, {n_ok} matched onnxruntime")

    # requests of two lengths in one Execute (ragged batching): grouped by shape, two braid runs
    lens = [3, 5, 3, 5, 5, 3, 3, 5]
    rag = [rng.integers(0, 10, (1, n)).astype(np.int64) for n in lens]
    res = burst(srv, "gather_ragged", "ids", rag)
    check(all(np.array_equal(r, ref.run("gather_ragged", {"ids": a})["y"]) for r, a in zip(res, rag)),
          "gather_ragged: 8 requests of lengths 3 and 5 sent at once, each answered with its own rows")
    after = stats(c, "gather_ragged")  # a fresh model: only these requests
    sizes = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in after["batch_stats"]}
    check(max(sizes) <= 4 and max(sizes) > 1,
          f"gather_ragged: braid runs over requests of one length only, several at a time (runs by rows: {sizes})")

    # ---- bad requests ----
    for what, feeds in [("a float64 input", {"x": x.astype(np.float64)}), ("no inputs", {})]:
        try:
            infer_http(c, "tca", feeds)
            check(False, f"tca: {what} is refused")
        except Exception as e:
            check("x" in str(e), f"tca: {what} is refused ({str(e)[:120]!r})")
    bad = rng.standard_normal((1, 8, 32, 32), dtype=np.float32)
    try:
        infer_http(c, "tca_any", {"x": bad})
        check(False, "tca_any: 8 channels for a 16-channel convolution is refused")
    except Exception as e:
        check("braid" in str(e) and "8x32x32" in str(e).replace(" ", ""),
              f"tca_any: braid's own message for 8 channels ({str(e)[:200]!r})")
    # the bad request batched with good ones: the good ones still get their outputs
    goods = [rng.standard_normal((1, 16, 32, 32), dtype=np.float32) for _ in range(7)]
    want = [ref.run("tca_any", {"x": g})["y"] for g in goods]
    before = stats(c, "tca_any")
    res = burst(srv, "tca_any", "x", goods[:3] + [bad] + goods[3:])
    got_bad = res.pop(3)
    check(isinstance(got_bad, Exception) and "braid" in str(got_bad), "tca_any: the bad request sent at once with good ones gets braid's error")
    check(all(not isinstance(r, Exception) and np.allclose(r, w, rtol=1e-4, atol=1e-3) for r, w in zip(res, want)),
          "tca_any: the 7 good requests sent with it get their outputs")
    after = stats(c, "tca_any")
    check(int(after["inference_stats"]["fail"]["count"]) > int(before["inference_stats"]["fail"]["count"]),
          "tca_any: the failed request is counted as a failure in Triton's statistics")
    # the same with a bad request Triton batches with the good ones (same shape, an id out of range):
    # the batch's braid run fails, its requests run one by one, only the bad one fails
    ids = [rng.integers(0, 10, (1, 4)).astype(np.int64) for _ in range(7)]
    bad_ids = np.array([[1, 2, 99, 3]], dtype=np.int64)

    res = burst(srv, "gather", "ids", ids[:4] + [bad_ids] + ids[4:])
    got_bad = res.pop(4)
    check(isinstance(got_bad, Exception) and "index 99 is out of range" in str(got_bad),
          f"gather: the request with id 99 gets braid's message ({str(got_bad)[:160]!r})")
    check(all(not isinstance(r, Exception) and np.array_equal(r, ref.run("gather", {"ids": i})["y"])
              for r, i in zip(res, ids)), "gather: the 7 good requests batched with it get their outputs")
    text = srv.wait_log(lambda t: "gather_0': a run of" in t, timeout=5)
    check(re.search(r"gather_0': a run of [2-8] requests failed", text) is not None,
          "gather: they were one batch whose run failed, then ran one by one")
    close(infer_http(c, "tca", {"x": x})["y"], ref.run("tca", {"x": x})["y"], "tca still serves after the bad requests")

    # ---- unload and load again ----
    s0, m0 = live_counts(srv.log_text())
    # one session per instance: 9 for the generated models (inception has 2), 10 with the real one
    want = 10 if have_cls else 9
    check(s0 is not None and s0 >= want, f"the backend reports its live sessions ({s0}, {want} or more) and models ({m0})")
    for cycle in range(3):
        c.unload_model("inception")
        text = srv.wait_log(lambda t: t.count("model 'inception' version 1 unloaded") > cycle)
        s1, m1 = live_counts(text)
        check(s1 == s0 - 2 and m1 == m0 - 1,
              f"cycle {cycle + 1}: unloading inception frees its 2 sessions and its model ({s0}/{m0} -> {s1}/{m1})")
        c.load_model("inception")
        check(c.is_model_ready("inception"), f"cycle {cycle + 1}: inception loaded again")
        close(infer_http(c, "inception", {"x": x1})["y"], ref.run("inception", {"x": x1})["y"],
              f"cycle {cycle + 1}: inception serves after reloading")
    loaded = [m["name"] for m in c.get_model_repository_index() if m.get("state") == "READY"]
    for m in loaded:
        c.unload_model(m)
    text = srv.wait_log(lambda t: live_counts(t) == (0, 0), timeout=30)
    check(live_counts(text) == (0, 0), f"everything unloaded ({', '.join(loaded)}): sessions and models alive {live_counts(text)}")
    c.load_model("tca")
    close(infer_http(c, "tca", {"x": x})["y"], ref.run("tca", {"x": x})["y"], "tca serves after unloading everything")
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", required=True, help="the folder holding braid/libtriton_braid.so")
    ap.add_argument("--models", required=True, help="models/gen")
    ap.add_argument("--real", required=True, help="models/real")
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--server", default=None, help="tritonserver (default: .venv-triton's)")
    a = ap.parse_args()
    binary, why = tritonrun.find_server(a.server)
    if not binary:
        print(f"SKIPPED: {why}")
        return 77
    try:
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401
        import tritonclient.http  # noqa: F401
    except ImportError as e:
        print(f"SKIPPED: the Triton client is not installed ({e}); scripts/setup installs it into .venv-triton")
        return 77
    lib = os.path.join(a.backends, "braid", "libtriton_braid.so")
    if not os.path.exists(lib):
        print(f"FAIL: {lib} was not built")
        return 1
    shutil.rmtree(a.tmp, ignore_errors=True)
    repo = os.path.join(a.tmp, "repo")
    os.makedirs(repo)
    have_cls = make_repo(repo, a.models, a.real)
    if not have_cls:
        print("note: models/real/ch_ppocr_mobile_v2.0_cls_infer.onnx is not fetched (scripts/fetch-models): the real model is left out")
    load = ["tca", "tca_db", "tca_nodb", "tca_any", "gather", "gather_ragged", "residual", "inception"] + (["cls"] if have_cls else [])
    if os.environ.get("BRAID_CUDA_EMULATOR") == "1":
        load.append("tca_cuda")
    srv = tritonrun.Server(binary, repo, a.backends, os.path.join(a.tmp, "tritonserver.log"), load=load,
                           extra=["--backend-config=default-max-batch-size=8"])
    rc = None
    try:
        srv.start()
        print(f"tritonserver on 127.0.0.1: HTTP {srv.http_port}, gRPC {srv.grpc_port}; log {srv.log_path}")
        run_tests(srv, repo, have_cls, lib)
    except Exception:
        traceback.print_exc()
        FAILS.append("an exception")
    finally:
        rc = srv.stop()
    text = srv.log_text() if os.path.exists(srv.log_path) else ""
    fin = re.findall(r"braid backend finalized: sessions alive: (\d+), models alive: (\d+)", text)
    check(fin and fin[-1] == ("0", "0"), f"at shutdown the backend is finalized with nothing alive ({fin[-1] if fin else 'no line'})")
    check(rc == 0, f"tritonserver exited cleanly (exit code {rc})")
    if FAILS:
        print(f"\n{len(FAILS)} check(s) failed; the end of the server's log:\n{srv.tail(40)}")
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
