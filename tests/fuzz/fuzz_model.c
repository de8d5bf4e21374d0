/* fuzz_model.c: libFuzzer target for the model loader: any bytes must give
 * a model or an error status with a message, never a crash or a leak. A model
 * that loads with small static input shapes is also planned (shape
 * inference, folding, the plan compiler and its verifier) and run
 * (sequence inputs get two elements, optional ones are empty). Seeds
 * include subgraphs (If, Loop, Scan), a model-local function and a staged
 * plan. */
#include <stdint.h>
#include <string.h>

#include "braid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    braid_model *m = NULL;
    if (braid_model_load_memory(data, size, NULL, &m) != BRAID_OK) {
        if (!braid_last_error()[0]) __builtin_trap(); /* every failure has a message */
        return 0;
    }
    int n = braid_model_input_count(m);
    braid_tensor in[8], items[8][2];
    static float buf[8][4096];
    static const char *empty[2] = {"", ""};
    int ok = n <= 8;
    for (int i = 0; ok && i < n; i++) {
        braid_value_info vi;
        braid_model_input_info(m, i, &vi);
        if (vi.dtype & BRAID_DTYPE_OPTIONAL) { /* an empty optional */
            in[i] = (braid_tensor){.dtype = BRAID_DTYPE_UNDEFINED};
            continue;
        }
        if (vi.dtype & BRAID_DTYPE_SEQUENCE) { /* two elements of shape [2] */
            braid_dtype el = (braid_dtype)(vi.dtype & 0xff);
            for (int k = 0; k < 2; k++)
                items[i][k] = (braid_tensor){.dtype = el, .rank = 1, .dims = {2},
                                             .data = el == BRAID_DTYPE_STRING ? (void *)empty : (void *)buf[i]};
            in[i] = (braid_tensor){.dtype = vi.dtype, .rank = 1, .dims = {2}, .data = items[i]};
            continue;
        }
        int64_t count = 1;
        in[i] = (braid_tensor){.dtype = vi.dtype, .rank = vi.rank < 0 ? 0 : vi.rank, .data = buf[i]};
        for (int d = 0; d < in[i].rank; d++) {
            in[i].dims[d] = vi.dims[d] < 0 ? 1 : vi.dims[d];
            count *= in[i].dims[d];
        }
        ok = count * 8 <= (int64_t)sizeof buf[i];
    }
    if (ok) {
        braid_options *o = NULL;
        braid_session *s = NULL;
        braid_options_create(&o);
        braid_options_set_backend(o, BRAID_BACKEND_CPU);
        braid_options_set_max_streams(o, 2);
        braid_options_set_loop_limit(o, 1000); /* a Loop with no bound may not run for minutes */
        if (braid_session_create(m, o, &s) == BRAID_OK) {
            braid_tensor out[8];
            int n_out = braid_model_output_count(m);
            memset(buf, 0, sizeof buf);
            braid_session_run(s, n, in, n_out < 8 ? n_out : 8, out);
        }
        braid_session_destroy(s);
        braid_options_destroy(o);
    }
    braid_model_destroy(m);
    return 0;
}
