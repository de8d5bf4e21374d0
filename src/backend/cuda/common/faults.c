/* faults.c: the texts of CUDA faults as braid reports them, and the
 * BRAID_CUDA_SYNC switch (faults.h). Plain C, no CUDA: the CPU tests run it. */
#include "backend/cuda/common/faults.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int bd_cuda_sync_enabled(const char *v)
{
    if (!v) return 0;
    return !strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true");
}

const char *bd_cu_call_name(const char *expr, char *buf, size_t n)
{
    if (!n) return buf;
    if (!expr) expr = "";
    while (isspace((unsigned char)*expr)) expr++;
    size_t len = 0;
    while (expr[len] && (isalnum((unsigned char)expr[len]) || expr[len] == '_')) len++;
    const char *p = expr + len;
    while (isspace((unsigned char)*p)) p++;
    if (len == 0 || *p != '(') len = strlen(expr); /* not NAME(...): the whole text */
    if (len >= n) len = n - 1;
    memcpy(buf, expr, len);
    buf[len] = '\0';
    return buf;
}

void bd_cu_call_text(char *buf, size_t n, const char *expr, const char *err)
{
    char name[160];
    snprintf(buf, n, "%s: %s", bd_cu_call_name(expr, name, sizeof name), err);
}

void bd_cu_node_prefix(char *buf, size_t n, const char *node, const char *op, int stream)
{
    snprintf(buf, n, "node '%s' (%s) on stream %d: ", node, op, stream);
}

void bd_cu_earlier_prefix(char *buf, size_t n, const char *node, const char *op, int stream)
{
    snprintf(buf, n, "an asynchronous CUDA error from earlier work surfaced while node '%s' (%s) on stream %d "
             "was enqueued (that node did not necessarily cause it; rerun with " BD_CUDA_SYNC_ENV "=1 to find the "
             "node that did): ", node, op, stream);
}

void bd_cu_async_text(char *buf, size_t n, const char *call, const char *err, int sticky)
{
    snprintf(buf, n, "the run ended with an asynchronous CUDA error (%s: %s): any node of the run may have "
             "caused it; rerun with " BD_CUDA_SYNC_ENV "=1 to name the node%s", call, err,
             sticky ? ". The CUDA context is now unusable: every later CUDA call of this process fails; restart it"
                    : "");
}
