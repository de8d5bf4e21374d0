/* api_internal.h: in-tree access to what the public handles hide, for the
 * command line and the tests (never installed). */
#ifndef BD_API_INTERNAL_H
#define BD_API_INTERNAL_H

#include "braid.h"
#include "ir/ir.h"

const bd_graph *bd_model_graph(const braid_model *m);

/* The plan a run of s with these inputs uses (made and cached if needed);
 * owned by the session. */
struct bd_prepared;
struct bd_err;
braid_status bd_session_plan(braid_session *s, const braid_tensor *inputs, const struct bd_prepared **out,
                             struct bd_err *e);
/* The same, then one run with these inputs, so that every later stage and
 * nested plan the run needs exists (*out is set even when the run fails). */
braid_status bd_session_plan_run(braid_session *s, const braid_tensor *inputs, const struct bd_prepared **out,
                                 struct bd_err *e);

/* The device time of s's last run in ms (its first plan's, between events
 * around the plan's work: bd_graph_report.device_ms); < 0 when the backend
 * has no device or did not time it. */
double bd_session_device_ms(braid_session *s);

/* The session's device memory bandwidth in bytes/s (0 on the CPU). */
double bd_session_mem_bandwidth(const braid_session *s);

#endif
