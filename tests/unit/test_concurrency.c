/* test_concurrency.c: thousands of random DAGs of elementwise ops, built
 * directly as IR, planned with 1, 2, 3, 4 and an automatic number of streams
 * (every plan passes the verifier inside bd_prepare) and run on the CPU
 * backend's stream threads: every output must be bitwise identical to the
 * serial run's. Also runs under ThreadSanitizer in CI. And the thread
 * budget shared by the streams that have work (budget_test). */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check.h"
#include "ops/ops.h"

#define ROWS 64
#define COLS 512
#define NUMEL (ROWS * COLS)
#define GRAPHS 1200

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int add_value(bd_graph *g, const char *fmt, int i)
{
    char name[32];
    snprintf(name, sizeof name, fmt, i);
    return bd_graph_add_value(g, name);
}

/* x (64x512 float, large enough that branches pay for their events) -> n
 * random nodes; sinks become the graph outputs. */
static void random_graph(bd_graph *g, int n)
{
    static const int binary[] = {BD_OP_Add, BD_OP_Mul, BD_OP_Sub};
    static const int unary[] = {BD_OP_Relu, BD_OP_Neg, BD_OP_Sigmoid, BD_OP_Tanh, BD_OP_Abs};
    memset(g, 0, sizeof *g);
    g->nodes = bd_calloc((size_t)n, sizeof(bd_node));
    g->inputs = bd_malloc(sizeof(int));
    g->outputs = bd_malloc((size_t)n * sizeof(int));
    g->opsets = bd_calloc(1, sizeof(bd_opset));
    g->opsets[0].domain = bd_strdup("");
    g->opsets[0].version = 17;
    g->n_opsets = 1;
    int x = add_value(g, "x", 0);
    g->values[x].flags = BD_VAL_INPUT;
    g->values[x].dtype = BRAID_DTYPE_FLOAT;
    g->values[x].rank = 2;
    g->values[x].dims[0] = ROWS;
    g->values[x].dims[1] = COLS;
    g->inputs[g->n_inputs++] = x;
    int *used = calloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        bd_node *nd = &g->nodes[g->n_nodes++];
        int is_bin = rnd(2);
        nd->op = is_bin ? binary[rnd(3)] : unary[rnd(5)];
        nd->op_type = bd_strdup(bd_op_table[nd->op].name);
        nd->domain = bd_strdup("");
        nd->opset = 17;
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        nd->name = bd_strdup(name);
        nd->n_in = is_bin ? 2 : 1;
        nd->in = bd_malloc(2 * sizeof(int));
        nd->out = bd_malloc(sizeof(int));
        nd->n_out = 1;
        for (int k = 0; k < nd->n_in; k++) {
            /* Mostly recent values, so both long chains and wide fans occur. */
            int pick = i == 0 ? -1 : (int)(rnd(3) ? i - 1 - (int)rnd((unsigned)(i < 4 ? i : 4)) : (int)rnd((unsigned)i + 1) - 1);
            nd->in[k] = pick < 0 ? x : g->nodes[pick].out[0];
            if (pick >= 0) used[pick] = 1;
        }
        nd->out[0] = add_value(g, "v%d", i);
        bd_op_parse(nd, NULL);
    }
    for (int i = 0; i < n; i++)
        if (!used[i]) {
            g->values[g->nodes[i].out[0]].flags |= BD_VAL_OUTPUT;
            g->outputs[g->n_outputs++] = g->nodes[i].out[0];
        }
    free(used);
    bd_err e = {0};
    if (bd_graph_toposort(g, &e) != BRAID_OK) fprintf(stderr, "toposort: %s\n", e.msg);
}

/* Runs g with max_streams; copies the outputs into out (n_outputs * NUMEL floats). */
static int run_plan(bd_graph *g, const bd_tensor *in, int max_streams, float *out, int *streams)
{
    bd_err e = {0};
    bd_prepared p;
    void *st = NULL;
    bd_exec_opts o = {.max_streams = max_streams, .threads = 2};
    if (bd_prepare(g, in, NULL, &(bd_prepare_opts){.max_streams = max_streams}, &p, &e) != BRAID_OK) { fprintf(stderr, "prepare: %s\n", e.msg); return 1; }
    *streams = p.plan.n_streams;
    int rc = bd_backend_cpu.open(g, &o, &st, &e) || bd_backend_cpu.prepare(st, &p, &e) ||
             bd_backend_cpu.run(st, &p, in, &e);
    if (rc) fprintf(stderr, "run: %s\n", e.msg);
    else
        for (int o2 = 0; o2 < g->n_outputs; o2++) memcpy(out + (size_t)NUMEL * o2, p.out_data[o2], NUMEL * sizeof(float));
    if (p.bstate) bd_backend_cpu.release(st, &p);
    bd_backend_cpu.close(st);
    bd_prepared_free(&p);
    return rc;
}

/* A diamond: x -> n0 (Relu) -> n1 (Neg) and a side chain n2 (Abs) -> n3
 * (Sigmoid) -> n4 (Tanh), both into n5 (Add). */
static void diamond_graph(bd_graph *g)
{
    static const int ops[6] = {BD_OP_Relu, BD_OP_Neg, BD_OP_Abs, BD_OP_Sigmoid, BD_OP_Tanh, BD_OP_Add};
    static const int src[6][2] = {{-1, 0}, {0, 0}, {0, 0}, {2, 0}, {3, 0}, {1, 4}};
    memset(g, 0, sizeof *g);
    g->nodes = bd_calloc(6, sizeof(bd_node));
    g->inputs = bd_malloc(sizeof(int));
    g->outputs = bd_malloc(sizeof(int));
    g->opsets = bd_calloc(1, sizeof(bd_opset));
    g->opsets[0].domain = bd_strdup("");
    g->opsets[0].version = 17;
    g->n_opsets = 1;
    int x = add_value(g, "x", 0);
    g->values[x].flags = BD_VAL_INPUT;
    g->values[x].dtype = BRAID_DTYPE_FLOAT;
    g->values[x].rank = 2;
    g->values[x].dims[0] = ROWS;
    g->values[x].dims[1] = COLS;
    g->inputs[g->n_inputs++] = x;
    for (int i = 0; i < 6; i++) {
        bd_node *nd = &g->nodes[g->n_nodes++];
        nd->op = ops[i];
        nd->op_type = bd_strdup(bd_op_table[nd->op].name);
        nd->domain = bd_strdup("");
        nd->opset = 17;
        char name[32];
        snprintf(name, sizeof name, "n%d", i);
        nd->name = bd_strdup(name);
        nd->n_in = i == 5 ? 2 : 1;
        nd->in = bd_malloc(2 * sizeof(int));
        nd->out = bd_malloc(sizeof(int));
        nd->n_out = 1;
        for (int k = 0; k < nd->n_in; k++) nd->in[k] = src[i][k] < 0 ? x : g->nodes[src[i][k]].out[0];
        nd->out[0] = add_value(g, "v%d", i);
        bd_op_parse(nd, NULL);
    }
    g->values[g->nodes[5].out[0]].flags |= BD_VAL_OUTPUT;
    g->outputs[g->n_outputs++] = g->nodes[5].out[0];
    bd_err e = {0};
    if (bd_graph_toposort(g, &e) != BRAID_OK) fprintf(stderr, "toposort: %s\n", e.msg);
}

/* The thread budget follows the streams that have work: in a two-stream
 * plan of the diamond, n0 runs while the side stream waits for it, so it
 * gets the whole budget of 2 (a fixed split would give it 1); in the serial
 * plan every node gets 2. Read from the profile's trace. */
static void budget_test(const bd_tensor *in)
{
    bd_graph g;
    diamond_graph(&g);
    for (int ms = 1; ms <= 2; ms++) {
        bd_err e = {0};
        bd_prepared p;
        void *st = NULL;
        bd_exec_opts o = {.max_streams = ms, .threads = 2, .profile = 1};
        CHECK(bd_prepare(&g, in, NULL, &(bd_prepare_opts){.max_streams = ms}, &p, &e) == BRAID_OK);
        CHECK_EQ_INT(p.plan.n_streams, ms);
        int rc = bd_backend_cpu.open(&g, &o, &st, &e) || bd_backend_cpu.prepare(st, &p, &e) ||
                 bd_backend_cpu.run(st, &p, in, &e);
        CHECK(rc == 0);
        int seen = 0;
        for (int i = 0; i < p.n_trace; i++) {
            const bd_trace_event *t = &p.trace[i];
            if (ms == 1 || t->node == 0) {
                CHECK_EQ_INT(t->threads, 2);
                seen++;
            } else CHECK(t->threads >= 1 && t->threads <= 2);
        }
        CHECK_EQ_INT(seen, ms == 1 ? 6 : 1);
        if (p.bstate) bd_backend_cpu.release(st, &p);
        bd_backend_cpu.close(st);
        bd_prepared_free(&p);
    }
    bd_graph_free(&g);
}

int main(void)
{
    static float xdata[NUMEL];
    for (int i = 0; i < NUMEL; i++) xdata[i] = (float)(i % 97 - 48) / 7.0f;
    bd_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {ROWS, COLS}, .data = xdata};
    budget_test(&in);
    int graphs = 0, runs = 0, multi = 0, mismatches = 0;
    const int caps[] = {2, 3, 4, 0};
    for (int t = 0; t < GRAPHS; t++) {
        bd_graph g;
        random_graph(&g, 2 + (int)rnd(40));
        float *serial = malloc((size_t)g.n_outputs * NUMEL * sizeof(float));
        float *conc = malloc((size_t)g.n_outputs * NUMEL * sizeof(float));
        int s1;
        CHECK(run_plan(&g, &in, 1, serial, &s1) == 0);
        CHECK_EQ_INT(s1, 1);
        for (int c = 0; c < 4; c++) {
            int s;
            CHECK(run_plan(&g, &in, caps[c], conc, &s) == 0);
            if (caps[c]) CHECK(s <= caps[c]);
            multi += s > 1;
            if (memcmp(serial, conc, (size_t)g.n_outputs * NUMEL * sizeof(float)) != 0) {
                mismatches++;
                fprintf(stderr, "graph %d: streams cap %d gives outputs that differ from the serial run\n", t, caps[c]);
            }
            runs++;
        }
        free(serial);
        free(conc);
        bd_graph_free(&g);
        graphs++;
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(multi > 1000); /* the generator does produce branchy graphs */
    printf("random DAGs: %d graphs, %d concurrent runs (%d with several streams), %d mismatches\n", graphs, runs,
           multi, mismatches);
    return check_done();
}
