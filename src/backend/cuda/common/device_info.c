/* device_info.c: the device line: the device and the driver, runtime, cuDNN
 * and cuBLAS versions a session runs with (device_info.h). Plain C, no CUDA:
 * the CPU tests run it. */
#include "backend/cuda/common/device_info.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void bd_cudnn_version_split(long v, int *major, int *minor, int *patch)
{
    long per = v >= 90000 ? 10000 : 1000;
    *major = (int)(v / per);
    *minor = (int)(v % per / 100);
    *patch = (int)(v % 100);
}

int bd_nvidia_driver_release(const char *text, char *buf, size_t n)
{
    if (n) buf[0] = '\0';
    const char *p = text ? strstr(text, "Kernel Module") : NULL;
    if (!p || !n) return 0;
    p += strlen("Kernel Module");
    /* The first word of digits and dots with a dot in it, on that line
     * ("Kernel Module  580.65.06  Sun Jul 27", "Open Kernel Module for x86_64  575.57.08"). */
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t') p++;
        size_t len = 0;
        int dot = 0, other = 0;
        while (p[len] && !isspace((unsigned char)p[len])) {
            dot |= p[len] == '.';
            other |= !isdigit((unsigned char)p[len]) && p[len] != '.';
            len++;
        }
        if (len && dot && !other && isdigit((unsigned char)p[0])) {
            if (len >= n) len = n - 1;
            memcpy(buf, p, len);
            buf[len] = '\0';
            return 1;
        }
        p += len;
    }
    return 0;
}

static int cuda_ver(char *buf, size_t n, int v) { return snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10); }

void bd_cuda_version_line(char *buf, size_t n, const bd_cuda_versions *v)
{
    char drv[96], rt[32], api[32], dnn[64], dnn_b[32], blas[64];
    int a, b, c;
    cuda_ver(api, sizeof api, v->driver_api);
    if (v->driver[0]) snprintf(drv, sizeof drv, "driver %s (CUDA %s)", v->driver, api);
    else snprintf(drv, sizeof drv, "driver for CUDA %s", api);
    cuda_ver(rt, sizeof rt, v->runtime);
    bd_cudnn_version_split(v->cudnn, &a, &b, &c);
    snprintf(dnn, sizeof dnn, "cuDNN %d.%d.%d", a, b, c);
    if (v->cudnn_built && v->cudnn_built != v->cudnn) {
        bd_cudnn_version_split(v->cudnn_built, &a, &b, &c);
        snprintf(dnn_b, sizeof dnn_b, " (built with %d.%d.%d)", a, b, c);
        strncat(dnn, dnn_b, sizeof dnn - strlen(dnn) - 1);
    }
    snprintf(blas, sizeof blas, "cuBLAS %d.%d.%d", v->cublas[0], v->cublas[1], v->cublas[2]);
    int run_blas = v->cublas[0] * 10000 + v->cublas[1] * 100 + v->cublas[2];
    if (v->cublas_built && v->cublas_built != run_blas) {
        char t[40];
        snprintf(t, sizeof t, " (built with %d.%d.%d)", v->cublas_built / 10000, v->cublas_built % 10000 / 100,
                 v->cublas_built % 100);
        strncat(blas, t, sizeof blas - strlen(blas) - 1);
    }
    char bw[32] = "";
    if (v->mem_bw > 0) snprintf(bw, sizeof bw, ", %.0f GB/s", v->mem_bw / 1e9);
    snprintf(buf, n, "%s (sm_%d%d, %d SMs, %.1f GiB%s); %s; runtime %s; %s; %s; I/O %s", v->name, v->cc_major,
             v->cc_minor, v->sms, (double)v->mem_bytes / (1024.0 * 1024.0 * 1024.0), bw, drv, rt, dnn, blas,
             v->io ? v->io : "?");
}
