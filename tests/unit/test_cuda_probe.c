/* test_cuda_probe.c: a machine without a GPU pays nothing for CUDA. On such a
 * machine (the driver reports no device, or there is no driver), a session
 * with the default backend (AUTO) runs on the CPU, says why, and leaves the
 * CUDA backend and its libraries (libbraid_cuda.so, the CUDA runtime,
 * cuDNN, cuBLAS) unloaded: none of them is mapped into the process
 * afterwards. Asking for CUDA fails with the driver's answer, still without
 * loading them. Where a device (or the emulated one) answers, there is
 * nothing to check: reported skipped (exit 77). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "braid.h"
#include "backend/backend.h"

/* The first line of /proc/self/maps naming one of CUDA's libraries, or "". */
static void cuda_mapped(char *line, size_t n)
{
    static const char *const libs[] = {"libbraid_cuda", "libcudart", "libcudnn", "libcublas", "libcuda.so"};
    FILE *f = fopen("/proc/self/maps", "r");
    line[0] = '\0';
    char buf[1024];
    while (f && fgets(buf, sizeof buf, f))
        for (int i = 0; i < 5; i++)
            if (strstr(buf, libs[i])) {
                snprintf(line, n, "%s", buf);
                fclose(f);
                return;
            }
    if (f) fclose(f);
}

int main(void)
{
    char why[256] = "", line[1024];
    if (bd_cuda_device_present(why, sizeof why)) {
        printf("SKIPPED: the driver reports a CUDA device (or BRAID_CUDA_EMULATOR=1): nothing to check here\n");
        return 77;
    }
    printf("no device: %s\n", why);
    char path[1024];
    const char *data = getenv("BRAID_NODE_DATA");
    snprintf(path, sizeof path, "%s/test_relu/model.onnx", data ? data : "tests/onnx_node/data");
    braid_model *m = NULL;
    CHECK_EQ_INT(braid_model_load_file(path, &m), BRAID_OK);
    if (!m) return check_done();
    braid_session *s = NULL;
    CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK); /* the defaults: AUTO */
    if (s) {
        CHECK_EQ_INT(braid_session_backend(s), BRAID_BACKEND_CPU);
        CHECK_CONTAINS(braid_session_backend_note(s), "no CUDA device answers: ");
        float x[60];
        for (int i = 0; i < 60; i++) x[i] = (float)i - 30.0f;
        braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = x}, out = {0};
        CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &out), BRAID_OK);
        if (out.data) CHECK_EQ_INT(((float *)out.data)[59], 29);
    }
    braid_session_destroy(s);
    cuda_mapped(line, sizeof line);
    if (line[0]) fprintf(stderr, "mapped after an AUTO session: %s", line);
    CHECK(line[0] == '\0');
    braid_options *o = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    s = NULL;
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_ERR_NO_DEVICE);
    CHECK_CONTAINS(braid_last_error(), "the CUDA backend was asked for but no CUDA device answers: ");
    CHECK_CONTAINS(braid_last_error(), why);
    cuda_mapped(line, sizeof line);
    CHECK(line[0] == '\0');
    braid_options_destroy(o);
    braid_model_destroy(m);
    return check_done();
}
