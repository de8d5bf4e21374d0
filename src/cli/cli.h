/* cli.h: what the files of the braid command share: parsed options, input
 * preparation (files, --shape, fixed-seed random fill) and output summaries. */
#ifndef BD_CLI_H
#define BD_CLI_H

#include <stdio.h>

#include "braid.h"
#include "util/common.h"

#define CLI_MAX_ARGS 64

typedef struct cli_opts {
    const char *model;
    const char *inputs[CLI_MAX_ARGS]; /* NAME=FILE */
    int n_inputs;
    const char *shapes[CLI_MAX_ARGS]; /* NAME=1x3x224x224 */
    int n_shapes;
    const char *output_dir;
    const char *dot;
    const char *profile;
    braid_backend backend;
    int streams, threads, cuda_graph, tf32, no_fold, no_layout;
    int cuda_workspace;   /* MiB, -1 = the default */
    int io_buffers;       /* bench: inputs written into the session's host-shared buffers, outputs read */
    int iterations, warmup;
    long long loop_limit; /* 0: the library's default */
    double atol, rtol;
    int have_atol, have_rtol;
} cli_opts;

/* Exit codes of the braid command. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_UNSUPPORTED = 3 };

int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_status_exit(braid_status st);
braid_status cli_session(const cli_opts *o, const braid_model *m, int max_streams, braid_session **s);
/* Fills ins[i] for every model input from --input files, or a fixed-seed
 * random tensor shaped by the declaration and --shape. Data bd_malloc'ed. */
braid_status cli_make_inputs(const cli_opts *o, const braid_model *m, braid_tensor *ins, char *err, size_t n);
void cli_free_tensors(braid_tensor *t, int n);
/* Reads a .npy or TensorProto .pb file. */
braid_status cli_read_tensor(const char *path, braid_tensor *t, char *err, size_t n);
/* Reads a value of declared dtype (braid.h): a tensor (.npy or .pb), or a
 * sequence or optional from its SequenceProto / OptionalProto .pb file. */
braid_status cli_read_value(const char *path, int dtype, braid_tensor *t, char *err, size_t n);
void cli_print_summary(FILE *f, const char *name, const braid_tensor *t);
/* What a session says about itself: its device and library versions (CUDA
 * only), its notes (every fallback it took), and how the plan of its last run
 * used a CUDA graph (when one was asked for); each line starts with prefix. */
void cli_print_device(FILE *f, const braid_session *s, const char *prefix);
void cli_print_notes(FILE *f, const braid_session *s, const char *prefix);
void cli_print_graph(FILE *f, braid_session *s, const char *prefix);

int cli_run(const cli_opts *o);
int cli_info(const cli_opts *o);
int cli_check(const cli_opts *o);
int cli_plan(const cli_opts *o);
int cli_bench(const cli_opts *o);

#endif
