/* sgemm_soak: an ordinary FP32 cuBLAS program that calls cublasSgemm_v2 on
 * a tiny problem many times, synchronising now and then, and reports how
 * far device memory in use (cudaMemGetInfo), its heap in use (mallinfo2)
 * and its resident set grew after a warm-up; the last result is checked
 * against a double reference with the tolerance given. */
#include <cublas_v2.h>

#define EXAMPLE_PROG "sgemm_soak"
#include "example_util.h"

#include <malloc.h>
#include <unistd.h>

#define SIDE 16
#define CHECKPOINTS 20

struct usage {
    size_t device, heap, rss;
};

struct options {
    long calls, warmup, sync_every;
    struct tolerance tol;
};

static int
parse_long(const char *s, long min, long *out)
{
    char *end;

    errno = 0;
    *out = strtol(s, &end, 10);
    return errno != 0 || end == s || *end != '\0' || *out < min ? -1 : 0;
}

static int
parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){ .calls = 1000000, .warmup = 10000,
                           .sync_every = 1000, .tol = { TOL_FP32, 0.0 } };
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *arg = argv[i], *val = argv[i + 1];
        int bad;

        if (strcmp(arg, "--calls") == 0)
            bad = parse_long(val, 1, &o->calls);
        else if (strcmp(arg, "--warmup") == 0)
            bad = parse_long(val, 0, &o->warmup);
        else if (strcmp(arg, "--sync-every") == 0)
            bad = parse_long(val, 1, &o->sync_every);
        else if (strcmp(arg, "--tol") == 0)
            bad = tol_parse(val, &o->tol);
        else
            bad = 1;
        if (bad)
            return -1;
    }
    return argc % 2 == 1 ? 0 : -1;
}

/* Bytes in use: device memory, malloc's heap and the resident set (on
 * the CPU emulator the resident set also holds the emulated device memory
 * that was touched); 0 or -1. */
static int
memory_in_use(struct usage *u)
{
    struct mallinfo2 mi = mallinfo2();
    size_t free_b = 0, total_b = 0;
    unsigned long pages_total, pages_resident;
    FILE *f;
    int n;

    if (cuda_failed("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b)))
        return -1;
    u->device = total_b - free_b;
    u->heap = mi.uordblks + mi.hblkhd;
    f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    n = fscanf(f, "%lu %lu", &pages_total, &pages_resident);
    fclose(f);
    if (n != 2)
        return -1;
    u->rss = pages_resident * (size_t)sysconf(_SC_PAGESIZE);
    return 0;
}

/* `count` calls, synchronising after every sync_every-th; 0 or -1. */
static int
issue(cublasHandle_t handle, const float *da, const float *db, float *dc,
      long count, long sync_every)
{
    const float alpha = 1.0f, beta = 0.0f;

    for (long i = 1; i <= count; i++) {
        cublasStatus_t st = cublasSgemm_v2(handle, CUBLAS_OP_N, CUBLAS_OP_T,
                                           SIDE, SIDE, SIDE, &alpha, da, SIDE,
                                           db, SIDE, &beta, dc, SIDE);

        if (cublas_failed("cublasSgemm_v2", st))
            return -1;
        if ((i % sync_every == 0 || i == count) &&
            cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()))
            return -1;
    }
    return 0;
}

/* Max error / bound of C = A B^T. */
static double
check_result(const float *a, const float *b, const float *c,
             const struct tolerance *tol)
{
    const struct operand_view va = { a, SIDE, 0 }, vb = { b, SIDE, 1 };

    return gemm_worst_ratio(&va, &vb, SIDE, SIDE, SIDE, c,
                            tol_factor(tol, SIDE));
}

/* The largest growth of each figure of `now` over `base` so far. */
static void
grow(const struct usage *base, const struct usage *now, long growth[3])
{
    long d[3] = { (long)now->device - (long)base->device,
                  (long)now->heap - (long)base->heap,
                  (long)now->rss - (long)base->rss };

    for (int i = 0; i < 3; i++)
        if (d[i] > growth[i])
            growth[i] = d[i];
}

int
main(int argc, char **argv)
{
    float a[SIDE * SIDE], b[SIDE * SIDE], c[SIDE * SIDE];
    float *da = NULL, *db = NULL, *dc = NULL;
    struct usage base, now;
    long growth[3] = { 0, 0, 0 }, per_checkpoint;
    struct options o;
    cublasHandle_t handle;
    uint64_t rng = 99;
    double ratio;

    if (parse_options(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: sgemm_soak [--calls N] [--warmup N] "
                "[--sync-every N] [--tol fp16|bf16|tf32|fp32|X]\n");
        return EXIT_USAGE;
    }
    for (int i = 0; i < SIDE * SIDE; i++) {
        a[i] = rng_float(&rng, 1.0f);
        b[i] = rng_float(&rng, 1.0f);
    }
    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&da, sizeof a)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&db, sizeof b)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dc, sizeof c)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(da, a, sizeof a,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(db, b, sizeof b,
                                             cudaMemcpyHostToDevice)) ||
        issue(handle, da, db, dc, o.warmup, o.sync_every) != 0 ||
        memory_in_use(&base) != 0)
        return EXIT_CUDA_ERROR;
    /* Memory is read at CHECKPOINTS evenly spaced synchronised points. */
    per_checkpoint = (o.calls + CHECKPOINTS - 1) / CHECKPOINTS;
    for (long done = 0; done < o.calls; done += per_checkpoint) {
        long n = o.calls - done < per_checkpoint ? o.calls - done
                                                 : per_checkpoint;

        if (issue(handle, da, db, dc, n, o.sync_every) != 0 ||
            memory_in_use(&now) != 0)
            return EXIT_CUDA_ERROR;
        grow(&base, &now, growth);
    }
    if (cuda_failed("cudaMemcpy", cudaMemcpy(c, dc, sizeof c,
                                             cudaMemcpyDeviceToHost)))
        return EXIT_CUDA_ERROR;
    ratio = check_result(a, b, c, &o.tol);
    printf("soak calls=%ld warmup=%ld sync_every=%ld device=%zu "
           "device_growth=%ld heap=%zu heap_growth=%ld rss=%zu "
           "rss_growth=%ld ratio=%.4f verdict=%s\n",
           o.calls, o.warmup, o.sync_every, base.device, growth[0],
           base.heap, growth[1], base.rss, growth[2], ratio,
           ratio <= 1.0 ? "ok" : "FAIL");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cublasDestroy_v2(handle);
    fflush(stdout);
    return ratio <= 1.0 ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
}
