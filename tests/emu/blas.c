/* The emulator's FP32-accumulating matrix products, on OpenBLAS, and the
 * gate through which the emulated BLAS routines call OpenBLAS. The
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

/* OpenBLAS frees its buffers in its ELF destructor, while a program that
 * calls exit() with threads still running may have one of them in a
 * product (an emulated device does not go away under its host threads).
 * This library's destructor runs before OpenBLAS's (it depends on it): it
 * waits for the products in flight and closes the BLAS to later ones,
 * which then take a plain loop. Writers first, so that a stream of
 * products cannot hold the exit up. */
static pthread_rwlock_t emu_cpu_lock =
    PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static int emu_cpu_closed;

__attribute__((destructor)) static void
emu_cpu_close(void)
{
    pthread_rwlock_wrlock(&emu_cpu_lock);
    emu_cpu_closed = 1;
    pthread_rwlock_unlock(&emu_cpu_lock);
}

/* The product in a plain loop, for after the BLAS has closed. */
static void
emu_cpu_sgemm_loop(int transa, int transb, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float acc = 0.0f;

            for (int64_t p = 0; p < k; p++)
                acc += (transa ? a[p + i * lda] : a[i + p * lda]) *
                       (transb ? b[j + p * ldb] : b[p + j * ldb]);
            c[i + j * ldc] = beta == 0.0f ? acc : acc + beta * c[i + j * ldc];
        }
}

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
    pthread_rwlock_rdlock(&emu_cpu_lock);
    if (!emu_cpu_closed) {
        cblas_sgemm(CblasColMajor, transa ? CblasTrans : CblasNoTrans,
                    transb ? CblasTrans : CblasNoTrans, (blasint)m,
                    (blasint)n, (blasint)k, 1.0f, a, (blasint)lda, b,
                    (blasint)ldb, beta, c, (blasint)ldc);
        pthread_rwlock_unlock(&emu_cpu_lock);
        return;
    }
    pthread_rwlock_unlock(&emu_cpu_lock);
    emu_cpu_sgemm_loop(transa, transb, m, n, k, a, lda, b, ldb, beta, c,
                       ldc);
}

CUresult
emu_cpu_blas(CUresult (*fn)(void *arg), void *arg)
{
    CUresult rc = CUDA_ERROR_DEINITIALIZED;

    emu_cpu_threads();
    pthread_rwlock_rdlock(&emu_cpu_lock);
    if (!emu_cpu_closed)
        rc = fn(arg);
    pthread_rwlock_unlock(&emu_cpu_lock);
    return rc;
}
