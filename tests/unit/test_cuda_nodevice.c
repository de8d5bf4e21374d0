/* test_cuda_nodevice.c: asking for the CUDA backend where it cannot run fails
 * plainly. With no device (or a braid built without CUDA), creating a session
 * with BRAID_BACKEND_CUDA fails with BRAID_ERR_NO_DEVICE and a message that
 * says so, while AUTO falls back to the CPU and runs. With a device, asking
 * for a device index that does not exist fails the same way. Runs everywhere. */
#include <stdlib.h>

#include "check.h"

#include "braid.h"
#ifdef BRAID_HAVE_CUDA
#include "backend/backend.h"
#include "cuda_counts.h"
#endif

int main(void)
{
    /* y = Relu(x), x float (3, 4, 5): the ONNX node test. */
    char path[1024];
    const char *data = getenv("BRAID_NODE_DATA"); /* made by the node_data fixture */
    snprintf(path, sizeof path, "%s/test_relu/model.onnx", data ? data : "tests/onnx_node/data");
    braid_model *m = NULL;
    braid_status st = braid_model_load_file(path, &m);
    if (st) fprintf(stderr, "load: %s\n", braid_last_error());
    CHECK_EQ_INT(st, BRAID_OK);
    if (!m) return check_done();

    braid_options *o = NULL;
    braid_session *s = NULL;
    CHECK_EQ_INT(braid_options_create(&o), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_backend(o, BRAID_BACKEND_CUDA), BRAID_OK);

    int have_device = 0;
#ifdef BRAID_HAVE_CUDA
    char why[256] = "";
    have_device = cuda_probe(why, sizeof why);
    if (!have_device) CHECK(why[0] != '\0'); /* the probe says why */
#endif
    if (!have_device) {
        st = braid_session_create(m, o, &s);
        CHECK_EQ_INT(st, BRAID_ERR_NO_DEVICE);
        CHECK(s == NULL);
        CHECK_CONTAINS(braid_last_error(), "the CUDA backend was asked for but");
        printf("no device: %s\n", braid_last_error());
    } else {
        CHECK_EQ_INT(braid_options_set_device(o, 4096), BRAID_OK);
        st = braid_session_create(m, o, &s);
        CHECK_EQ_INT(st, BRAID_ERR_NO_DEVICE);
        CHECK_CONTAINS(braid_last_error(), "CUDA device 4096 was asked for");
    }
    braid_session_destroy(s);
    s = NULL;
#ifdef BRAID_HAVE_CUDA
    {
        bd_cuda_live c;
        cuda_counts(&c);
        CHECK_EQ_INT(c.streams, 0); /* a failed create leaves nothing behind */
        CHECK_EQ_INT(c.events, 0);
        CHECK_EQ_INT(c.allocs, 0);
    }
#endif

    /* AUTO runs wherever braid can: here, or on the CPU. */
    CHECK_EQ_INT(braid_options_set_backend(o, BRAID_BACKEND_AUTO), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_device(o, 0), BRAID_OK);
    st = braid_session_create(m, o, &s);
    CHECK_EQ_INT(st, BRAID_OK);
    if (s) {
        if (!have_device) CHECK_EQ_INT(braid_session_backend(s), BRAID_BACKEND_CPU);
        float x[60];
        for (int i = 0; i < 60; i++) x[i] = (float)(i % 7) - 3.0f;
        braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = x};
        braid_tensor out = {0};
        CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &out), BRAID_OK);
        if (out.data) {
            for (int i = 0; i < 60; i++) CHECK_NEAR(((float *)out.data)[i], x[i] > 0 ? x[i] : 0.0f, 0, 0);
        }
    }
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    return check_done();
}
