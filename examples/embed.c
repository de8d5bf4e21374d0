/* embed.c: embedding braid in a program. Loads a model, lists its inputs and
 * outputs, fills every input in a session-owned host-shared buffer (zero
 * copy), runs it, and prints each output's shape and first values.
 * Build against an installed braid:  cc embed.c $(pkg-config --cflags --libs braid)
 * Usage: embed MODEL [DIM ...]   (DIMs replace the symbolic dims, in order) */
#include <braid.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [DIM ...]\n", argv[0]);
        return 2;
    }
    braid_model *model = NULL;
    braid_options *opts = NULL;
    braid_session *sess = NULL;
    braid_tensor inputs[16], outputs[16];
    int rc = 1, next_dim = 2;

    if (braid_model_load_file(argv[1], &model) != BRAID_OK) {
        fprintf(stderr, "embed: %s\n", braid_last_error());
        return 1;
    }
    braid_options_create(&opts);
    braid_options_set_backend(opts, BRAID_BACKEND_AUTO);
    if (braid_session_create(model, opts, &sess) != BRAID_OK) {
        fprintf(stderr, "embed: %s\n", braid_last_error());
        goto done;
    }
    printf("braid %s, backend %s\n", braid_version(), braid_session_backend(sess) == BRAID_BACKEND_CUDA ? "cuda" : "cpu");

    int n_in = braid_model_input_count(model), n_out = braid_model_output_count(model);
    if (n_in > 16 || n_out > 16) goto done;
    for (int i = 0; i < n_in; i++) {
        braid_value_info info;
        braid_model_input_info(model, i, &info);
        braid_tensor *t = &inputs[i];
        t->dtype = info.dtype;
        t->rank = info.rank;
        size_t count = 1;
        printf("input %s:", info.name);
        for (int d = 0; d < info.rank; d++) {
            t->dims[d] = info.dims[d] >= 0 ? info.dims[d] : (next_dim < argc ? atoll(argv[next_dim++]) : 1);
            printf(" %s%lld", info.dim_names[d] ? info.dim_names[d] : "", (long long)t->dims[d]);
            count *= (size_t)t->dims[d];
        }
        printf("\n");
        if (info.dtype != BRAID_DTYPE_FLOAT) {
            fprintf(stderr, "embed: this example fills float inputs only\n");
            goto done;
        }
        /* The session's buffer: on a GPU pinned host memory (one DMA, no host copy, no page faults). */
        if (braid_session_input_buffer(sess, i, t, &t->data) != BRAID_OK) {
            fprintf(stderr, "embed: %s\n", braid_session_error(sess));
            goto done;
        }
        for (size_t k = 0; k < count; k++) ((float *)t->data)[k] = (float)(k % 255) / 255.0f;
    }
    for (int o = 0; o < n_out; o++) outputs[o].data = NULL; /* the session's output buffers */
    if (braid_session_run(sess, n_in, inputs, n_out, outputs) != BRAID_OK) {
        fprintf(stderr, "embed: %s\n", braid_session_error(sess));
        goto done;
    }
    for (int o = 0; o < n_out; o++) {
        braid_value_info info;
        braid_model_output_info(model, o, &info);
        printf("output %s: %s [", info.name, braid_dtype_name(outputs[o].dtype));
        for (int d = 0; d < outputs[o].rank; d++) printf("%s%lld", d ? ", " : "", (long long)outputs[o].dims[d]);
        printf("]");
        if (outputs[o].dtype == BRAID_DTYPE_FLOAT) printf(" first %.6f", ((float *)outputs[o].data)[0]);
        printf("\n");
    }
    rc = 0;
done:
    braid_session_destroy(sess);
    braid_options_destroy(opts);
    braid_model_destroy(model);
    return rc;
}
