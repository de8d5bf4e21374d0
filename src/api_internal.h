/* api_internal.h: in-tree access to what the public handles hide, for the
 * command line and the tests (never installed). */
#ifndef BD_API_INTERNAL_H
#define BD_API_INTERNAL_H

#include "braid.h"
#include "graph/ir.h"

const bd_graph *bd_model_graph(const braid_model *m);

#endif
