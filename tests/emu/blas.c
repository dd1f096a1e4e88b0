/* The emulator's FP32-accumulating matrix products, on OpenBLAS, and the
 * gate through which the emulated BLAS routines call OpenBLAS. The
 * callers round the operands as the compute type says first; what is left
 * is a plain FP32 product, which an optimized BLAS does at the CPU's speed.
 * The thread count is fixed for the process (AMPSHIM_EMU_THREADS, default
 * 1), so that results are the same run to run: with a given count, each
 * element of the product is summed by one thread in one order. The kernel
 * family is fixed too (Haswell's, below), so that they are the same from
 * one x86-64 CPU to another. */
#include "emu.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The OpenBLAS kernel family every product runs on. A DYNAMIC_ARCH
 * OpenBLAS (Debian's) picks its kernels for the CPU it finds when it
 * loads, and the families block and order their sums differently (AVX2
 * against AVX-512, with and without fused multiply-adds), so the last bits
 * of a product, and the errors the shim's reports show, would change from
 * one CPU model to another. Haswell's (AVX2 and FMA) runs on every x86-64
 * CPU of the last ten years, Intel's since Haswell and AMD's since
 * Excavator and Zen.
 *
 * OpenBLAS reads OPENBLAS_CORETYPE in gotoblas_dynamic_init(), which its
 * constructor calls, before this library's constructor can run (the
 * dynamic linker initialises a library's dependencies first) and perhaps
 * long before, when the program loaded OpenBLAS itself. So, before the
 * first product, the emulator sets the variable and has OpenBLAS choose
 * again (gotoblas_dynamic_quit, gotoblas_dynamic_init: the exported
 * functions of a DYNAMIC_ARCH build, found at run time so that a build
 * without them still links), then puts the variable back as it was. The
 * choice is the process's: a program that uses the same OpenBLAS for its
 * own work gets Haswell's kernels too. */
#define EMU_CPU_CORETYPE "Haswell"

static void
emu_cpu_pin_kernels(void)
{
    void *quit_sym = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    void *init_sym = dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    void (*quit)(void), (*init)(void);
    const char *was = getenv("OPENBLAS_CORETYPE");
    char *saved = was ? strdup(was) : NULL;

    if (quit_sym == NULL || init_sym == NULL)
        goto out;           /* one kernel family built in: nothing to pin */
    memcpy(&quit, &quit_sym, sizeof(quit));
    memcpy(&init, &init_sym, sizeof(init));
    if (strcasecmp(openblas_get_corename(), EMU_CPU_CORETYPE) == 0)
        goto out;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "ampshim-emu: this CPU has no AVX2 and FMA for "
                "OpenBLAS's %s kernels; products use its %s kernels, whose "
                "last bits may differ from other machines'\n",
                EMU_CPU_CORETYPE, openblas_get_corename());
        goto out;
    }
    setenv("OPENBLAS_CORETYPE", EMU_CPU_CORETYPE, 1);
    quit();
    init();
    if (saved != NULL)
        setenv("OPENBLAS_CORETYPE", saved, 1);
    else
        unsetenv("OPENBLAS_CORETYPE");
out:
    free(saved);
}

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
    emu_cpu_pin_kernels();
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

/* The three BF16 parts of op(X), rows x cols, into parts[0..2], dense
 * column-major (leading dimension rows). Element (i, p) of op(X) sits at
 * p + i * ld when `trans`, else at i + p * ld. */
static void
emu_bf16x9_split(const float *x, int64_t ld, int trans, int64_t rows,
                 int64_t cols, float *const parts[3])
{
    for (int64_t p = 0; p < cols; p++)
        for (int64_t i = 0; i < rows; i++) {
            float v = trans ? x[p + i * ld] : x[i + p * ld];
            size_t at = (size_t)i + (size_t)p * (size_t)rows;

            for (int q = 0; q < 3; q++) {
                float part = emu_bf16_to_f32(emu_f32_to_bf16(v));

                parts[q][at] = part;
                v = v - part;
            }
        }
}

CUresult
emu_cpu_sgemm_bf16x9(int transa, int transb, int64_t m, int64_t n, int64_t k,
                     const float *a, int64_t lda, const float *b, int64_t ldb,
                     float *c, int64_t ldc)
{
    size_t mk = (size_t)m * (size_t)k, kn = (size_t)k * (size_t)n;
    float *buf, *pa[3], *pb[3];
    int first = 1;

    if (m <= 0 || n <= 0)
        return CUDA_SUCCESS;
    buf = malloc(3 * (mk + kn) * sizeof(float) + 1);
    if (buf == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int q = 0; q < 3; q++) {
        pa[q] = buf + (size_t)q * mk;
        pb[q] = buf + 3 * mk + (size_t)q * kn;
    }
    emu_bf16x9_split(a, lda, transa, m, k, pa);
    emu_bf16x9_split(b, ldb, transb, k, n, pb);
    for (int s = 4; s >= 0; s--)
        for (int i = s > 2 ? s - 2 : 0; i <= (s < 2 ? s : 2); i++) {
            emu_cpu_sgemm(0, 0, m, n, k, pa[i], m, pb[s - i], k,
                          first ? 0.0f : 1.0f, c, ldc);
            first = 0;
        }
    free(buf);
    return CUDA_SUCCESS;
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
