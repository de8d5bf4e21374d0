/* ir.c: ownership of the IR (values, nodes, attributes), value lookup,
 * topological ordering with cycle detection, and typed attribute access. */
#include "ir/ir.h"

#include <string.h>

void bd_attr_free(bd_attr *a)
{
    if (!a) return;
    bd_free(a->name);
    bd_free(a->s);
    bd_free(a->floats);
    bd_free(a->ints);
    for (int i = 0; a->strings && i < a->n; i++) bd_free(a->strings[i]);
    bd_free(a->strings);
    if (a->t) bd_free(a->t->data);
    bd_free(a->t);
    if (a->g) bd_graph_free(a->g);
    bd_free(a->g);
}

void bd_node_free(bd_node *n)
{
    bd_free(n->name);
    bd_free(n->op_type);
    bd_free(n->domain);
    bd_free(n->in);
    bd_free(n->out);
    for (int i = 0; i < n->n_attrs; i++) bd_attr_free(&n->attrs[i]);
    bd_free(n->attrs);
    bd_free(n->params);
}

void bd_graph_free(bd_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_values; i++) {
        bd_value *v = &g->values[i];
        bd_free(v->name);
        bd_free(v->data);
        for (int d = 0; d < BD_MAX_RANK; d++) bd_free(v->dim_param[d]);
    }
    bd_free(g->values);
    for (int i = 0; i < g->n_nodes; i++) bd_node_free(&g->nodes[i]);
    bd_free(g->nodes);
    bd_free(g->inputs);
    bd_free(g->outputs);
    bd_free(g->input_shapes);
    for (int i = 0; i < g->n_opsets; i++) bd_free(g->opsets[i].domain);
    bd_free(g->opsets);
    bd_free(g->name);
    memset(g, 0, sizeof *g);
}

int bd_graph_find_value(const bd_graph *g, const char *name)
{
    /* Linear; the loader keeps its own hash for big graphs. */
    for (int i = g->n_values - 1; i >= 0; i--)
        if (strcmp(g->values[i].name, name) == 0) return i;
    return -1;
}

int bd_graph_add_value(bd_graph *g, const char *name)
{
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? 2 * g->cap_values : 64;
        bd_value *v = bd_realloc(g->values, (size_t)cap * sizeof *v);
        if (!v) return -1;
        g->values = v;
        g->cap_values = cap;
    }
    bd_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = bd_strdup(name);
    if (!v->name) return -1;
    v->rank = -1;
    v->producer = -1;
    for (int d = 0; d < BD_MAX_RANK; d++) v->dims[d] = -1;
    return g->n_values++;
}

braid_status bd_graph_toposort(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    int n = g->n_nodes;
    int *producer = bd_malloc((size_t)(g->n_values ? g->n_values : 1) * sizeof *producer);
    int *indeg = bd_calloc((size_t)n + 1, sizeof *indeg);
    int *order = bd_malloc(((size_t)n + 1) * sizeof *order);
    int *done = bd_calloc((size_t)n + 1, sizeof *done);
    bd_node *sorted = bd_malloc(((size_t)n + 1) * sizeof *sorted);
    BD_CHECK_ALLOC(e, producer && indeg && order && done && sorted);
    for (int v = 0; v < g->n_values; v++) producer[v] = -1;
    for (int i = 0; i < n; i++)
        for (int o = 0; o < g->nodes[i].n_out; o++) {
            int v = g->nodes[i].out[o];
            if (v < 0) continue;
            if (producer[v] >= 0 || (g->values[v].flags & (BD_VAL_CONST | BD_VAL_INPUT))) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                             "node '%s' (%s): output '%s' is already produced elsewhere",
                             g->nodes[i].name, g->nodes[i].op_type, g->values[v].name);
                goto fail;
            }
            producer[v] = i;
        }
    for (int i = 0; i < n; i++) {
        const bd_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in; k++) {
            int v = nd->in[k];
            if (v < 0) continue;
            if (producer[v] >= 0) indeg[i]++;
            else if (!(g->values[v].flags & (BD_VAL_CONST | BD_VAL_INPUT))) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                             "node '%s' (%s): input '%s' is not a graph input, an initializer "
                             "or the output of any node",
                             nd->name, nd->op_type, g->values[v].name);
                goto fail;
            }
        }
    }
    /* Kahn's algorithm, stable: among ready nodes, the earliest in file order. */
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0) order[tail++] = i;
    while (head < tail) {
        int i = order[head++];
        done[i] = 1;
        for (int o = 0; o < g->nodes[i].n_out; o++) {
            int v = g->nodes[i].out[o];
            if (v < 0) continue;
            for (int j = 0; j < n; j++) {
                const bd_node *c = &g->nodes[j];
                for (int k = 0; k < c->n_in; k++)
                    if (c->in[k] == v && --indeg[j] == 0) order[tail++] = j;
            }
        }
    }
    if (tail < n) {
        int bad = 0;
        while (done[bad]) bad++;
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (%s): the graph has a cycle through this node",
                     g->nodes[bad].name, g->nodes[bad].op_type);
        goto fail;
    }
    for (int i = 0; i < n; i++) sorted[i] = g->nodes[order[i]];
    if (n > 0) memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted); /* a subgraph may have no nodes */
    for (int v = 0; v < g->n_values; v++) g->values[v].producer = -1;
    for (int i = 0; i < n; i++)
        for (int o = 0; o < g->nodes[i].n_out; o++)
            if (g->nodes[i].out[o] >= 0) g->values[g->nodes[i].out[o]].producer = i;
fail:
    bd_free(producer);
    bd_free(indeg);
    bd_free(order);
    bd_free(done);
    bd_free(sorted);
    return st;
}

const bd_attr *bd_node_attr(const bd_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

static braid_status wrong_type(const char *name, const char *want, bd_err *e)
{
    return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be %s", name, want);
}

braid_status bd_attr_int(const bd_node *n, const char *name, int64_t def, int64_t *out, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    if (!a) { *out = def; return BRAID_OK; }
    if (a->type != BD_ATTR_INT) return wrong_type(name, "an int", e);
    *out = a->i;
    return BRAID_OK;
}

braid_status bd_attr_float(const bd_node *n, const char *name, float def, float *out, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    if (!a) { *out = def; return BRAID_OK; }
    if (a->type == BD_ATTR_INT) { *out = (float)a->i; return BRAID_OK; }
    if (a->type != BD_ATTR_FLOAT) return wrong_type(name, "a float", e);
    *out = a->f;
    return BRAID_OK;
}

braid_status bd_attr_string(const bd_node *n, const char *name, const char *def, const char **out,
                            bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    if (!a) { *out = def; return BRAID_OK; }
    if (a->type != BD_ATTR_STRING) return wrong_type(name, "a string", e);
    *out = a->s;
    return BRAID_OK;
}

braid_status bd_attr_ints(const bd_node *n, const char *name, int64_t *out, int max, int *count,
                          bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    *count = 0;
    if (!a) return BRAID_OK;
    if (a->type != BD_ATTR_INTS) return wrong_type(name, "a list of ints", e);
    if (a->n > max)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has %d values, at most %d allowed",
                       name, a->n, max);
    if (a->n) memcpy(out, a->ints, (size_t)a->n * sizeof *out);
    *count = a->n;
    return BRAID_OK;
}

braid_status bd_attr_floats(const bd_node *n, const char *name, float *out, int max, int *count,
                            bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    *count = 0;
    if (!a) return BRAID_OK;
    if (a->type != BD_ATTR_FLOATS) return wrong_type(name, "a list of floats", e);
    if (a->n > max)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has %d values, at most %d allowed",
                       name, a->n, max);
    if (a->n) memcpy(out, a->floats, (size_t)a->n * sizeof *out);
    *count = a->n;
    return BRAID_OK;
}
