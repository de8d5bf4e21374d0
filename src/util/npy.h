/* npy.h: reading and writing NumPy .npy files (format 1.0 to 3.0, C order,
 * little-endian numeric dtypes and bool). */
#ifndef BD_NPY_H
#define BD_NPY_H

#include "util/common.h"

/* Parses .npy bytes into t (data bd_malloc'ed). */
braid_status bd_npy_parse(const void *bytes, size_t size, bd_tensor *t, bd_err *e);
braid_status bd_npy_read(const char *path, bd_tensor *t, bd_err *e);
braid_status bd_npy_write(const char *path, const bd_tensor *t, bd_err *e);

#endif
