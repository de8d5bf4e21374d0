/* test_sched.c: the plan compiler. Thousands of random DAGs verified for
 * every max_streams; the shapes the design names (two convolutions into an
 * Add, an Inception block, a chain too cheap to split); the race that
 * lifetime-only memory reuse would make; hand-broken plans the verifier must
 * reject with a message naming the fault; and planning time on big graphs. */
#include "check.h"
#include "sched/plan.h"

#include <stdlib.h>

/* ---- a small graph builder ---------------------------------------------------- */

typedef struct gb {
    int n, ne, nb, nu;
    int *eu, *ev;         /* edges u -> v, any order */
    int *bu_b, *bu_v;     /* buffer b is read by node v */
    int *pred_start, *pred, *use_start, *use, *prod;
    size_t *size;
    double *cost;
    char (*namebuf)[24];
    const char **names;
    bd_sched_input in;
} gb;

static void gb_init(gb *g, int n, int max_e, int max_b, int max_u)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->eu = calloc((size_t)max_e + 1, sizeof(int));
    g->ev = calloc((size_t)max_e + 1, sizeof(int));
    g->bu_b = calloc((size_t)max_u + 1, sizeof(int));
    g->bu_v = calloc((size_t)max_u + 1, sizeof(int));
    g->pred_start = calloc((size_t)n + 1, sizeof(int));
    g->pred = calloc((size_t)max_e + 1, sizeof(int));
    g->use_start = calloc((size_t)max_b + 1, sizeof(int));
    g->use = calloc((size_t)max_u + 1, sizeof(int));
    g->prod = calloc((size_t)max_b + 1, sizeof(int));
    g->size = calloc((size_t)max_b + 1, sizeof(size_t));
    g->cost = calloc((size_t)n + 1, sizeof(double));
    g->namebuf = calloc((size_t)n + 1, sizeof *g->namebuf);
    g->names = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) {
        snprintf(g->namebuf[i], sizeof g->namebuf[i], "n%d", i);
        g->names[i] = g->namebuf[i];
        g->cost[i] = 1e-3;
    }
}

static void gb_name(gb *g, int v, const char *name) { snprintf(g->namebuf[v], sizeof g->namebuf[v], "%s", name); }
static void gb_edge(gb *g, int u, int v) { g->eu[g->ne] = u; g->ev[g->ne++] = v; }
static int gb_buf(gb *g, int producer, size_t size)
{
    g->prod[g->nb] = producer;
    g->size[g->nb] = size;
    return g->nb++;
}
static void gb_read(gb *g, int b, int v) { g->bu_b[g->nu] = b; g->bu_v[g->nu++] = v; }

/* CSR arrays from the lists; returns the planner's input. */
static const bd_sched_input *gb_input(gb *g, double sync_cost)
{
    memset(g->pred_start, 0, ((size_t)g->n + 1) * sizeof(int));
    for (int k = 0; k < g->ne; k++) g->pred_start[g->ev[k] + 1]++;
    for (int i = 0; i < g->n; i++) g->pred_start[i + 1] += g->pred_start[i];
    int *fill = calloc((size_t)g->n + 1, sizeof(int));
    for (int i = 0; i < g->n; i++) fill[i] = g->pred_start[i];
    for (int k = 0; k < g->ne; k++) g->pred[fill[g->ev[k]]++] = g->eu[k];
    free(fill);
    memset(g->use_start, 0, ((size_t)g->nb + 1) * sizeof(int));
    for (int k = 0; k < g->nu; k++) g->use_start[g->bu_b[k] + 1]++;
    for (int b = 0; b < g->nb; b++) g->use_start[b + 1] += g->use_start[b];
    fill = calloc((size_t)g->nb + 1, sizeof(int));
    for (int b = 0; b < g->nb; b++) fill[b] = g->use_start[b];
    for (int k = 0; k < g->nu; k++) g->use[fill[g->bu_b[k]]++] = g->bu_v[k];
    free(fill);
    g->in = (bd_sched_input){.n_nodes = g->n, .pred_start = g->pred_start, .pred = g->pred, .cost = g->cost,
                             .sync_cost = sync_cost, .n_bufs = g->nb, .buf_size = g->size,
                             .buf_producer = g->prod, .use_start = g->use_start, .use = g->use,
                             .node_name = g->names};
    return &g->in;
}

static void gb_free(gb *g)
{
    free(g->eu), free(g->ev), free(g->bu_b), free(g->bu_v), free(g->pred_start), free(g->pred);
    free(g->use_start), free(g->use), free(g->prod), free(g->size), free(g->cost), free(g->namebuf);
    free(g->names);
}

/* ---- plan helpers -------------------------------------------------------------- */

/* Number of WAIT commands right before node v's launch. */
static int waits_before(const bd_plan *p, int v)
{
    int s = p->node_stream[v];
    for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++)
        if (p->cmds[c].kind == BD_CMD_LAUNCH && p->cmds[c].arg == v) {
            int k = 0;
            while (c - 1 - k >= p->stream_start[s] && p->cmds[c - 1 - k].kind == BD_CMD_WAIT) k++;
            return k;
        }
    return -1;
}

static int count_kind(const bd_plan *p, bd_cmd_kind kind)
{
    int k = 0;
    for (int c = 0; c < p->stream_start[p->n_streams]; c++) k += p->cmds[c].kind == kind;
    return k;
}

/* Fails the k-th allocation of build then verify, for every k until both
 * succeed: each failure must come back as OUT_OF_MEMORY (and leak nothing,
 * which the sanitizer build checks). Returns how many were injected; 0 in a
 * build without fault injection. */
static int fault_sweep(const bd_sched_input *in, int max_streams)
{
    int injected = 0, ok = 1;
    for (long k = 1; k < 10000; k++) {
        bd_plan p;
        bd_err e = {0};
        bd_fault_arm(k);
        braid_status st = bd_plan_build(in, max_streams, &p, &e);
        if (st == BRAID_OK) {
            st = bd_plan_verify(in, &p, &e);
            bd_plan_free(&p);
        }
        long counted = bd_fault_count();
        bd_fault_arm(0);
        if (st == BRAID_OK) break;
        injected++;
        ok &= st == BRAID_ERR_OUT_OF_MEMORY;
        if (counted == 0) break; /* no fault injection in this build */
    }
    CHECK(ok);
    return injected;
}

/* Structural properties checked apart from the verifier: every node launched
 * once, on the stream node_stream names, in increasing order per stream. */
static const char *plan_shape_error(const bd_sched_input *in, const bd_plan *p, int max_streams)
{
    if (p->n_streams < 1) return "no streams";
    if (max_streams > 0 && p->n_streams > max_streams) return "more streams than max_streams";
    if (max_streams == 1 && (p->n_streams != 1 || p->n_events != 0)) return "serial plan with events";
    if (p->arena_size > p->sum_bufs) return "arena larger than the sum of buffers";
    int *seen = calloc((size_t)in->n_nodes + 1, sizeof(int));
    const char *err = NULL;
    for (int s = 0; s < p->n_streams && !err; s++) {
        int last = -1;
        for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++) {
            if (p->cmds[c].kind != BD_CMD_LAUNCH) continue;
            int v = p->cmds[c].arg;
            if (v <= last) err = "launches out of node order";
            if (p->node_stream[v] != s) err = "node_stream disagrees with the launch";
            seen[v]++;
            last = v;
        }
    }
    for (int v = 0; v < in->n_nodes && !err; v++)
        if (seen[v] != 1) err = "a node not launched exactly once";
    free(seen);
    return err;
}

static unsigned rng_state;
static unsigned rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static double rndu(void) { return (rnd() & 0xffffff) / (double)0x1000000; }

/* ---- the tests ------------------------------------------------------------------- */

static void test_random_dags(void)
{
    const int caps[] = {0, 1, 2, 3, 4, 8};
    int plans = 0, bad = 0, multi = 0, total_events = 0, cross_edges = 0;
    size_t arena = 0, sum = 0;
    char first[1200] = "";
    for (int seed = 1; seed <= 1000; seed++) {
        rng_state = (unsigned)seed * 2654435761u;
        int n = 1 + (int)(rnd() % 60);
        double density = (const double[]){0.02, 0.08, 0.2, 0.5}[rnd() % 4];
        gb g;
        gb_init(&g, n, n * n + n, n, n * n);
        for (int v = 0; v < n; v++) {
            g.cost[v] = (rnd() % 4 == 0) ? 1e-7 : 1e-6 + 1e-3 * rndu();
            for (int u = 0; u < v; u++)
                if (rndu() < density) {
                    gb_edge(&g, u, v);
                    if (rnd() % 8 == 0) gb_edge(&g, u, v); /* a duplicate */
                }
        }
        /* Each node writes one buffer that its successors read. */
        for (int v = 0; v < n; v++) gb_buf(&g, v, (rnd() % 10 == 0) ? 0 : 1 + rnd() % 5000);
        for (int k = 0; k < g.ne; k++) {
            int dup = 0;
            for (int j = 0; j < g.nu; j++) dup |= g.bu_b[j] == g.eu[k] && g.bu_v[j] == g.ev[k];
            if (!dup) gb_read(&g, g.eu[k], g.ev[k]);
        }
        const bd_sched_input *in = gb_input(&g, (const double[]){0, 1e-5, 1e-4}[rnd() % 3]);
        if (seed % 3 == 0) g.in.node_name = NULL;
        for (int c = 0; c < 6; c++) {
            bd_plan p;
            bd_err e = {0};
            const char *why = NULL;
            braid_status st = bd_plan_build(in, caps[c], &p, &e);
            if (st != BRAID_OK) why = e.msg;
            else if (bd_plan_verify(in, &p, &e) != BRAID_OK) why = e.msg;
            else why = plan_shape_error(in, &p, caps[c]);
            if (why) {
                if (!bad++) snprintf(first, sizeof first, "seed %d n %d max_streams %d: %s", seed, n, caps[c], why);
            } else {
                plans++;
                multi += p.n_streams > 1;
                total_events += p.n_events;
                arena += p.arena_size;
                sum += p.sum_bufs;
                for (int k = 0; k < g.ne; k++) cross_edges += p.node_stream[g.eu[k]] != p.node_stream[g.ev[k]];
            }
            if (st == BRAID_OK) bd_plan_free(&p);
        }
        gb_free(&g);
    }
    if (bad) fprintf(stderr, "first bad plan: %s\n", first);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(plans, 6000);
    printf("random DAGs: %d plans verified (%d with several streams; %d events for %d cross-stream edges; arena %.1f%% of the buffers' sum)\n",
           plans, multi, total_events, cross_edges, sum ? 100.0 * (double)arena / (double)sum : 0.0);
}

/* conv_a and conv_b read a graph input; add reads both. */
static void test_two_convs(void)
{
    gb g;
    gb_init(&g, 3, 4, 3, 4);
    gb_name(&g, 0, "conv_a"), gb_name(&g, 1, "conv_b"), gb_name(&g, 2, "add");
    g.cost[0] = g.cost[1] = 2e-3, g.cost[2] = 1e-5;
    gb_edge(&g, 0, 2), gb_edge(&g, 1, 2);
    gb_read(&g, gb_buf(&g, 0, 4096), 2);
    gb_read(&g, gb_buf(&g, 1, 4096), 2);
    gb_buf(&g, 2, 4096);
    const bd_sched_input *in = gb_input(&g, 1e-5);
    bd_plan p;
    bd_err e = {0};
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 2);
    CHECK(p.node_stream[0] != p.node_stream[1]);
    CHECK_EQ_INT(waits_before(&p, 2), 1);
    CHECK_EQ_INT(p.n_events, 1);
    CHECK_EQ_INT(count_kind(&p, BD_CMD_WAIT), 1);
    /* conv outputs live at once; the Add's output may take neither. */
    CHECK_EQ_INT(p.arena_size, 3 * 4096);

    /* The text form names each stream on each line and ends with a summary. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bd_plan_print(f, in, &p);
    fclose(f);
    int ev = p.event_node[0] == 0 ? 0 : 1; /* the conv whose output is waited for */
    char line[64];
    snprintf(line, sizeof line, "stream %d: record e0", p.node_stream[ev]);
    CHECK_CONTAINS(text, line);
    snprintf(line, sizeof line, "stream %d: wait e0\nstream %d: launch add", p.node_stream[2], p.node_stream[2]);
    CHECK_CONTAINS(text, line);
    CHECK_CONTAINS(text, "streams 2, events 1, arena 12288 bytes (intermediates 12288 bytes)");
    printf("two convolutions into an Add:\n%s", text);
    free(text);

    /* Graphviz: coloured by stream, the event edge dashed and labelled. */
    const char *tmp = getenv("BRAID_TEST_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/test_sched_plan.dot", tmp ? tmp : ".");
    CHECK_EQ_INT(bd_plan_write_dot(path, in, &p, &e), BRAID_OK);
    f = fopen(path, "r");
    char dot[4096] = "";
    if (f) { dot[fread(dot, 1, sizeof dot - 1, f)] = 0; fclose(f); }
    CHECK_CONTAINS(dot, "digraph plan");
    CHECK_CONTAINS(dot, "fillcolor=\"#8dd3c7\"");
    CHECK_CONTAINS(dot, "fillcolor=\"#ffffb3\"");
    snprintf(line, sizeof line, "n%d -> n2 [style=dashed", ev);
    CHECK_CONTAINS(dot, line);
    CHECK_CONTAINS(dot, "label=\"e0\"");
    CHECK_CONTAINS(dot, "n0 -> n2;");
    CHECK_EQ_INT(bd_plan_write_dot("/nonexistent-dir/x.dot", in, &p, &e), BRAID_ERR_IO);
    bd_plan_free(&p);

    /* max_streams = 1: one stream, node order, no events. */
    CHECK_EQ_INT(bd_plan_build(in, 1, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 1);
    CHECK_EQ_INT(p.n_events, 0);
    CHECK_EQ_INT(p.stream_start[1], 3);
    for (int i = 0; i < 3; i++) CHECK(p.cmds[i].kind == BD_CMD_LAUNCH && p.cmds[i].arg == i);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    bd_plan_free(&p);
    gb_free(&g);
}

/* source -> four towers of 1, 2, 3 and 2 nodes -> concat. */
static void test_inception(void)
{
    gb g;
    gb_init(&g, 10, 20, 10, 20);
    const int first[4] = {1, 2, 4, 7}, len[4] = {1, 2, 3, 2};
    gb_name(&g, 0, "stem"), gb_name(&g, 9, "concat");
    g.cost[0] = 1e-4, g.cost[9] = 2e-5;
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < len[t]; k++) {
            int v = first[t] + k;
            g.cost[v] = 1e-3;
            gb_edge(&g, k ? v - 1 : 0, v);
            if (k == len[t] - 1) gb_edge(&g, v, 9);
        }
    for (int v = 0; v < 10; v++) gb_buf(&g, v, 1 << 16);
    for (int k = 0; k < g.ne; k++) gb_read(&g, g.eu[k], g.ev[k]);
    const bd_sched_input *in = gb_input(&g, 1e-5);
    bd_plan p;
    bd_err e = {0};
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 4);
    CHECK_EQ_INT(waits_before(&p, 9), 3);
    int towers_on[4] = {0};
    for (int t = 0; t < 4; t++) towers_on[p.node_stream[first[t]]]++;
    for (int s = 0; s < 4; s++) CHECK_EQ_INT(towers_on[s], 1);
    printf("allocation failures: %d injected in a 4-stream build\n", fault_sweep(in, 0));
    printf("inception block: %d streams, %d events, %d waits before concat, arena %zu of %zu bytes\n",
           p.n_streams, p.n_events, waits_before(&p, 9), p.arena_size, p.sum_bufs);
    bd_plan_free(&p);
    /* Capped at 2: two streams, still valid. */
    CHECK_EQ_INT(bd_plan_build(in, 2, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 2);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    bd_plan_free(&p);
    gb_free(&g);
}

/* A chain of tiny nodes with a tiny side branch: not worth an event. */
static void test_tiny_chain(void)
{
    gb g;
    gb_init(&g, 11, 12, 11, 12);
    for (int v = 0; v < 11; v++) g.cost[v] = 1e-7;
    for (int v = 1; v < 11; v++)
        if (v != 4 && v != 5) gb_edge(&g, v - 1, v);
    gb_edge(&g, 3, 4), gb_edge(&g, 3, 5), gb_edge(&g, 4, 8); /* side node 4: 3 -> 4 -> 8 */
    const bd_sched_input *in = gb_input(&g, 1e-5);
    bd_plan p;
    bd_err e = {0};
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 1);
    CHECK_EQ_INT(p.n_events, 0);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    bd_plan_free(&p);
    /* The same graph with heavy nodes keeps the branch on its own stream. */
    for (int v = 0; v < 11; v++) g.cost[v] = 1e-3;
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 2);
    CHECK_EQ_INT(p.n_events, 2);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    bd_plan_free(&p);
    gb_free(&g);
}

/* x then y on one stream (y reads x's buffer last), z on another, same size as
 * x's buffer. By serial lifetimes z could reuse x's bytes: a race. */
static void test_race_and_broken_plans(void)
{
    gb g;
    gb_init(&g, 3, 2, 3, 2);
    gb_name(&g, 0, "x"), gb_name(&g, 1, "y"), gb_name(&g, 2, "z");
    gb_edge(&g, 0, 1);
    gb_read(&g, gb_buf(&g, 0, 1024), 1);
    gb_buf(&g, 1, 4096);
    gb_buf(&g, 2, 1024);
    const bd_sched_input *in = gb_input(&g, 1e-5);
    bd_plan p;
    bd_err e = {0};
    CHECK_EQ_INT(bd_plan_build(in, 1, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.arena_size, 5120); /* serial: z reuses freed bytes, safely */
    CHECK(p.arena_size < p.sum_bufs);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    bd_plan_free(&p);

    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 2);
    CHECK(p.node_stream[2] != p.node_stream[0]);
    CHECK(p.buf_offset[2] + 1024 <= p.buf_offset[0] || p.buf_offset[0] + 1024 <= p.buf_offset[2]);
    CHECK_EQ_INT(p.arena_size, 6144);
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
    size_t keep = p.buf_offset[2];
    p.buf_offset[2] = p.buf_offset[0];
    CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "share bytes");
    CHECK_CONTAINS(e.msg, "'x' and 'z'");
    printf("race: %s\n", e.msg);
    p.buf_offset[2] = keep;
    bd_plan_free(&p);
    gb_free(&g);

    /* Hand-made plans on conv_a, conv_b -> add. */
    gb_init(&g, 3, 2, 3, 2);
    gb_name(&g, 0, "conv_a"), gb_name(&g, 1, "conv_b"), gb_name(&g, 2, "add");
    gb_edge(&g, 0, 2), gb_edge(&g, 1, 2);
    gb_read(&g, gb_buf(&g, 0, 256), 2);
    gb_read(&g, gb_buf(&g, 1, 256), 2);
    gb_buf(&g, 2, 256);
    in = gb_input(&g, 1e-5);
    int node_stream[3] = {0, 1, 0}, event_node[2] = {1, 0};
    size_t offs[3] = {0, 256, 512};
    bd_cmd cmds[8];
    int starts[3];
    bd_plan h = {.n_streams = 2, .stream_start = starts, .cmds = cmds, .node_stream = node_stream,
                 .n_events = 1, .event_node = event_node, .buf_offset = offs, .arena_size = 768, .sum_bufs = 768};
#define PLAN(s0, n0, s1, n1)                                                                        \
    do {                                                                                            \
        const bd_cmd *a_ = s0, *b_ = s1;                                                          \
        memcpy(cmds, a_, sizeof(bd_cmd) * (n0));                                                    \
        memcpy(cmds + (n0), b_, sizeof(bd_cmd) * (n1));                                             \
        starts[0] = 0, starts[1] = (n0), starts[2] = (n0) + (n1);                                   \
    } while (0)
#define L(v) {BD_CMD_LAUNCH, v}
#define R(ev) {BD_CMD_RECORD, ev}
#define W(ev) {BD_CMD_WAIT, ev}
    /* The right plan is accepted. */
    PLAN(((bd_cmd[]){L(0), W(0), L(2)}), 3, ((bd_cmd[]){L(1), R(0)}), 2);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_OK);
    /* A missing wait. */
    PLAN(((bd_cmd[]){L(0), L(2)}), 2, ((bd_cmd[]){L(1), R(0)}), 2);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "node 'add' reads the output of node 'conv_b' on stream 1 with no ordering (stream 0 never waits for it)");
    printf("missing wait: %s\n", e.msg);
    /* A wait placed after the launch it should guard. */
    PLAN(((bd_cmd[]){L(0), L(2), W(0)}), 3, ((bd_cmd[]){L(1), R(0)}), 2);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "only after");
    /* A wait with no record. */
    PLAN(((bd_cmd[]){L(0), W(0), L(2)}), 3, ((bd_cmd[]){L(1)}), 1);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "never recorded");
    printf("wait without record: %s\n", e.msg);
    /* A deadlock: each stream waits on the other's later record. */
    h.n_events = 2;
    PLAN(((bd_cmd[]){W(0), L(0), R(1), L(2)}), 4, ((bd_cmd[]){W(1), L(1), R(0)}), 3);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "deadlock");
    printf("two-way wait: %s\n", e.msg);
    h.n_events = 1;
    /* A node launched twice, and one never launched. */
    PLAN(((bd_cmd[]){L(0), W(0), L(2), L(0)}), 4, ((bd_cmd[]){L(1), R(0)}), 2);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "launched twice");
    PLAN(((bd_cmd[]){L(0)}), 1, ((bd_cmd[]){L(1), R(0)}), 2);
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "'add' is never launched");
    /* Buffers of conv_a and add may not share bytes: add reads conv_a's. */
    PLAN(((bd_cmd[]){L(0), W(0), L(2)}), 3, ((bd_cmd[]){L(1), R(0)}), 2);
    offs[2] = 0;
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "buffers of 'conv_a' and 'add' share bytes [0, 256) but 'add' is written while 'conv_a' may still be read");
    offs[2] = 100;
    CHECK_EQ_INT(bd_plan_verify(in, &h, &e), BRAID_ERR_INTERNAL);
    CHECK_CONTAINS(e.msg, "not a multiple of 256");
    offs[2] = 512;
#undef PLAN
#undef L
#undef R
#undef W
    gb_free(&g);
}

static void test_memory_and_inputs(void)
{
    /* A chain of 50 equal buffers in one stream needs two of them. */
    gb g;
    gb_init(&g, 50, 50, 50, 50);
    for (int v = 0; v < 50; v++) {
        int b = gb_buf(&g, v, 1000);
        if (v + 1 < 50) gb_edge(&g, v, v + 1), gb_read(&g, b, v + 1);
    }
    const bd_sched_input *in = gb_input(&g, 1e-5);
    bd_plan p;
    bd_err e = {0};
    for (int cap = 0; cap <= 1; cap++) {
        CHECK_EQ_INT(bd_plan_build(in, cap, &p, &e), BRAID_OK);
        CHECK(p.arena_size <= 2 * 1024);
        CHECK_EQ_INT(p.sum_bufs, 50 * 1024);
        CHECK_EQ_INT(p.n_streams, 1);
        CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
        bd_plan_free(&p);
    }
    /* Bad inputs: a predecessor that is not earlier, a reader before its producer. */
    g.pred[0] = 5;
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "topological order");
    g.pred[0] = 0;
    CHECK_EQ_INT(bd_plan_build(in, -1, &p, &e), BRAID_ERR_INVALID_ARGUMENT);
    g.use[0] = 0;
    CHECK_EQ_INT(bd_plan_build(in, 0, &p, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "not a later node");
    g.use[0] = 1;
    /* Allocation failures anywhere in build come back as OUT_OF_MEMORY. */
    int injected = fault_sweep(in, 1);
    printf("allocation failures: %d injected in a serial build\n", injected);
    gb_free(&g);
    /* An empty graph: one empty stream. */
    bd_sched_input empty = {0};
    CHECK_EQ_INT(bd_plan_build(&empty, 0, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p.n_streams, 1);
    CHECK_EQ_INT(bd_plan_verify(&empty, &p, &e), BRAID_OK);
    bd_plan_free(&p);
}

/* Planning time on 2000-node graphs (printed, not asserted). */
static void time_big(const char *what, int chain_like)
{
    const int n = 2000;
    gb g;
    gb_init(&g, n, 4 * n, n, 4 * n);
    rng_state = 12345;
    for (int v = 1; v < n; v++) {
        if (chain_like) {
            /* A chain with residual skips; every 50 nodes a node that
             * branches off three back and joins at the next node. */
            if (v % 50 == 7) gb_edge(&g, v - 3, v);
            else {
                gb_edge(&g, v - 1, v);
                if (v % 50 == 8) gb_edge(&g, v - 2, v);
                if (v % 2 == 0 && v >= 2) gb_edge(&g, v - 2, v);
            }
        } else {
            int k = (int)(rnd() % 4);
            for (int j = 0; j < k; j++) gb_edge(&g, (int)(rnd() % (unsigned)v), v);
        }
        g.cost[v] = 1e-4 + 1e-4 * rndu();
    }
    for (int v = 0; v < n; v++) gb_buf(&g, v, 1024 + 64 * (rnd() % 256));
    for (int k = 0; k < g.ne; k++) gb_read(&g, g.eu[k], g.ev[k]);
    const bd_sched_input *in = gb_input(&g, 1e-5);
    const int caps[3] = {0, 4, 1};
    for (int c = 0; c < 3; c++) {
        bd_plan p;
        bd_err e = {0};
        double t0 = bd_now();
        braid_status st = bd_plan_build(in, caps[c], &p, &e);
        double t1 = bd_now();
        CHECK_EQ_INT(st, BRAID_OK);
        if (st) continue;
        CHECK_EQ_INT(bd_plan_verify(in, &p, &e), BRAID_OK);
        double t2 = bd_now();
        CHECK(plan_shape_error(in, &p, caps[c]) == NULL);
        printf("%s, %d nodes, max_streams %d: build %.1f ms, verify %.1f ms; %d streams, %d events, arena %.2f MB of %.2f MB\n",
               what, n, caps[c], 1e3 * (t1 - t0), 1e3 * (t2 - t1), p.n_streams, p.n_events,
               (double)p.arena_size / 1048576.0, (double)p.sum_bufs / 1048576.0);
        bd_plan_free(&p);
    }
    gb_free(&g);
}

int main(void)
{
    test_two_convs();
    test_inception();
    test_tiny_chain();
    test_race_and_broken_plans();
    test_memory_and_inputs();
    test_random_dags();
    time_big("chain-like graph", 1);
    time_big("wide random DAG", 0);
    return check_done();
}
