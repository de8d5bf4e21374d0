/* io.c: the braid command's inputs and outputs: tensors from .npy and .pb
 * files, fixed-seed random inputs shaped by --shape, output summaries and
 * .npy files; and the `run` and `info` commands. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/cpu/cpu_ops.h"
#include "cli/cli.h"
#include "onnx/onnx_internal.h"
#include "ops/ops.h"
#include "util/npy.h"

braid_status cli_session(const cli_opts *o, const braid_model *m, int max_streams, braid_session **s)
{
    braid_options *opt = NULL;
    braid_status st = braid_options_create(&opt);
    if (!st) st = braid_options_set_backend(opt, o->backend);
    if (!st) st = braid_options_set_max_streams(opt, max_streams);
    if (!st) st = braid_options_set_threads(opt, o->threads);
    if (!st) st = braid_options_set_cuda_graph(opt, o->cuda_graph);
    if (!st) st = braid_options_set_tf32(opt, o->tf32);
    if (!st) st = braid_options_set_fold(opt, !o->no_fold);
    if (!st) st = braid_options_set_layout(opt, !o->no_layout);
    if (!st && o->cuda_workspace >= 0) st = braid_options_set_cuda_workspace(opt, o->cuda_workspace);
    if (!st) st = braid_options_set_loop_limit(opt, o->loop_limit);
    if (!st && o->profile) st = braid_options_set_profile(opt, o->profile);
    if (!st) st = braid_session_create(m, opt, s);
    braid_options_destroy(opt);
    return st;
}

static void to_public(const bd_tensor *t, braid_tensor *out)
{
    out->dtype = (braid_dtype)t->dtype;
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->data = t->data;
}

braid_status cli_read_tensor(const char *path, braid_tensor *out, char *err, size_t n)
{
    return cli_read_value(path, BRAID_DTYPE_UNDEFINED, out, err, n);
}

braid_status cli_read_value(const char *path, int dtype, braid_tensor *out, char *err, size_t n)
{
    bd_err e = {0};
    bd_tensor t = {0};
    size_t len = strlen(path);
    int npy = len > 4 && !strcmp(path + len - 4, ".npy");
    if (npy && bd_dt_container(dtype)) {
        snprintf(err, n, "a %s is read from a SequenceProto or OptionalProto .pb file, not .npy", bd_dtype_name(dtype));
        return BRAID_ERR_INVALID_ARGUMENT;
    }
    braid_status st = npy ? bd_npy_read(path, &t, &e) : bd_onnx_read_value_file(path, dtype, &t, &e);
    if (st) { snprintf(err, n, "%s", e.msg); return st; }
    to_public(&t, out);
    return BRAID_OK;
}

void cli_free_tensors(braid_tensor *t, int n)
{
    for (int i = 0; i < n; i++) {
        bd_tensor x = {.dtype = t[i].dtype, .rank = t[i].rank, .data = t[i].data};
        memcpy(x.dims, t[i].dims, sizeof x.dims);
        bd_onnx_value_free(&x); /* a sequence's elements too */
        t[i].data = NULL;
    }
}

/* "NAME=VALUE" with NAME == name: returns VALUE. */
static const char *lookup(const char *const *args, int n, const char *name)
{
    size_t ln = strlen(name);
    for (int i = 0; i < n; i++)
        if (!strncmp(args[i], name, ln) && args[i][ln] == '=') return args[i] + ln + 1;
    return NULL;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

braid_status cli_make_inputs(const cli_opts *o, const braid_model *m, braid_tensor *ins, char *err, size_t n)
{
    int count = braid_model_input_count(m);
    /* Every --input and --shape must name an input. */
    for (int k = 0; k < o->n_inputs + o->n_shapes; k++) {
        const char *a = k < o->n_inputs ? o->inputs[k] : o->shapes[k - o->n_inputs];
        const char *eq = strchr(a, '=');
        int found = 0;
        for (int i = 0; eq && i < count; i++) {
            braid_value_info vi;
            braid_model_input_info(m, i, &vi);
            found |= strlen(vi.name) == (size_t)(eq - a) && !strncmp(vi.name, a, (size_t)(eq - a));
        }
        if (!eq) { snprintf(err, n, "'%s' must be NAME=%s", a, k < o->n_inputs ? "FILE" : "1x3x224x224"); return BRAID_ERR_INVALID_ARGUMENT; }
        if (!found) { snprintf(err, n, "the model has no input named '%.*s'", (int)(eq - a), a); return BRAID_ERR_INVALID_ARGUMENT; }
    }
    memset(ins, 0, (size_t)count * sizeof *ins);
    for (int i = 0; i < count; i++) {
        braid_value_info vi;
        braid_model_input_info(m, i, &vi);
        const char *file = lookup(o->inputs, o->n_inputs, vi.name);
        if (file) {
            char e2[1024];
            if (cli_read_value(file, vi.dtype, &ins[i], e2, sizeof e2)) {
                snprintf(err, n, "input '%s': %s", vi.name, e2);
                cli_free_tensors(ins, i);
                return BRAID_ERR_IO;
            }
            continue;
        }
        braid_tensor *t = &ins[i];
        if (bd_dt_container(vi.dtype)) { /* not given: an empty sequence, an empty optional */
            if (vi.dtype & BD_DT_OPT) continue;
            t->dtype = vi.dtype;
            t->rank = 1;
            continue;
        }
        t->dtype = vi.dtype;
        t->rank = vi.rank < 0 ? 0 : vi.rank;
        memcpy(t->dims, vi.dims, sizeof t->dims);
        const char *shape = lookup(o->shapes, o->n_shapes, vi.name);
        if (shape) {
            int r = 0;
            const char *p = shape;
            while (*p) {
                char *end;
                long long d = strtoll(p, &end, 10);
                if (end == p || d < 0 || r == BRAID_MAX_RANK || (*end && *end != 'x')) {
                    snprintf(err, n, "--shape %s=%s: write the dims as 1x3x224x224", vi.name, shape);
                    cli_free_tensors(ins, i);
                    return BRAID_ERR_INVALID_ARGUMENT;
                }
                t->dims[r++] = d;
                p = *end ? end + 1 : end;
            }
            t->rank = r;
        }
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] < 0) {
                snprintf(err, n, "input '%s' has a dynamic dim %s%s%s: give its shape with --shape %s=...", vi.name,
                         vi.dim_names[d] ? "'" : "", vi.dim_names[d] ? vi.dim_names[d] : "", vi.dim_names[d] ? "'" : "", vi.name);
                cli_free_tensors(ins, i);
                return BRAID_ERR_SHAPE;
            }
        }
        bd_tensor bt = {.dtype = t->dtype, .rank = t->rank};
        memcpy(bt.dims, t->dims, sizeof bt.dims);
        bd_err e = {0};
        size_t nb;
        if (bd_tensor_nbytes(&bt, &nb, &e) || !bd_dtype_size(t->dtype)) {
            snprintf(err, n, "input '%s': %s", vi.name, e.msg[0] ? e.msg : "unsupported dtype");
            cli_free_tensors(ins, i);
            return BRAID_ERR_SHAPE;
        }
        t->data = bd_calloc(1, nb + 1);
        if (!t->data) { snprintf(err, n, "out of memory"); cli_free_tensors(ins, i); return BRAID_ERR_OUT_OF_MEMORY; }
        /* Fixed seed per input: uniform [0, 1) floats, 0/1 bools, zero ints. */
        uint64_t seed = 0x9E3779B97F4A7C15ull + (uint64_t)i;
        int64_t cnt = bd_numel(&bt);
        for (int64_t k = 0; k < cnt; k++) {
            double r = (double)(rng_next(&seed) >> 11) / 9007199254740992.0;
            if (t->dtype == BRAID_DTYPE_FLOAT) ((float *)t->data)[k] = (float)r;
            else if (t->dtype == BRAID_DTYPE_DOUBLE) ((double *)t->data)[k] = r;
            else if (t->dtype == BRAID_DTYPE_BOOL) ((uint8_t *)t->data)[k] = r < 0.5;
        }
    }
    return BRAID_OK;
}

void cli_print_summary(FILE *f, const char *name, const braid_tensor *t)
{
    if (t->dtype & BRAID_DTYPE_SEQUENCE) {
        fprintf(f, "%s: %s of %lld tensors\n", name, bd_dtype_name(t->dtype), (long long)t->dims[0]);
        for (int64_t i = 0; i < t->dims[0]; i++) {
            char item[300];
            snprintf(item, sizeof item, "  %s[%lld]", name, (long long)i);
            cli_print_summary(f, item, &((const braid_tensor *)t->data)[i]);
        }
        return;
    }
    if (t->dtype == BRAID_DTYPE_UNDEFINED) { fprintf(f, "%s: empty optional\n", name); return; }
    bd_tensor bt = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
    memcpy(bt.dims, t->dims, sizeof bt.dims);
    char shape[160];
    int64_t n = bd_numel(&bt);
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = bd_get_f64(&bt, i);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += v;
    }
    fprintf(f, "%s: shape %s dtype %s", name, bd_shape_str(&bt, shape, sizeof shape), bd_dtype_name(t->dtype));
    if (n > 0) fprintf(f, " min %.6g max %.6g mean %.6g", mn, mx, sum / (double)n);
    fprintf(f, "\n");
}

void cli_print_device(FILE *f, const braid_session *s, const char *prefix)
{
    const char *d = braid_session_device_info(s);
    if (d[0]) fprintf(f, "%sdevice %s\n", prefix, d);
}

void cli_print_notes(FILE *f, const braid_session *s, const char *prefix)
{
    for (int i = 0; i < braid_session_note_count(s); i++) fprintf(f, "%snote: %s\n", prefix, braid_session_note(s, i));
}

void cli_print_graph(FILE *f, braid_session *s, const char *prefix)
{
    braid_graph_info gi;
    if (braid_session_graph_info(s, &gi) != BRAID_OK || !gi.requested) return;
    if (gi.captured)
        fprintf(f, "%scuda graph: captured; %ld run(s) replayed it, %ld ran node by node (the first, which captures it)\n",
                prefix, gi.replays, gi.uncaptured);
    else if (gi.failed)
        fprintf(f, "%scuda graph: NOT USED, capture failed: %s; all %ld run(s) went node by node\n", prefix, gi.error,
                gi.uncaptured);
    else
        fprintf(f, "%scuda graph: not captured yet (a plan is captured at the end of its first run)\n", prefix);
}

int cli_run(const cli_opts *o)
{
    braid_model *m = NULL;
    braid_session *s = NULL;
    braid_tensor ins[CLI_MAX_ARGS], outs[CLI_MAX_ARGS];
    char err[1200];
    int rc = CLI_FAIL, n_in = 0;
    braid_status st = braid_model_load_file(o->model, &m);
    if (st) return cli_fail("%s", braid_last_error()), cli_status_exit(st);
    n_in = braid_model_input_count(m);
    int n_out = braid_model_output_count(m);
    if (n_in > CLI_MAX_ARGS || n_out > CLI_MAX_ARGS) { cli_fail("models with more than %d inputs or outputs are not supported by the command line", CLI_MAX_ARGS); n_in = 0; goto done; }
    if ((st = cli_make_inputs(o, m, ins, err, sizeof err))) { n_in = 0; rc = cli_fail("%s", err); goto done; }
    if ((st = cli_session(o, m, o->streams, &s))) { rc = cli_fail("%s", braid_last_error()); rc = cli_status_exit(st); goto done; }
    const char *note = braid_session_backend_note(s);
    fprintf(stderr, "braid: backend %s%s%s%s\n", braid_session_backend(s) == BRAID_BACKEND_CUDA ? "cuda" : "cpu",
            note[0] ? " (" : "", note, note[0] ? ")" : "");
    cli_print_device(stderr, s, "braid: ");
    st = braid_session_run(s, n_in, ins, n_out, outs);
    cli_print_notes(stderr, s, "braid: ");
    if (st) { cli_fail("%s", braid_session_error(s)); rc = cli_status_exit(st); goto done; }
    if (o->output_dir) mkdir(o->output_dir, 0755);
    for (int i = 0; i < n_out; i++) {
        braid_value_info vi;
        braid_model_output_info(m, i, &vi);
        cli_print_summary(stdout, vi.name, &outs[i]);
        if (o->output_dir) {
            char path[4096], safe[256];
            snprintf(safe, sizeof safe, "%s", vi.name);
            for (char *c = safe; *c; c++) if (*c == '/' || *c == ':') *c = '_';
            /* a sequence: NAME_K.npy per element; an empty optional: no file */
            int seq = (outs[i].dtype & BRAID_DTYPE_SEQUENCE) != 0;
            int64_t cnt = seq ? outs[i].dims[0] : outs[i].dtype != BRAID_DTYPE_UNDEFINED;
            for (int64_t k = 0; k < cnt; k++) {
                const braid_tensor *x = seq ? &((const braid_tensor *)outs[i].data)[k] : &outs[i];
                if (seq) snprintf(path, sizeof path, "%s/%s_%lld.npy", o->output_dir, safe, (long long)k);
                else snprintf(path, sizeof path, "%s/%s.npy", o->output_dir, safe);
                bd_tensor t = {.dtype = x->dtype, .rank = x->rank, .data = x->data};
                memcpy(t.dims, x->dims, sizeof t.dims);
                bd_err e = {0};
                if (bd_npy_write(path, &t, &e)) { rc = cli_fail("%s", e.msg); goto done; }
            }
        }
    }
    rc = CLI_OK;
done:
    cli_free_tensors(ins, n_in);
    braid_session_destroy(s);
    braid_model_destroy(m);
    return rc;
}

/* A declared type: "float32 [1, N]", "seq(float32 [?])", "optional(...)". */
static void print_type(const Onnx__TypeProto *tp, int depth)
{
    if (!tp || depth > 8) { printf("?"); return; }
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: {
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        printf("%s", bd_dtype_name(tt->elem_type));
        if (!tt->shape) break;
        printf(" [");
        for (size_t d = 0; d < tt->shape->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
            if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) printf("%s%lld", d ? ", " : "", (long long)dim->dim_value);
            else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) printf("%s%s", d ? ", " : "", dim->dim_param);
            else printf("%s?", d ? ", " : "");
        }
        printf("]");
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        printf("seq(");
        print_type(tp->sequence_type->elem_type, depth + 1);
        printf(")");
        break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        printf("optional(");
        print_type(tp->optional_type->elem_type, depth + 1);
        printf(")");
        break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: printf("map (not supported)"); break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: printf("sparse tensor (not supported)"); break;
    default: printf("?"); break;
    }
}

/* The ops of a model, counted through subgraphs (If branches, Loop and
 * Scan bodies) and the bodies of the model-local functions its nodes call,
 * each checked against the registry at the opset that applies to it. */
typedef struct op_tally {
    const Onnx__ModelProto *mp;
    const char *names[512], *doms[512];
    int counts[512], ok[512], n_ops;
    long n_nodes;
} op_tally;

static int64_t tally_opset(const op_tally *t, const Onnx__FunctionProto *f, const char *dom)
{
    const char *d = strcmp(dom, "ai.onnx") ? dom : "";
    for (size_t j = 0; f && j < f->n_opset_import; j++) {
        const char *od = f->opset_import[j]->domain ? f->opset_import[j]->domain : "";
        if (!strcmp(strcmp(od, "ai.onnx") ? od : "", d)) return f->opset_import[j]->version;
    }
    for (size_t j = 0; j < t->mp->n_opset_import; j++) {
        const char *od = t->mp->opset_import[j]->domain ? t->mp->opset_import[j]->domain : "";
        if (!strcmp(strcmp(od, "ai.onnx") ? od : "", d)) return t->mp->opset_import[j]->version;
    }
    return !t->mp->n_opset_import && !d[0] ? 1 : -1;
}

static void tally_nodes(op_tally *t, Onnx__NodeProto *const *nodes, size_t n, const Onnx__FunctionProto *f, int depth)
{
    if (depth > 32) return;
    for (size_t i = 0; i < n; i++) {
        const Onnx__NodeProto *np = nodes[i];
        const char *op = np->op_type ? np->op_type : "";
        const char *dom = np->domain ? np->domain : "";
        const char *d = strcmp(dom, "ai.onnx") ? dom : "";
        int64_t opset = tally_opset(t, f, dom);
        const Onnx__FunctionProto *call = NULL; /* a model-local function: its body counts (as the loader expands it) */
        for (size_t j = 0; j < t->mp->n_functions && !call; j++) {
            const Onnx__FunctionProto *fn = t->mp->functions[j];
            const char *fd = fn->domain && strcmp(fn->domain, "ai.onnx") ? fn->domain : "";
            if (fn->name && !strcmp(fn->name, op) && !strcmp(fd, d) && (d[0] || bd_op_lookup(d, op, opset) < 0)) call = fn;
        }
        if (call) { tally_nodes(t, call->node, call->n_node, call, depth + 1); continue; }
        t->n_nodes++;
        int k = 0;
        while (k < t->n_ops && (strcmp(t->names[k], op) || strcmp(t->doms[k], dom))) k++;
        if (k == t->n_ops && t->n_ops < 512) {
            t->names[k] = op;
            t->doms[k] = dom;
            t->ok[k] = 1;
            t->counts[t->n_ops++] = 0;
        }
        if (k < 512) {
            t->counts[k]++;
            if (opset < 0 || bd_op_lookup(dom, op, opset) < 0) t->ok[k] = 0;
        }
        for (size_t a = 0; a < np->n_attribute; a++) {
            const Onnx__AttributeProto *ap = np->attribute[a];
            if (ap->g) tally_nodes(t, ap->g->node, ap->g->n_node, f, depth + 1);
            for (size_t q = 0; q < ap->n_graphs; q++) tally_nodes(t, ap->graphs[q]->node, ap->graphs[q]->n_node, f, depth + 1);
        }
    }
}

/* info reads the protobuf directly so that it can list unsupported ops that
 * would stop a load. */
int cli_info(const cli_opts *o)
{
    void *bytes = NULL;
    size_t size = 0;
    bd_err e = {0};
    if (bd_read_file(o->model, &bytes, &size, &e)) return cli_fail("%s", e.msg);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&bd_pb_allocator, size, bytes);
    bd_free(bytes);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, &bd_pb_allocator);
        return cli_fail("%s: the model is not a valid ONNX protobuf (truncated or not an ONNX file, %zu bytes)", o->model, size);
    }
    const Onnx__GraphProto *g = mp->graph;
    printf("model: %s (ir_version %lld, producer %s)\n", o->model, (long long)mp->ir_version,
           mp->producer_name && mp->producer_name[0] ? mp->producer_name : "unknown");
    printf("opsets:");
    for (size_t i = 0; i < mp->n_opset_import; i++)
        printf(" %s=%lld", mp->opset_import[i]->domain && mp->opset_import[i]->domain[0] ? mp->opset_import[i]->domain : "ai.onnx",
               (long long)mp->opset_import[i]->version);
    printf("\n");
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? g->n_output : g->n_input;
        Onnx__ValueInfoProto **vis = pass ? g->output : g->input;
        printf("%s:\n", pass ? "outputs" : "inputs");
        for (size_t i = 0; i < n; i++) {
            const Onnx__ValueInfoProto *vi = vis[i];
            int is_init = 0;
            for (size_t k = 0; !pass && k < g->n_initializer; k++) is_init |= !strcmp(g->initializer[k]->name, vi->name);
            if (is_init) continue;
            printf("  %s", vi->name);
            if (vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET) {
                printf(" ");
                print_type(vi->type, 0);
            }
            printf("\n");
        }
    }
    printf("initializers: %zu\n", g->n_initializer);
    op_tally t = {.mp = mp};
    tally_nodes(&t, g->node, g->n_node, NULL, 0);
    printf("nodes: %zu", g->n_node);
    if (t.n_nodes > (long)g->n_node) printf(" (%ld with subgraphs and functions)", t.n_nodes);
    printf("\n");
    int unsupported = 0;
    printf("ops:\n");
    for (int k = 0; k < t.n_ops; k++) {
        char label[160];
        snprintf(label, sizeof label, "%s%s%s", t.doms[k][0] && strcmp(t.doms[k], "ai.onnx") ? t.doms[k] : "",
                 t.doms[k][0] && strcmp(t.doms[k], "ai.onnx") ? "." : "", t.names[k]);
        unsupported += !t.ok[k];
        printf("  %-24s %5d%s\n", label, t.counts[k], t.ok[k] ? "" : "  (unsupported)");
    }
    printf("unsupported ops: %d", unsupported);
    for (int k = 0; k < t.n_ops; k++)
        if (!t.ok[k]) printf(" %s%s%s", t.doms[k][0] && strcmp(t.doms[k], "ai.onnx") ? t.doms[k] : "",
                             t.doms[k][0] && strcmp(t.doms[k], "ai.onnx") ? "." : "", t.names[k]);
    printf("\n");
    onnx__model_proto__free_unpacked(mp, &bd_pb_allocator);
    return CLI_OK;
}
