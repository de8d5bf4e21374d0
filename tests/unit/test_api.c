/* test_api.c: the public API as an embedding program sees it: discovery of
 * inputs and outputs (symbolic dims by name), argument errors with their
 * status and text, per-session and per-thread error messages, host-shared
 * input buffers, and many threads running one session at once (runs are
 * serialized by the session: every thread must get the serial result). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"
#include "check.h"

#define THREADS 8
#define RUNS 10

static braid_session *shared;
static float input[2 * 16 * 32 * 32];
static float *expected;
static size_t out_elems;
static int thread_mismatch, thread_errors;

static void *worker(void *arg)
{
    (void)arg;
    float *mine = malloc(out_elems * sizeof(float));
    for (int r = 0; r < RUNS; r++) {
        braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {2, 16, 32, 32}, .data = input};
        /* The thread's own output buffer: the copy happens inside the run. */
        braid_tensor out = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {2, 32, 32, 32}, .data = mine};
        if (braid_session_run_into(shared, 1, &in, 1, &out) != BRAID_OK) __atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
        else if (memcmp(mine, expected, out_elems * sizeof(float)) != 0) __atomic_add_fetch(&thread_mismatch, 1, __ATOMIC_RELAXED);
    }
    free(mine);
    return NULL;
}

static void *error_thread(void *arg)
{
    braid_model *m = NULL;
    braid_model_load_file((const char *)arg, &m);
    return strstr(braid_last_error(), "cannot open") ? arg : NULL;
}

int main(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", getenv("BRAID_SOURCE_DIR"));
    for (size_t i = 0; i < sizeof input / sizeof *input; i++) input[i] = (float)((i * 7919) % 1000) / 1000.0f;

    CHECK(strcmp(braid_version(), "0.1.0") == 0);
    CHECK(strcmp(braid_status_name(BRAID_ERR_SHAPE), "shape error") == 0);
    CHECK(strcmp(braid_dtype_name(BRAID_DTYPE_INT64), "int64") == 0);
    braid_model_destroy(NULL); /* every destroy accepts NULL */
    braid_session_destroy(NULL);
    braid_options_destroy(NULL);

    braid_model *m = NULL;
    CHECK_EQ_INT(braid_model_load_file(NULL, &m), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(braid_model_load_file("/nonexistent/model.onnx", &m), BRAID_ERR_IO);
    CHECK_CONTAINS(braid_last_error(), "cannot open '/nonexistent/model.onnx'");
    CHECK_EQ_INT(braid_model_load_memory("garbage!", 8, NULL, &m), BRAID_ERR_PARSE);
    CHECK(m == NULL);

    /* Per-thread error text: another thread's failure does not touch ours. */
    pthread_t et;
    void *saw = NULL;
    pthread_create(&et, NULL, error_thread, "/other/thread.onnx");
    pthread_join(et, &saw);
    CHECK(saw != NULL);
    CHECK_CONTAINS(braid_last_error(), "not a valid ONNX protobuf");

    CHECK_EQ_INT(braid_model_load_file(path, &m), BRAID_OK);
    CHECK_EQ_INT(braid_model_input_count(m), 1);
    CHECK_EQ_INT(braid_model_output_count(m), 1);
    braid_value_info vi;
    CHECK_EQ_INT(braid_model_input_info(m, 0, &vi), BRAID_OK);
    CHECK(strcmp(vi.name, "x") == 0);
    CHECK_EQ_INT(vi.dtype, BRAID_DTYPE_FLOAT);
    CHECK_EQ_INT(vi.rank, 4);
    CHECK_EQ_INT(vi.dims[0], -1);
    CHECK(vi.dim_names[0] && strcmp(vi.dim_names[0], "N") == 0);
    CHECK_EQ_INT(vi.dims[1], 16);
    CHECK_EQ_INT(braid_model_input_info(m, 1, &vi), BRAID_ERR_INVALID_ARGUMENT);

    braid_options *o = NULL;
    CHECK_EQ_INT(braid_options_create(&o), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_max_streams(o, -1), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(braid_last_error(), "max streams must be 0 (automatic) to 64");
    CHECK_EQ_INT(braid_options_set_backend(o, (braid_backend)7), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(braid_options_set_backend(o, BRAID_BACKEND_CUDA), BRAID_OK);
    braid_session *s = NULL;
    braid_status st = braid_session_create(m, o, &s);
    if (st == BRAID_OK) { /* a machine with a GPU */
        CHECK_EQ_INT(braid_session_backend(s), BRAID_BACKEND_CUDA);
        braid_session_destroy(s);
        s = NULL;
    } else {
        CHECK_EQ_INT(st, BRAID_ERR_NO_DEVICE);
        CHECK_CONTAINS(braid_last_error(), "the CUDA backend was asked for but");
    }
    CHECK_EQ_INT(braid_options_set_backend(o, BRAID_BACKEND_CPU), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_max_streams(o, 0), BRAID_OK);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    CHECK_EQ_INT(braid_session_backend(s), BRAID_BACKEND_CPU);
    long ns = -1, ne = -1;
    CHECK_EQ_INT(braid_session_device_counts(s, &ns, &ne), BRAID_OK);
    CHECK(ns == 0 && ne == 0);

    /* Errors of a run are the session's. */
    braid_tensor bad = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {2, 3, 32, 32}, .data = input};
    braid_tensor out;
    CHECK_EQ_INT(braid_session_run(s, 1, &bad, 1, &out), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(braid_session_error(s), "input 'x' has shape 2x3x32x32 but the model declares Nx16x32x32");
    bad.dims[1] = 16;
    bad.dtype = BRAID_DTYPE_INT64;
    CHECK_EQ_INT(braid_session_run(s, 1, &bad, 1, &out), BRAID_ERR_DTYPE);
    CHECK_EQ_INT(braid_session_run(s, 2, &bad, 1, &out), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(braid_session_error(s), "the model has 1 inputs, 2 were given");

    /* Host-shared input buffer: write there, run with the same pointer. */
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {2, 16, 32, 32}};
    void *buf = NULL;
    CHECK_EQ_INT(braid_session_input_buffer(s, 0, &in, &buf), BRAID_OK);
    CHECK(buf != NULL);
    memcpy(buf, input, sizeof input);
    in.data = buf;
    CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &out), BRAID_OK);
    CHECK_EQ_INT(out.rank, 4);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 32);
    out_elems = 2 * 32 * 32 * 32;
    expected = malloc(out_elems * sizeof(float));
    memcpy(expected, out.data, out_elems * sizeof(float));
    /* The same run from the caller's own memory gives the same bits. */
    in.data = input;
    CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &out), BRAID_OK);
    CHECK(memcmp(out.data, expected, out_elems * sizeof(float)) == 0);

    /* run_into: an aligned buffer is written in place (bound for the run),
     * an unaligned one gets a copy; both hold the same bits, and a plain run
     * afterwards writes the session's own buffer again, not the caller's. */
    float *mine = malloc(out_elems * sizeof(float) + 64);
    braid_tensor into = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {2, 32, 32, 32}, .data = mine};
    memset(mine, 0xFF, out_elems * sizeof(float));
    CHECK_EQ_INT(braid_session_run_into(s, 1, &in, 1, &into), BRAID_OK);
    CHECK(memcmp(mine, expected, out_elems * sizeof(float)) == 0);
    into.data = (char *)mine + 4;
    memset(into.data, 0xFF, out_elems * sizeof(float));
    CHECK_EQ_INT(braid_session_run_into(s, 1, &in, 1, &into), BRAID_OK);
    CHECK(memcmp(into.data, expected, out_elems * sizeof(float)) == 0);
    memset(mine, 0, out_elems * sizeof(float) + 4);
    CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &out), BRAID_OK);
    CHECK(out.data != (void *)mine && out.data != into.data);
    CHECK(memcmp(out.data, expected, out_elems * sizeof(float)) == 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < out_elems; i++) nonzero += mine[i] != 0.0f;
    CHECK_EQ_INT(nonzero, 0); /* the caller's buffer is bound for its own run only */
    free(mine);
    /* an output buffer over the second image of the input: copied after the
     * run, right (written during it, the first image's output would
     * overwrite the second image before it is read) */
    float *both = malloc((out_elems + 16384) * sizeof(float));
    memcpy(both, input, sizeof input);
    braid_tensor in2 = in;
    in2.data = both;
    into.data = both + 16384;
    CHECK_EQ_INT(braid_session_run_into(s, 1, &in2, 1, &into), BRAID_OK);
    CHECK(memcmp(into.data, expected, out_elems * sizeof(float)) == 0);
    free(both);

    /* A caller's buffer of the wrong shape is refused. */
    float small[4];
    braid_tensor wrong = {.dtype = BRAID_DTYPE_FLOAT, .rank = 1, .dims = {4}, .data = small};
    CHECK_EQ_INT(braid_session_run_into(s, 1, &in, 1, &wrong), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(braid_session_error(s), "output 'y' has shape 2x32x32x32 but the caller's buffer is 4");

    /* Many threads, one session. */
    shared = s;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    CHECK_EQ_INT(thread_errors, 0);
    CHECK_EQ_INT(thread_mismatch, 0);
    printf("threads: %d threads x %d runs on one session, %d errors, %d mismatches\n", THREADS, RUNS, thread_errors,
           thread_mismatch);

    free(expected);
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);

    /* Two outputs into overlapping buffers (fpn: p3 1x32x32x32, p4
     * 1x32x16x16 over p3's first 8192 floats): p3 is written in place, p4
     * copied over it after the run, as when both were copied. */
    snprintf(path, sizeof path, "%s/models/gen/fpn/model.onnx", getenv("BRAID_SOURCE_DIR"));
    CHECK_EQ_INT(braid_model_load_file(path, &m), BRAID_OK);
    CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK);
    if (m && s) {
        static float img[3 * 64 * 64];
        for (size_t i = 0; i < sizeof img / sizeof *img; i++) img[i] = (float)((i * 31) % 97) / 97.0f - 0.5f;
        braid_tensor fin = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {1, 3, 64, 64}, .data = img};
        braid_tensor ref[2];
        CHECK_EQ_INT(braid_session_run(s, 1, &fin, 2, ref), BRAID_OK);
        float *p3 = malloc(32768 * sizeof *p3), *p4 = malloc(8192 * sizeof *p4), *both = malloc(32768 * sizeof *both);
        memcpy(p3, ref[0].data, 32768 * sizeof *p3);
        memcpy(p4, ref[1].data, 8192 * sizeof *p4);
        braid_tensor two[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {1, 32, 32, 32}, .data = both},
                               {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {1, 32, 16, 16}, .data = both}};
        CHECK_EQ_INT(braid_session_run_into(s, 1, &fin, 2, two), BRAID_OK);
        CHECK(memcmp(both, p4, 8192 * sizeof *p4) == 0);
        CHECK(memcmp(both + 8192, p3 + 8192, 24576 * sizeof *p3) == 0);
        free(p3), free(p4), free(both);
    }
    braid_session_destroy(s);
    braid_model_destroy(m);
    return check_done();
}
