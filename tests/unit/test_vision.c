/* test_vision.c: the vision family against onnx's reference and hand-computed
 * numbers: GridSample in every mode, padding and align_corners at points on
 * and beyond every border (and far beyond, where reflection repeats), 1-D,
 * nearest on int32, float16, NaN coordinates, empty grids and the errors;
 * AffineGrid (2-D, 3-D, one-point axes); RoiAlign in both modes, both
 * coordinate modes and adaptive sampling, with degenerate and outside ROIs;
 * MaxRoiPool by hand; NonMaxSuppression by hand (thresholds, ties, the
 * boundary IoU, center boxes, NaN scores, max_output_boxes_per_class 0) run
 * directly and through plan-time folding of a graph of constants. */
#include "check.h"
#include "optest.h"

#include <math.h>

#include "passes/instance.h"
#include "ops/vision.h"
#include "util/dtype.h"

/* Reference values printed by the script below (onnx 1.23.2, numpy 2.4.6),
 * each case a one-node model run by onnx.reference.ReferenceEvaluator:
 *   X = np.arange(12, dtype=np.float32).reshape(1,1,3,4) * np.float32(0.5) - np.float32(1)
 *   G = np.array([[-1,-1],[1,1],[-1.3,0.2],[1.6,-0.4],[0.25,-1.2],[-0.6,1.9],[3.7,-2.9],[0.1,0.35]],
 *                np.float32).reshape(1,2,4,2)
 *   GridSample(X, G, mode=m, padding_mode=p, align_corners=a)     (opset 20)
 *   X1 = np.array([2, -1, 4, 0.5, 3], np.float32).reshape(1,1,5)
 *   G1 = np.array([-1.7, -0.95, 0.3, 1.2, 2.4], np.float32).reshape(1,5,1)
 *   GridSample(X1, G1, mode='cubic', padding_mode=p, align_corners=0)
 *   Xr = (np.arange(120, dtype=np.float32).reshape(2,2,5,6) % 7) * np.float32(0.25) - np.float32(0.5)
 *   rois = [[0.5,0.5,3.2,2.9],[1,1,1,1],[-2,-1,7,6.5],[4.5,3.5,9,9]] (float32), batch_indices [0,1,1,0]
 *   RoiAlign(Xr, rois, bi, mode=m, coordinate_transformation_mode=c, output_height=2,
 *            output_width=3, sampling_ratio=s, spatial_scale=0.5)  (opset 16) */
/* GridSample-20 on X = 0.5 * arange(12) - 1 (1, 1, 3, 4) at 8 grid points (inside, on the
 * borders, beyond each side, far beyond), for mode x padding x align_corners in the
 * order nearest/linear/cubic, zeros/border/reflection, 0/1. */
static const float gs_want[18][8] = {
    /* mode=nearest padding=zeros align_corners=0 */
    {-1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 4.0f},
    /* mode=nearest padding=zeros align_corners=1 */
    {-1.0f, 4.5f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.0f},
    /* mode=nearest padding=border align_corners=0 */
    {-1.0f, 4.5f, 1.0f, 0.5f, 0.0f, 3.0f, 0.5f, 4.0f},
    /* mode=nearest padding=border align_corners=1 */
    {-1.0f, 4.5f, 1.0f, 2.5f, 0.0f, 3.5f, 0.5f, 2.0f},
    /* mode=nearest padding=reflection align_corners=0 */
    {-1.0f, 4.5f, 1.0f, 0.0f, 0.0f, 1.0f, 3.5f, 4.0f},
    /* mode=nearest padding=reflection align_corners=1 */
    {-1.0f, 4.5f, 1.0f, 2.0f, 0.0f, 1.5f, 3.5f, 2.0f},
    /* mode=linear padding=zeros align_corners=0 */
    {-0.25f, 1.125f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 2.9000001f},
    /* mode=linear padding=zeros align_corners=1 */
    {-1.0f, 4.5f, 0.77000016f, 0.17000024f, -0.049999997f, 0.329999685f, 0.0f, 2.5250001f},
    /* mode=linear padding=border align_corners=0 */
    {-1.0f, 4.5f, 1.60000014f, 1.30000007f, 0.0f, 3.1500001f, 0.5f, 2.9000001f},
    /* mode=linear padding=border align_corners=1 */
    {-1.0f, 4.5f, 1.4000001f, 1.70000005f, -0.0625f, 3.29999995f, 0.5f, 2.5250001f},
    /* mode=linear padding=reflection align_corners=0 */
    {-1.0f, 4.5f, 1.6500001f, 0.950000167f, 0.0f, 1.44999921f, 3.44999981f, 2.9000001f},
    /* mode=linear padding=reflection align_corners=1 */
    {-1.0f, 4.5f, 1.625f, 1.25000012f, 0.337500095f, 1.49999976f, 3.32500005f, 2.5250001f},
    /* mode=cubic padding=zeros align_corners=0 */
    {-0.3671875f, 1.2421875f, -0.116654739f, -0.056038253f, -0.0479998589f, -0.0494366623f, 0.0f, 3.43888998f},
    /* mode=cubic padding=zeros align_corners=1 */
    {-1.0f, 4.5f, 0.846526861f, 0.130225599f, -0.260398328f, 0.298847377f, 0.0f, 2.92303157f},
    /* mode=cubic padding=border align_corners=0 */
    {-1.234375f, 4.734375f, 1.7784977f, 1.13199985f, 0.0f, 3.11587524f, 0.5f, 3.06291652f},
    /* mode=cubic padding=border align_corners=1 */
    {-1.0f, 4.5f, 1.5440011f, 1.50799978f, -0.0830078125f, 3.2519989f, 0.5f, 2.69562674f},
    /* mode=cubic padding=reflection align_corners=0 */
    {-1.46875f, 4.96875f, 1.81612253f, 0.826625288f, -0.240000248f, 1.53381217f, 3.76987338f, 3.06291652f},
    /* mode=cubic padding=reflection align_corners=1 */
    {-1.0f, 4.5f, 1.72109473f, 0.938748956f, 0.0289937034f, 1.51499867f, 3.50669026f, 2.81506395f},
};
/* GridSample-20 1-D cubic on (2, -1, 4, 0.5, 3) at (-1.7, -0.95, 0.3, 1.2, 2.4), zeros/border/reflection. */
static const float gs1_want[3][5] = {
    {0.0f, 1.60888672f, 1.20507812f, 0.0f, 0.0f},
    {2.0f, 2.32958984f, 1.20507812f, 3.0f, 3.0f},
    {-0.060546875f, 2.52734375f, 1.20507812f, 3.0f, -1.0f},
};
/* RoiAlign-16, 2 x 3 bins, spatial_scale 0.5, on X = (arange(120) % 7) / 4 - 0.5 (2, 2, 5, 6) and the 4 rois below,
 * for mode avg/max x half_pixel/output_half_pixel x sampling_ratio 0/2, in that order. */
static const float ra_want[8][48] = {
    /* mode=avg coordinate_transformation_mode=half_pixel sampling_ratio=0 */
    {-0.424999982f, -0.355937481f, -0.282812476f, 0.475000054f, 0.0978125036f, -0.301562548f, -0.012500003f, 0.09375f, 0.206250012f, -0.162500009f, -0.0562500022f, 0.0562500022f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.224609375f, 0.63671875f, 0.575927734f, 0.0234375f, 0.234375f, 0.609375f, 0.474609375f, 0.155761719f, -0.216064453f, 0.2734375f, 0.698486328f, 0.280517578f, -0.237792969f, -0.234863281f, -0.078125f, 0.782226562f, 0.108398438f, -0.206542969f, 0.046875f, 0.234375f, 0.421875f, -0.296875f, -0.109375f, 0.078125f},
    /* mode=avg coordinate_transformation_mode=half_pixel sampling_ratio=2 */
    {-0.346718729f, -0.31812498f, -0.284375012f, 0.436171889f, 0.097812511f, -0.301562548f, -0.0140625015f, 0.081249997f, 0.193749994f, -0.151562512f, -0.056250006f, 0.056250006f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.224609375f, 0.63671875f, 0.575927734f, 0.0234375f, 0.234375f, 0.609375f, 0.474609375f, 0.155761719f, -0.216064453f, 0.2734375f, 0.698486328f, 0.280517578f, -0.209594727f, -0.227172852f, -0.078125f, 0.747192383f, 0.126342773f, -0.206542969f, 0.046875f, 0.234375f, 0.421875f, -0.278930664f, -0.109375f, 0.078125f},
    /* mode=avg coordinate_transformation_mode=output_half_pixel sampling_ratio=0 */
    {-0.0134375095f, -0.334062546f, -0.293749988f, 0.374687523f, -0.182187468f, -0.279687375f, -0.018749997f, 0.0937500149f, 0.206250027f, -0.168750018f, -0.056250006f, 0.0562500022f, 0.479166657f, 0.5625f, 0.645833373f, 0.354166657f, 0.4375f, 0.520833313f, 0.6875f, 0.625f, 0.270833313f, 0.854166687f, 0.9375f, 0.583333254f, 0.40234375f, 0.69921875f, 0.366699219f, -0.0625f, 0.234375f, 0.600830078f, 0.842529297f, 0.0541992188f, -0.17578125f, 0.4375f, 0.691650391f, 0.290771484f, -0.166015625f, -0.265625f, -0.078125f, 0.682128906f, 0.213378906f, -0.40234375f, 0.046875f, 0.234375f, 0.421875f, -0.27734375f, -0.08984375f, 0.09765625f},
    /* mode=avg coordinate_transformation_mode=output_half_pixel sampling_ratio=2 */
    {-0.0134374946f, -0.316015661f, -0.293749988f, 0.374687552f, -0.159218729f, -0.279687464f, -0.0187500045f, 0.0937500075f, 0.206250012f, -0.168750003f, -0.0562499985f, 0.056250006f, 0.479166687f, 0.5625f, 0.645833373f, 0.354166657f, 0.43750003f, 0.520833373f, 0.6875f, 0.588541627f, 0.270833224f, 0.854166627f, 0.8828125f, 0.583333254f, 0.40234375f, 0.69921875f, 0.366699219f, -0.0625f, 0.234375f, 0.600830078f, 0.842529297f, 0.0541992188f, -0.17578125f, 0.4375f, 0.691650391f, 0.290771484f, -0.166015625f, -0.265625f, -0.078125f, 0.682128906f, 0.213378906f, -0.362182617f, 0.046875f, 0.234375f, 0.421875f, -0.27734375f, -0.08984375f, 0.09765625f},
    /* mode=max coordinate_transformation_mode=half_pixel sampling_ratio=0 */
    {0.0500000119f, 0.0287500061f, 0.0062499987f, 0.650000036f, 0.373750001f, 0.0812499672f, 0.0f, 0.100937501f, 0.207812518f, 0.0f, 0.0371874981f, 0.076562494f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.5f, 0.65625f, 0.875f, 0.1640625f, 0.287109375f, 0.430664062f, 1.0f, 0.625f, 0.05078125f, 0.4921875f, 0.57421875f, 0.62890625f, 0.24609375f, 0.03515625f, 0.0634765625f, 0.84765625f, 0.57421875f, 0.24609375f, 0.0888671875f, 0.177734375f, 0.224609375f, 0.0009765625f, 0.0068359375f, 0.151367188f},
    /* mode=max coordinate_transformation_mode=half_pixel sampling_ratio=2 */
    {0.200000018f, 0.137500018f, 0.0474999957f, 0.800000072f, 0.550000072f, 0.189999983f, 0.0218750015f, 0.134375006f, 0.246875018f, 0.0109375007f, 0.067187503f, 0.123437509f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.5f, 0.65625f, 0.875f, 0.1640625f, 0.287109375f, 0.430664062f, 1.0f, 0.625f, 0.05078125f, 0.4921875f, 0.57421875f, 0.62890625f, 0.263671875f, 0.087890625f, 0.0825195312f, 0.908203125f, 0.615234375f, 0.369140625f, 0.0952148438f, 0.190429688f, 0.291992188f, 0.041015625f, 0.0151367188f, 0.196777344f},
    /* mode=max coordinate_transformation_mode=output_half_pixel sampling_ratio=0 */
    {0.288749993f, 0.0412499607f, 0.0f, 0.446249932f, 0.138750106f, 0.0937500447f, 0.0534375012f, 0.104062505f, 0.0843750238f, 0.0f, 0.0f, 0.0796875134f, 0.25f, 0.375f, 0.249999985f, 0.25f, 0.375f, 0.249999985f, 0.5f, 0.75f, 0.49999997f, 0.5f, 0.75f, 0.49999997f, 0.5f, 0.65625f, 0.79296875f, 0.0390625f, 0.263671875f, 0.553710938f, 1.0f, 0.79296875f, 0.03125f, 0.421875f, 0.553710938f, 0.68359375f, 0.29296875f, 0.0f, 0.0283203125f, 0.625f, 0.625f, 0.0f, 0.141601562f, 0.169921875f, 0.396484375f, 0.0f, 0.0498046875f, 0.116210938f},
    /* mode=max coordinate_transformation_mode=output_half_pixel sampling_ratio=2 */
    {0.446250021f, 0.131249964f, 0.0f, 0.637499988f, 0.288750052f, 0.221250042f, 0.0881249979f, 0.144374996f, 0.146250024f, 0.0f, 0.00937500596f, 0.121875018f, 0.328125f, 0.401041687f, 0.32812494f, 0.328125f, 0.401041687f, 0.32812494f, 0.65625f, 0.802083373f, 0.656249881f, 0.65625f, 0.802083373f, 0.656249881f, 0.5f, 0.65625f, 0.79296875f, 0.0390625f, 0.263671875f, 0.553710938f, 1.0f, 0.79296875f, 0.03125f, 0.421875f, 0.553710938f, 0.68359375f, 0.439453125f, 0.0f, 0.0708007812f, 0.8125f, 0.8125f, 0.0625f, 0.184082031f, 0.254882812f, 0.424804688f, 0.0f, 0.0747070312f, 0.124511719f},
};

static bd_tensor scalar64(int64_t *v) { return (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 0, .data = v}; }

/* Selected triples of a NonMaxSuppression run (n rows of 3). */
static int nms_rows(const bd_tensor *out, const int64_t *want, int n)
{
    if (out->rank != 2 || out->dims[0] != n || out->dims[1] != 3) return 0;
    return n == 0 || memcmp(out->data, want, (size_t)n * 3 * sizeof *want) == 0;
}

/* NonMaxSuppression through bd_inst_build: a graph whose inputs are all
 * constants folds the node at plan time, and the folded value carries the
 * actual shape. */
static void nms_folded(void)
{
    bd_graph g = {0};
    bd_err e = {0};
    bd_inst x = {0};
    static const float boxes[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11};
    static const float scores[3] = {0.9f, 0.75f, 0.6f};
    const char *names[6] = {"boxes", "scores", "max", "iou", "thr", "selected"};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(bd_graph_add_value(&g, names[i]), i);
    bd_value *v = g.values;
    v[0].dtype = F32, v[0].rank = 3, v[0].dims[0] = 1, v[0].dims[1] = 3, v[0].dims[2] = 4;
    v[1].dtype = F32, v[1].rank = 3, v[1].dims[0] = 1, v[1].dims[1] = 1, v[1].dims[2] = 3;
    v[2].dtype = BRAID_DTYPE_INT64, v[2].rank = 1, v[2].dims[0] = 1;
    v[3].dtype = F32, v[3].rank = 1, v[3].dims[0] = 1;
    v[4].dtype = F32, v[4].rank = 1, v[4].dims[0] = 1;
    size_t nb[5] = {sizeof boxes, sizeof scores, 8, 4, 4};
    for (int i = 0; i < 5; i++) {
        v[i].flags = BD_VAL_CONST;
        v[i].data = bd_malloc(nb[i]);
    }
    memcpy(v[0].data, boxes, sizeof boxes);
    memcpy(v[1].data, scores, sizeof scores);
    *(int64_t *)v[2].data = 3;
    *(float *)v[3].data = 0.5f;
    *(float *)v[4].data = 0.0f;
    v[5].flags = BD_VAL_OUTPUT;
    g.nodes = bd_calloc(1, sizeof *g.nodes);
    g.n_nodes = 1;
    bd_node *n = &g.nodes[0];
    n->name = bd_strdup("nms");
    n->op_type = bd_strdup("NonMaxSuppression");
    n->domain = bd_strdup("");
    n->op = BD_OP_NonMaxSuppression;
    n->opset = 11;
    n->n_in = 5, n->n_out = 1;
    n->in = bd_malloc(5 * sizeof *n->in);
    n->out = bd_malloc(sizeof *n->out);
    for (int i = 0; i < 5; i++) n->in[i] = i;
    n->out[0] = 5;
    g.outputs = bd_malloc(sizeof *g.outputs);
    g.outputs[0] = 5;
    g.n_outputs = 1;
    CHECK_EQ_INT(bd_graph_toposort(&g, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_parse(n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_inst_build(&g, NULL, NULL, &x, &e), BRAID_OK);
    /* box 1 overlaps box 0 by IoU 0.9/1.1 > 0.5 and goes; box 2 stays */
    const bd_tensor *sel = &x.vals[5];
    static const int64_t want[6] = {0, 0, 0, 0, 0, 2};
    CHECK(sel->data != NULL);
    CHECK(nms_rows(sel, want, 2));
    CHECK_EQ_INT(x.live[0], 0); /* folded away */
    bd_inst_free(&x);
    bd_graph_free(&g);
}

int main(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor in[5], out[2];

    /* GridSample against the reference, every mode, padding and align_corners. */
    {
        float X[12], G[16] = {-1, -1, 1, 1, -1.3f, 0.2f, 1.6f, -0.4f, 0.25f, -1.2f, -0.6f, 1.9f, 3.7f, -2.9f, 0.1f, 0.35f};
        for (int i = 0; i < 12; i++) X[i] = 0.5f * (float)i - 1.0f;
        static const char *modes[3] = {"nearest", "linear", "cubic"}, *pads[3] = {"zeros", "border", "reflection"};
        int c = 0;
        for (int m = 0; m < 3; m++)
            for (int p = 0; p < 3; p++)
                for (int a = 0; a < 2; a++, c++) {
                    tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
                    attr_str(&t, "mode", modes[m]);
                    attr_str(&t, "padding_mode", pads[p]);
                    attr_int(&t, "align_corners", a);
                    in[0] = tensor(F32, 4, (int64_t[]){1, 1, 3, 4}, X);
                    in[1] = tensor(F32, 4, (int64_t[]){1, 2, 4, 2}, G);
                    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
                    CHECK_EQ_INT(out[0].dims[2], 2);
                    CHECK_EQ_INT(out[0].dims[3], 4);
                    for (int i = 0; i < 8; i++) {
                        float got = ((float *)out[0].data)[i], want = gs_want[c][i];
                        if (!(fabsf(got - want) <= 1e-6f + 1e-5f * fabsf(want)))
                            fprintf(stderr, "GridSample %s %s align %d point %d: %.9g vs %.9g\n", modes[m], pads[p], a,
                                    i, got, want);
                        CHECK_NEAR(got, want, 1e-6, 1e-5);
                    }
                    done(&t.n, out);
                }
        /* opset 16 names the same modes bilinear and bicubic */
        tnode_init(&t, BD_OP_GridSample, 16, 2, 1);
        attr_str(&t, "mode", "bicubic");
        attr_str(&t, "padding_mode", "reflection");
        attr_int(&t, "align_corners", 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int i = 0; i < 8; i++) CHECK_NEAR(((float *)out[0].data)[i], gs_want[17][i], 1e-6, 1e-5);
        done(&t.n, out);
        /* ...and refuses the new names; opset 20 the old ones */
        tnode_init(&t, BD_OP_GridSample, 16, 2, 1);
        attr_str(&t, "mode", "linear");
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "GridSample-16 takes nearest, bilinear, bicubic");
        done(&t.n, out);
        tnode_init(&t, BD_OP_GridSample, 22, 2, 1);
        attr_str(&t, "mode", "bilinear");
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        done(&t.n, out);

        /* float16 X and grid: the float32 result rounded once */
        uint16_t Xh[12], Gh[16];
        for (int i = 0; i < 12; i++) Xh[i] = bd_float_to_half(X[i]);
        for (int i = 0; i < 16; i++) Gh[i] = bd_float_to_half(G[i]);
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        in[0] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 1, 3, 4}, Xh);
        in[1] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 2, 4, 2}, Gh);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT16);
        /* bilinear zeros align 0 at the grid values as float16 rounds them: 1e-3 */
        for (int i = 0; i < 8; i++) CHECK_NEAR(bd_half_to_float(((uint16_t *)out[0].data)[i]), gs_want[6][i], 2e-3, 2e-3);
        done(&t.n, out);

        /* nearest on int32 copies elements; linear on int32 is refused */
        int32_t Xi[12];
        for (int i = 0; i < 12; i++) Xi[i] = 100 * i - 7;
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        attr_str(&t, "mode", "nearest");
        attr_str(&t, "padding_mode", "border");
        in[0] = tensor(BRAID_DTYPE_INT32, 4, (int64_t[]){1, 1, 3, 4}, Xi);
        in[1] = tensor(F32, 4, (int64_t[]){1, 2, 4, 2}, G);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int i = 0; i < 8; i++) /* the float case's values are 0.5 k - 1: k = 2 (v + 1) */
            CHECK_EQ_INT(((int32_t *)out[0].data)[i], 100 * (int)lrintf(2 * (gs_want[2][i] + 1)) - 7);
        done(&t.n, out);
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
        CHECK_CONTAINS(e.msg, "interpolates only float types");
        done(&t.n, out);

        /* NaN coordinates read as outside: zeros padding gives 0 */
        float Gn[4] = {NAN, 0, 0, NAN};
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        in[0] = tensor(F32, 4, (int64_t[]){1, 1, 3, 4}, X);
        in[1] = tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, Gn);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_NEAR(((float *)out[0].data)[0], 0, 0, 0);
        CHECK_NEAR(((float *)out[0].data)[1], 0, 0, 0);
        done(&t.n, out);

        /* an empty grid gives an empty output; a wrong grid shape is SHAPE */
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        in[1] = tensor(F32, 4, (int64_t[]){1, 0, 5, 2}, G);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(bd_numel(&out[0]), 0);
        done(&t.n, out);
        tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
        in[1] = tensor(F32, 4, (int64_t[]){1, 2, 4, 3}, G);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "grid must be (N, 2 output dims, 2)");
        done(&t.n, out);
        tnode_init(&t, BD_OP_GridSample, 16, 2, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 1, 12}, X);
        in[1] = tensor(F32, 3, (int64_t[]){1, 8, 1}, G);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "GridSample-16 takes 4-D input");
        done(&t.n, out);
    }

    /* GridSample 1-D cubic (opset 20) in each padding mode. */
    {
        float X1[5] = {2, -1, 4, 0.5f, 3}, G1[5] = {-1.7f, -0.95f, 0.3f, 1.2f, 2.4f};
        static const char *pads[3] = {"zeros", "border", "reflection"};
        for (int p = 0; p < 3; p++) {
            tnode_init(&t, BD_OP_GridSample, 20, 2, 1);
            attr_str(&t, "mode", "cubic");
            attr_str(&t, "padding_mode", pads[p]);
            in[0] = tensor(F32, 3, (int64_t[]){1, 1, 5}, X1);
            in[1] = tensor(F32, 3, (int64_t[]){1, 5, 1}, G1);
            CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
            for (int i = 0; i < 5; i++) CHECK_NEAR(((float *)out[0].data)[i], gs1_want[p][i], 1e-6, 1e-5);
            done(&t.n, out);
        }
    }

    /* AffineGrid: a 2-D identity on 2 x 3 with and without align_corners, a
     * 3-D shear, and one-point axes (align_corners puts them at -1). */
    {
        float id[6] = {1, 0, 0, 0, 1, 0};
        int64_t size[4] = {1, 1, 2, 3};
        for (int a = 0; a < 2; a++) {
            tnode_init(&t, BD_OP_AffineGrid, 20, 2, 1);
            attr_int(&t, "align_corners", a);
            in[0] = tensor(F32, 3, (int64_t[]){1, 2, 3}, id);
            in[1] = ints1(size, 4);
            CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
            CHECK_EQ_INT(out[0].rank, 4);
            CHECK_EQ_INT(out[0].dims[1], 2);
            CHECK_EQ_INT(out[0].dims[2], 3);
            CHECK_EQ_INT(out[0].dims[3], 2);
            const float xs[2][3] = {{-2.0f / 3, 0, 2.0f / 3}, {-1, 0, 1}}, ys[2][2] = {{-0.5f, 0.5f}, {-1, 1}};
            for (int y = 0; y < 2; y++)
                for (int x = 0; x < 3; x++) {
                    CHECK_NEAR(((float *)out[0].data)[(y * 3 + x) * 2], xs[a][x], 1e-7, 0);
                    CHECK_NEAR(((float *)out[0].data)[(y * 3 + x) * 2 + 1], ys[a][y], 1e-7, 0);
                }
            done(&t.n, out);
        }
        double sh[12] = {1, 0.5, 0, 0.25, 0, 1, 0, 0, 0, 0, 2, -1};
        int64_t s3[5] = {1, 1, 1, 2, 2};
        tnode_init(&t, BD_OP_AffineGrid, 20, 2, 1);
        attr_int(&t, "align_corners", 1);
        in[0] = tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){1, 3, 4}, sh);
        in[1] = ints1(s3, 5);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].rank, 5);
        /* D = 1: z = -1; (x, y) in {-1, 1}^2: (x + 0.5 y + 0.25, y, 2 z - 1 = -3) */
        const double *g3 = out[0].data;
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++) {
                double xv = 2.0 * x - 1, yv = 2.0 * y - 1;
                CHECK_NEAR(g3[(y * 2 + x) * 3], xv + 0.5 * yv + 0.25, 1e-15, 0);
                CHECK_NEAR(g3[(y * 2 + x) * 3 + 1], yv, 1e-15, 0);
                CHECK_NEAR(g3[(y * 2 + x) * 3 + 2], -3.0, 1e-15, 0);
            }
        done(&t.n, out);
        int64_t bad[3] = {1, 1, 2};
        tnode_init(&t, BD_OP_AffineGrid, 20, 2, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 2, 3}, id);
        in[1] = ints1(bad, 3);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "4 (N, C, H, W) or 5");
        done(&t.n, out);
    }

    /* RoiAlign against the reference: a ROI inside, a single point, one
     * covering and exceeding the image, one beyond its corner. */
    {
        float Xr[120], rois[16] = {0.5f, 0.5f, 3.2f, 2.9f, 1, 1, 1, 1, -2, -1, 7, 6.5f, 4.5f, 3.5f, 9, 9};
        int64_t bi[4] = {0, 1, 1, 0};
        for (int i = 0; i < 120; i++) Xr[i] = (float)(i % 7) * 0.25f - 0.5f;
        static const char *modes[2] = {"avg", "max"}, *cts[2] = {"half_pixel", "output_half_pixel"};
        int c = 0;
        for (int m = 0; m < 2; m++)
            for (int ct = 0; ct < 2; ct++)
                for (int sr = 0; sr <= 2; sr += 2, c++) {
                    tnode_init(&t, BD_OP_RoiAlign, 16, 3, 1);
                    attr_str(&t, "mode", modes[m]);
                    attr_str(&t, "coordinate_transformation_mode", cts[ct]);
                    attr_int(&t, "output_height", 2);
                    attr_int(&t, "output_width", 3);
                    attr_int(&t, "sampling_ratio", sr);
                    attr_float(&t, "spatial_scale", 0.5f);
                    in[0] = tensor(F32, 4, (int64_t[]){2, 2, 5, 6}, Xr);
                    in[1] = tensor(F32, 2, (int64_t[]){4, 4}, rois);
                    in[2] = ints1(bi, 4);
                    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
                    for (int i = 0; i < 48; i++) {
                        float got = ((float *)out[0].data)[i];
                        if (!(fabsf(got - ra_want[c][i]) <= 1e-6f + 1e-5f * fabsf(ra_want[c][i])))
                            fprintf(stderr, "RoiAlign %s %s %d [%d]: %.9g vs %.9g\n", modes[m], cts[ct], sr, i, got,
                                    ra_want[c][i]);
                        CHECK_NEAR(got, ra_want[c][i], 1e-6, 1e-5);
                    }
                    done(&t.n, out);
                }
        /* opset 10 has no coordinate_transformation_mode: output_half_pixel */
        tnode_init(&t, BD_OP_RoiAlign, 10, 3, 1);
        attr_int(&t, "output_height", 2);
        attr_int(&t, "output_width", 3);
        attr_float(&t, "spatial_scale", 0.5f);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int i = 0; i < 48; i++) CHECK_NEAR(((float *)out[0].data)[i], ra_want[2][i], 1e-6, 1e-5);
        done(&t.n, out);
        /* a batch index beyond X */
        int64_t bad[4] = {0, 1, 2, 0};
        tnode_init(&t, BD_OP_RoiAlign, 16, 3, 1);
        in[2] = ints1(bad, 4);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "ROI 2 has batch index 2");
        done(&t.n, out);
        /* a NaN coordinate; a ROI whose adaptive grid would be huge */
        float nanroi[16], hugeroi[16];
        memcpy(nanroi, rois, sizeof nanroi);
        memcpy(hugeroi, rois, sizeof hugeroi);
        nanroi[5] = NAN;
        hugeroi[14] = 1e9f;
        tnode_init(&t, BD_OP_RoiAlign, 16, 3, 1);
        in[1] = tensor(F32, 2, (int64_t[]){4, 4}, nanroi);
        in[2] = ints1(bi, 4);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "ROI 1 has a coordinate that is not a finite number");
        done(&t.n, out);
        tnode_init(&t, BD_OP_RoiAlign, 16, 3, 1);
        in[1] = tensor(F32, 2, (int64_t[]){4, 4}, hugeroi);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_LIMIT);
        CHECK_CONTAINS(e.msg, "ROI 3 spans");
        done(&t.n, out);
        /* no ROIs: an empty output */
        tnode_init(&t, BD_OP_RoiAlign, 16, 3, 1);
        in[1] = tensor(F32, 2, (int64_t[]){0, 4}, rois);
        in[2] = ints1(bi, 0);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[0], 0);
        done(&t.n, out);
    }

    /* MaxRoiPool on 0..15 (4 x 4), pooled 2 x 2: the whole image gives the
     * quadrants' maxima; a ROI scaled by 0.5 (round(2 * 0.5) = 1 .. round(6.5 * 0.5) = 3)
     * covers rows and columns 1..3; a ROI beyond the image gives empty bins (0). */
    {
        float X[16], rois[15] = {0, 0, 0, 3, 3, 0, 2, 2, 6.5f, 6.5f, 0, 9, 9, 12, 12};
        for (int i = 0; i < 16; i++) X[i] = (float)i;
        tnode_init(&t, BD_OP_MaxRoiPool, 22, 2, 1);
        int64_t ps[2] = {2, 2};
        attr_ints(&t, "pooled_shape", 2, ps);
        in[0] = tensor(F32, 4, (int64_t[]){1, 1, 4, 4}, X);
        in[1] = tensor(F32, 2, (int64_t[]){1, 5}, rois);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        const float want0[4] = {5, 7, 13, 15};
        for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], want0[i], 0, 0);
        done(&t.n, out);
        tnode_init(&t, BD_OP_MaxRoiPool, 22, 2, 1);
        attr_ints(&t, "pooled_shape", 2, ps);
        attr_float(&t, "spatial_scale", 0.5f);
        in[1] = tensor(F32, 2, (int64_t[]){2, 5}, rois + 5);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        /* ROI (1..3): size 3, bins [1, 3) and [2, 4) (floor 0 * 1.5, ceil 1.5; floor 1.5, ceil 3) */
        const float want1[8] = {10, 11, 14, 15, 0, 0, 0, 0};
        for (int i = 0; i < 8; i++) CHECK_NEAR(((float *)out[0].data)[i], want1[i], 0, 0);
        done(&t.n, out);
        tnode_init(&t, BD_OP_MaxRoiPool, 22, 2, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "pooled_shape");
        done(&t.n, out);
    }

    /* NonMaxSuppression by hand. Boxes (y1, x1, y2, x2) of one batch: 0 and
     * 1 overlap with IoU 0.5 exactly (not suppressed at 0.5: it must exceed),
     * 2 is box 0 flipped (identical area: IoU 1), 3 is far away. */
    {
        float boxes[16] = {0, 0, 2, 2, 0, 0, 2, 1.0f + 1.0f / 3.0f, 2, 2, 0, 0, 10, 10, 11, 11};
        float scores[8] = {0.9f, 0.8f, 0.7f, 0.6f, /* class 1: */ 0.1f, NAN, 0.3f, 0.3f};
        int64_t maxb = 10;
        float iou = 0.5f, thr = 0.0f;
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 5, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 4, 4}, boxes);
        in[1] = tensor(F32, 3, (int64_t[]){1, 2, 4}, scores);
        in[2] = scalar64(&maxb);
        in[3] = tensor(F32, 0, NULL, &iou);
        in[4] = tensor(F32, 0, NULL, &thr);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        /* class 0: 0 kept; 1 (2 x 1.333: intersection 2.667, union 4, IoU 0.667 >
         * 0.5) and 2 (IoU 1) suppressed by 0; 3 kept. class 1: NaN fails the
         * threshold; 2 and 3 tie at 0.3 (the lower index first), 0 goes (IoU 1 with 2). */
        static const int64_t want[12] = {0, 0, 0, 0, 0, 3, 0, 1, 2, 0, 1, 3};
        CHECK(nms_rows(&out[0], want, 4));
        done(&t.n, out);
        /* the same with iou_threshold 0.7: box 1 (IoU 0.667) stays */
        iou = 0.7f;
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 5, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        static const int64_t want7[15] = {0, 0, 0, 0, 0, 1, 0, 0, 3, 0, 1, 2, 0, 1, 3};
        CHECK(nms_rows(&out[0], want7, 5));
        done(&t.n, out);
        /* max_output_boxes_per_class 1 and 0; without score_threshold NaN is ranked last */
        maxb = 1;
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 4, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        static const int64_t want1[6] = {0, 0, 0, 0, 1, 2};
        CHECK(nms_rows(&out[0], want1, 2));
        done(&t.n, out);
        maxb = 0;
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 3, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK(nms_rows(&out[0], NULL, 0));
        done(&t.n, out);
        /* no max_output_boxes_per_class: no output */
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 2, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK(nms_rows(&out[0], NULL, 0));
        done(&t.n, out);
        /* center_point_box: (xc, yc, w, h); boxes 0 and 1 equal after conversion */
        float cb[8] = {1, 1, 2, 2, 1, 1, 2, 2};
        float cs[2] = {0.5f, 0.6f};
        maxb = 5;
        iou = 0.5f;
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 4, 1);
        attr_int(&t, "center_point_box", 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 2, 4}, cb);
        in[1] = tensor(F32, 3, (int64_t[]){1, 1, 2}, cs);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        static const int64_t wantc[3] = {0, 0, 1};
        CHECK(nms_rows(&out[0], wantc, 1));
        done(&t.n, out);
        /* errors */
        tnode_init(&t, BD_OP_NonMaxSuppression, 11, 2, 1);
        in[1] = tensor(F32, 3, (int64_t[]){1, 1, 3}, cs);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        done(&t.n, out);
    }
    nms_folded();
    return check_done();
}
