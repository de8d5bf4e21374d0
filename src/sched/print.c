/* print.c: a plan as text (per stream, one command a line, then a summary)
 * and as Graphviz (nodes coloured by stream, data edges solid, event edges
 * dashed and labelled with the event). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sched_int.h"

void bd_plan_print(FILE *f, const bd_sched_input *in, const bd_plan *p)
{
    char nb[32];
    if (!f || !p) return;
    for (int s = 0; s < p->n_streams; s++)
        for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++) {
            bd_cmd cmd = p->cmds[c];
            if (cmd.kind == BD_CMD_LAUNCH) fprintf(f, "stream %d: launch %s\n", s, bd_sched_node_name(in, cmd.arg, nb, sizeof nb));
            else fprintf(f, "stream %d: %s e%d\n", s, cmd.kind == BD_CMD_WAIT ? "wait" : "record", cmd.arg);
        }
    fprintf(f, "streams %d, events %d, arena %zu bytes (intermediates %zu bytes)\n", p->n_streams, p->n_events,
            p->arena_size, p->sum_bufs);
}

/* A double-quoted Graphviz string. */
static void dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if (*s == '\n') { fputs("\\n", f); continue; }
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *const palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                      "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
#define PALETTE_N ((int)(sizeof palette / sizeof palette[0]))

braid_status bd_plan_write_dot(const char *path, const bd_sched_input *in, const bd_plan *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    char nb[32];
    FILE *f = NULL;
    int *mark = NULL, *pending = NULL;
    if (!path || !in || !p) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan, input or path is NULL");
    const int n = in->n_nodes;
    mark = bd_malloc(((size_t)n + 1) * sizeof *mark);
    pending = bd_malloc(((size_t)p->n_events + 1) * sizeof *pending);
    BD_CHECK_ALLOC(e, mark);
    BD_CHECK_ALLOC(e, pending);
    f = fopen(path, "w");
    if (!f) {
        st = BD_FAIL(e, BRAID_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        goto fail;
    }
    fprintf(f, "digraph plan {\n  label=\"streams %d, events %d, arena %zu bytes (intermediates %zu bytes)\";\n",
            p->n_streams, p->n_events, p->arena_size, p->sum_bufs);
    fprintf(f, "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\"];\n");
    for (int v = 0; v < n; v++) {
        int s = p->node_stream[v];
        char label[160];
        snprintf(label, sizeof label, "%s\nstream %d", bd_sched_node_name(in, v, nb, sizeof nb), s);
        fprintf(f, "  n%d [label=", v);
        dot_str(f, label);
        fprintf(f, ", fillcolor=\"%s\"];\n", palette[s % PALETTE_N]);
    }
    /* Data edges, once each: predecessors and buffer producers. */
    for (int v = 0; v < n; v++) mark[v] = -1;
    for (int v = 0; v < n; v++)
        for (int k = in->pred_start[v]; k < in->pred_start[v + 1]; k++)
            if (mark[in->pred[k]] != v) { mark[in->pred[k]] = v; fprintf(f, "  n%d -> n%d;\n", in->pred[k], v); }
    for (int b = 0; b < in->n_bufs; b++)
        for (int k = in->use_start[b]; k < in->use_start[b + 1]; k++) {
            int u = in->buf_producer[b], v = in->use[k];
            int dup = 0;
            for (int j = in->pred_start[v]; j < in->pred_start[v + 1]; j++) dup |= in->pred[j] == u;
            if (!dup) fprintf(f, "  n%d -> n%d;\n", u, v);
        }
    /* Event edges: the waits before a launch join their producers to it. */
    for (int s = 0; s < p->n_streams; s++) {
        int np = 0;
        for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++) {
            bd_cmd cmd = p->cmds[c];
            if (cmd.kind == BD_CMD_WAIT) pending[np++ % (p->n_events + 1)] = cmd.arg;
            if (cmd.kind != BD_CMD_LAUNCH) continue;
            for (int k = 0; k < np && k <= p->n_events; k++)
                fprintf(f, "  n%d -> n%d [style=dashed, color=\"#555555\", label=\"e%d\"];\n",
                        p->event_node[pending[k]], cmd.arg, pending[k]);
            np = 0;
        }
    }
    fprintf(f, "}\n");
    if (ferror(f)) st = BD_FAIL(e, BRAID_ERR_IO, "cannot write '%s'", path);
fail:
    if (f && fclose(f) != 0 && st == BRAID_OK) st = BD_FAIL(e, BRAID_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    bd_free(mark);
    bd_free(pending);
    return st;
}
