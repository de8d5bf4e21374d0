/* api.c: the public functions: argument checks, error text, dispatch. */
#include "util/common.h"
const char *braid_version(void) { return "0.1.0"; }
