/* plan.c: bd_plan_build runs the planner's steps in order (input check,
 * DAG, streams, events, memory) and bd_plan_free releases a plan. */
#include <string.h>

#include "sched_int.h"

braid_status bd_plan_build(const bd_sched_input *in, int max_streams, bd_plan *out, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_dag dag = {0};
    int have_dag = 0, *pos = NULL, *clock = NULL;
    if (!out) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan output is NULL");
    memset(out, 0, sizeof *out);
    BD_TRY(bd_sched_check_input(in, e));
    if (max_streams < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "max_streams is %d; use 0 (automatic) or a positive count", max_streams);
        goto fail;
    }
    const int n = in->n_nodes;
    out->node_stream = bd_calloc((size_t)n + 1, sizeof *out->node_stream);
    BD_CHECK_ALLOC(e, out->node_stream);
    if (max_streams == 1 || n <= 1) {
        out->n_streams = 1; /* the serial plan: node order, no events */
    } else {
        BD_TRY(bd_dag_build(in, &dag, e));
        have_dag = 1;
        BD_TRY(bd_streams_assign(in, &dag, max_streams, out->node_stream, &out->n_streams, e));
    }
    BD_TRY(bd_events_build(in, have_dag ? &dag : NULL, out, &pos, &clock, e));
    BD_TRY(bd_memplan(in, out, pos, clock, e));
fail:
    if (have_dag) bd_dag_free(&dag);
    bd_free(pos);
    bd_free(clock);
    if (st != BRAID_OK) bd_plan_free(out);
    return st;
}

void bd_plan_free(bd_plan *p)
{
    if (!p) return;
    bd_free(p->stream_start);
    bd_free(p->cmds);
    bd_free(p->node_stream);
    bd_free(p->event_node);
    bd_free(p->buf_offset);
    memset(p, 0, sizeof *p);
}
