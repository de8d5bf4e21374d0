/* fuzz_npy.c: libFuzzer target for the .npy reader. */
#include <stdint.h>

#include "util/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bd_tensor t;
    bd_err e = {0};
    if (bd_npy_parse(data, size, &t, &e) == BRAID_OK) bd_free(t.data);
    else if (!e.msg[0]) __builtin_trap();
    return 0;
}
