/* The emulator's FP32-accumulating matrix products, on OpenBLAS. The
 * callers round the operands as the compute type says first; what is left
 * is a plain FP32 product, which an optimized BLAS does at the CPU's speed.
 * The thread count is fixed for the process (AMPSHIM_EMU_THREADS, default
 * 1), so that results are the same run to run: with a given count, each
 * element of the product is summed by one thread in one order. */
#include "emu.h"

#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Upper bound of AMPSHIM_EMU_THREADS. */
#define EMU_CPU_MAX_THREADS 64

static pthread_once_t emu_cpu_once = PTHREAD_ONCE_INIT;
static int emu_cpu_nthreads = 1;

static void
emu_cpu_setup(void)
{
    const char *v = getenv("AMPSHIM_EMU_THREADS");
    char *end = NULL;
    long n;

    if (v && *v) {
        n = strtol(v, &end, 10);
        if (*end == '\0' && n >= 1 && n <= EMU_CPU_MAX_THREADS)
            emu_cpu_nthreads = (int)n;
        else
            fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_THREADS=%s is not a "
                    "count from 1 to %d; using 1\n", v, EMU_CPU_MAX_THREADS);
    }
    openblas_set_num_threads(emu_cpu_nthreads);
}

int
emu_cpu_threads(void)
{
    pthread_once(&emu_cpu_once, emu_cpu_setup);
    return emu_cpu_nthreads;
}

void
emu_cpu_sgemm(int transa, int transb, int64_t m, int64_t n, int64_t k,
               const float *a, int64_t lda, const float *b, int64_t ldb,
               float beta, float *c, int64_t ldc)
{
    emu_cpu_threads();
    if (m <= 0 || n <= 0)
        return;
    cblas_sgemm(CblasColMajor, transa ? CblasTrans : CblasNoTrans,
                transb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
                (blasint)k, 1.0f, a, (blasint)lda, b, (blasint)ldb, beta, c,
                (blasint)ldc);
}
