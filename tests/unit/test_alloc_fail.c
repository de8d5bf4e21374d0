/* test_alloc_fail.c: in a BRAID_FAULT_INJECTION build, makes the n-th
 * allocation fail for every n through a whole model load, session creation,
 * run and destruction, for the inception model, the residual one (whose plan
 * folds Adds into Convs), the affine one (whose load folds Mul, Add and
 * BatchNormalization into Conv weights), the if_branches one (an If whose
 * branches run as nested plans) and the loop one (a Loop's nested plans, a
 * scan output allocated at run time and a second stage that reads it): each
 * must end with an error status and a message (or
 * succeed, past the last allocation) and leave no allocation behind. Other
 * builds report the test as skipped (exit 77). Every failure must surface:
 * braid has no allocation whose loss it silently works around. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/common.h"

typedef struct model_case {
    const char *name;
    int64_t dims[4]; /* of the one input */
    int n_out;
} model_case;

static const model_case cases[] = {{"inception", {1, 64, 28, 28}, 1}, {"residual", {2, 16, 32, 32}, 2},
                                   {"affine", {2, 8, 16, 16}, 1},   {"if_branches", {1, 16, 32, 32}, 1},
                                   {"loop", {1, 16, 32, 32}, 2}};
static const model_case *cur;
static void *model_bytes;
static size_t model_size;
static float input[1 * 64 * 28 * 28];

/* One whole cycle; returns its status and copies the message into msg. */
static braid_status cycle(char *msg, size_t n)
{
    braid_model *m = NULL;
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_status st = braid_model_load_memory(model_bytes, model_size, NULL, &m);
    if (st) { snprintf(msg, n, "%s", braid_last_error()); goto done; }
    if ((st = braid_options_create(&o)) || (st = braid_options_set_backend(o, BRAID_BACKEND_CPU)) ||
        (st = braid_options_set_max_streams(o, 0))) { snprintf(msg, n, "%s", braid_last_error()); goto done; }
    if ((st = braid_session_create(m, o, &s))) { snprintf(msg, n, "%s", braid_last_error()); goto done; }
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .data = input};
    memcpy(in.dims, cur->dims, sizeof cur->dims);
    braid_tensor out[2] = {{0}};
    if ((st = braid_session_run(s, 1, &in, cur->n_out, out))) { snprintf(msg, n, "%s", braid_session_error(s)); goto done; }
done:
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    return st;
}

int main(void)
{
    if (!BD_FAULT_INJECTION_BUILD) {
        printf("SKIPPED: this build has no BRAID_FAULT_INJECTION (scripts/test --sanitize has it)\n");
        return 77;
    }
    char path[4096], msg[1200];
    for (size_t i = 0; i < sizeof input / sizeof *input; i++) input[i] = (float)(i % 13) / 13.0f;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        cur = &cases[c];
        snprintf(path, sizeof path, "%s/models/gen/%s/model.onnx", getenv("BRAID_SOURCE_DIR"), cur->name);
        bd_err e = {0};
        if (bd_read_file(path, &model_bytes, &model_size, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
        long base = bd_alloc_live();
        bd_fault_arm(-1); /* count only */
        CHECK_EQ_INT(cycle(msg, sizeof msg), BRAID_OK);
        long total = bd_fault_count();
        CHECK_EQ_INT(bd_alloc_live(), base);
        int failed_cleanly = 0, leaks = 0, silent = 0;
        for (long n = 1; n <= total; n++) {
            msg[0] = 0;
            bd_fault_arm(n);
            braid_status st = cycle(msg, sizeof msg);
            bd_fault_arm(0);
            if (bd_alloc_live() != base) {
                if (leaks++ < 5) fprintf(stderr, "%s: allocation %ld: %ld allocations leaked (%s)\n", cur->name, n,
                                         bd_alloc_live() - base, msg);
                base = bd_alloc_live();
            }
            if (st != BRAID_OK) {
                failed_cleanly++;
                if (!msg[0] && silent++ < 5) fprintf(stderr, "%s: allocation %ld: status %d with no message\n", cur->name, n, st);
            }
        }
        CHECK_EQ_INT(leaks, 0);
        CHECK_EQ_INT(silent, 0);
        CHECK_EQ_INT(failed_cleanly, total); /* no allocation is optional: each failure is reported */
        printf("%s: allocation failures: %ld points in a load+create+run+destroy cycle, %d returned an error, %d leaks\n",
               cur->name, total, failed_cleanly, leaks);
        bd_free(model_bytes);
    }
    return check_done();
}
