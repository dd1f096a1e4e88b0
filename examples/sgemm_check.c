/* sgemm_check: an ordinary FP32 cuBLAS program that runs cublasSgemm_v2 on a
 * set of cases and checks every element against a double-precision CPU
 * reference with a tolerance given on the command line. */
#include <cublas_v2.h>

#define EXAMPLE_PROG "sgemm_check"
#include "example_util.h"

#include <inttypes.h>

struct options {
    struct tolerance tol;
    uint64_t seed;
};

enum c_init {
    C_RANDOM,   /* C0 pseudo-random */
    C_NAN,      /* C0 all NaN: beta must be 0, C must not be read */
};

/* One cublasSgemm_v2 call. Leading dimensions are the rows of the stored
 * operand plus the given padding. */
struct sgemm_case {
    const char *name;
    int m, n, k;
    cublasOperation_t transa, transb;
    int pad_a, pad_b, pad_c;
    float alpha, beta;
    float scale_a, scale_b;    /* magnitude of the random entries */
    enum c_init c_init;
    int device_scalars;        /* CUBLAS_POINTER_MODE_DEVICE */
    int own_stream;            /* on a non-blocking stream of its own */
};

static const struct sgemm_case cases[] = {
    { "nn_beta0_nan_c", 64, 48, 32, CUBLAS_OP_N, CUBLAS_OP_N,
      0, 0, 0, 1.0f, 0.0f, 1.0f, 1.0f, C_NAN, 0, 0 },
    { "tn_odd_beta", 37, 29, 75, CUBLAS_OP_T, CUBLAS_OP_N,
      3, 0, 0, 0.75f, 0.5f, 1.0f, 1.0f, C_RANDOM, 0, 0 },
    { "nt_odd_ld", 53, 61, 127, CUBLAS_OP_N, CUBLAS_OP_T,
      5, 9, 4, -1.25f, 0.0f, 1.0f, 1.0f, C_RANDOM, 0, 0 },
    { "tt_k1024", 72, 65, 1024, CUBLAS_OP_T, CUBLAS_OP_T,
      0, 0, 0, 1.0f, -1.0f, 1.0f, 1.0f, C_RANDOM, 0, 0 },
    { "nn_tall_skinny", 2050, 3, 96, CUBLAS_OP_N, CUBLAS_OP_N,
      6, 0, 2, 2.0f, 0.0f, 1.0f, 1.0f, C_RANDOM, 0, 0 },
    { "nt_device_scalars", 40, 33, 100, CUBLAS_OP_N, CUBLAS_OP_T,
      0, 0, 0, 1.5f, -0.5f, 1.0f, 1.0f, C_RANDOM, 1, 0 },
    { "tn_small_large", 24, 17, 200, CUBLAS_OP_T, CUBLAS_OP_N,
      0, 2, 0, 1.0f, 0.0f, 0x1p-22f, 0x1p18f, C_NAN, 0, 0 },
    { "nn_stream", 33, 35, 257, CUBLAS_OP_N, CUBLAS_OP_N,
      1, 1, 1, 1.0f, 0.25f, 1.0f, 1.0f, C_RANDOM, 0, 1 },
    { "tt_k0_scale_c", 9, 7, 0, CUBLAS_OP_T, CUBLAS_OP_T,
      0, 0, 0, 1.0f, 2.0f, 1.0f, 1.0f, C_RANDOM, 0, 0 },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* What one case gave. */
struct case_result {
    cublasStatus_t status;
    int cuda_failed;           /* a CUDA or cuBLAS call outside the GEMM */
    double max_ratio;          /* max over elements of error / bound */
    int padding_changed;
    uint64_t hash;
};

/* ---- helpers ----------------------------------------------------------- */

/* ---- one case ---------------------------------------------------------- */

/* Host copies of a case's operands, column-major with padding. */
struct operands {
    int rows_a, cols_a, lda;
    int rows_b, cols_b, ldb;
    int ldc;
    float *a, *b, *c0, *c;
};

static void
operands_free(struct operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c0);
    free(o->c);
}

/* Fills a rows x cols matrix with leading dimension ld; padding gets pad. */
static void
fill_matrix(float *x, int rows, int cols, int ld, uint64_t *rng,
            float scale, float pad, int nan_fill)
{
    for (int j = 0; j < cols; j++) {
        for (int i = 0; i < ld; i++) {
            float v = pad;

            if (i < rows)
                v = nan_fill ? NAN : rng_float(rng, scale);
            x[(size_t)j * ld + i] = v;
        }
    }
}

/* Allocates and fills the host operands; returns 0, or -1 out of memory. */
static int
operands_make(const struct sgemm_case *tc, uint64_t seed,
              struct operands *o)
{
    uint64_t rng = seed;
    size_t na, nb, nc;

    memset(o, 0, sizeof(*o));
    o->rows_a = tc->transa == CUBLAS_OP_N ? tc->m : tc->k;
    o->cols_a = tc->transa == CUBLAS_OP_N ? tc->k : tc->m;
    o->rows_b = tc->transb == CUBLAS_OP_N ? tc->k : tc->n;
    o->cols_b = tc->transb == CUBLAS_OP_N ? tc->n : tc->k;
    /* cuBLAS requires ld >= max(1, rows). */
    o->lda = (o->rows_a > 0 ? o->rows_a : 1) + tc->pad_a;
    o->ldb = (o->rows_b > 0 ? o->rows_b : 1) + tc->pad_b;
    o->ldc = (tc->m > 0 ? tc->m : 1) + tc->pad_c;
    na = (size_t)o->lda * (size_t)(o->cols_a > 0 ? o->cols_a : 1);
    nb = (size_t)o->ldb * (size_t)(o->cols_b > 0 ? o->cols_b : 1);
    nc = (size_t)o->ldc * (size_t)tc->n;
    o->a = calloc(na, sizeof(float));
    o->b = calloc(nb, sizeof(float));
    o->c0 = calloc(nc, sizeof(float));
    o->c = calloc(nc, sizeof(float));
    if (!o->a || !o->b || !o->c0 || !o->c) {
        operands_free(o);
        return -1;
    }
    fill_matrix(o->a, o->rows_a, o->cols_a, o->lda, &rng, tc->scale_a,
                PAD_INPUT, 0);
    fill_matrix(o->b, o->rows_b, o->cols_b, o->ldb, &rng, tc->scale_b,
                PAD_INPUT, 0);
    fill_matrix(o->c0, tc->m, tc->n, o->ldc, &rng, 1.0f, PAD_OUTPUT,
                tc->c_init == C_NAN);
    return 0;
}

/* op(A)(i, l) and op(B)(l, j) from the stored column-major operands. */
static double
op_a(const struct sgemm_case *tc, const struct operands *o, int i, int l)
{
    if (tc->transa == CUBLAS_OP_N)
        return o->a[(size_t)l * o->lda + i];
    return o->a[(size_t)i * o->lda + l];
}

static double
op_b(const struct sgemm_case *tc, const struct operands *o, int l, int j)
{
    if (tc->transb == CUBLAS_OP_N)
        return o->b[(size_t)j * o->ldb + l];
    return o->b[(size_t)l * o->ldb + j];
}

/* Compares C with the double reference element by element: fills
 * max_ratio (error / bound, NaN-safe: a non-finite error counts as
 * infinite), padding_changed and the hash of the m x n result. */
static void
check_result(const struct sgemm_case *tc, const struct operands *o,
             double tol, struct case_result *r)
{
    double worst = 0.0;
    uint64_t h = 0xcbf29ce484222325ULL;

    r->padding_changed = 0;
    for (int j = 0; j < tc->n; j++) {
        const float *col = o->c + (size_t)j * o->ldc;
        const float *col0 = o->c0 + (size_t)j * o->ldc;

        for (int i = 0; i < tc->m; i++) {
            double sum = 0.0, mag = 0.0, ref, bound, err, ratio;

            for (int l = 0; l < tc->k; l++) {
                double p = op_a(tc, o, i, l) * op_b(tc, o, l, j);

                sum += p;
                mag += fabs(p);
            }
            ref = (double)tc->alpha * sum;
            bound = fabs((double)tc->alpha) * mag;
            if (tc->beta != 0.0f) {
                ref += (double)tc->beta * col0[i];
                bound += fabs((double)tc->beta) * fabs((double)col0[i]);
            }
            bound *= tol;
            err = fabs((double)col[i] - ref);
            if (err == 0.0)
                ratio = 0.0;
            else if (err <= bound)
                ratio = err / bound;
            else if (isfinite(err) && bound > 0.0)
                ratio = err / bound;
            else
                ratio = INFINITY;
            if (ratio > worst)
                worst = ratio;
        }
        for (int i = tc->m; i < o->ldc; i++)
            if (memcmp(&col[i], &col0[i], sizeof(float)) != 0)
                r->padding_changed = 1;
        h = fnv1a64(col, (size_t)tc->m * sizeof(float), h);
    }
    r->max_ratio = worst;
    r->hash = h;
}

/* Device copies of one case's operands. */
struct device_operands {
    float *a, *b, *c, *scalars;
    cudaStream_t stream;
};

/* Allocates device memory and uploads; returns 0 or -1 (reported). */
static int
device_upload(const struct sgemm_case *tc, const struct operands *o,
              struct device_operands *d)
{
    size_t na = (size_t)o->lda * (size_t)(o->cols_a > 0 ? o->cols_a : 1);
    size_t nb = (size_t)o->ldb * (size_t)(o->cols_b > 0 ? o->cols_b : 1);
    size_t nc = (size_t)o->ldc * (size_t)tc->n;
    float scalars[2] = { tc->alpha, tc->beta };

    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&d->a, na * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&d->b, nb * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&d->c, nc * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&d->scalars, 8)))
        return -1;
    if (cuda_failed("cudaMemcpy", cudaMemcpy(d->a, o->a, na * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(d->b, o->b, nb * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(d->c, o->c0, nc * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(d->scalars, scalars,
                                             sizeof(scalars),
                                             cudaMemcpyHostToDevice)))
        return -1;
    if (tc->own_stream &&
        cuda_failed("cudaStreamCreateWithFlags",
                    cudaStreamCreateWithFlags(&d->stream,
                                              cudaStreamNonBlocking)))
        return -1;
    return 0;
}

static void
device_free(struct device_operands *d)
{
    if (d->stream)
        cudaStreamDestroy(d->stream);
    cudaFree(d->a);
    cudaFree(d->b);
    cudaFree(d->c);
    cudaFree(d->scalars);
}

/* Runs the GEMM with the case's stream and pointer mode and downloads C.
 * The handle's stream and pointer mode are restored afterwards. */
static void
device_gemm(cublasHandle_t handle, const struct sgemm_case *tc,
            const struct operands *o, struct device_operands *d,
            struct case_result *r)
{
    size_t nc = (size_t)o->ldc * (size_t)tc->n;
    const float *alpha = &tc->alpha, *beta = &tc->beta;

    if (tc->own_stream &&
        cublas_failed("cublasSetStream_v2", cublasSetStream_v2(handle,
                                                               d->stream))) {
        r->cuda_failed = 1;
        return;
    }
    if (tc->device_scalars) {
        if (cublas_failed("cublasSetPointerMode_v2",
                          cublasSetPointerMode_v2(
                              handle, CUBLAS_POINTER_MODE_DEVICE))) {
            r->cuda_failed = 1;
            return;
        }
        alpha = d->scalars;
        beta = d->scalars + 1;
    }
    r->status = cublasSgemm_v2(handle, tc->transa, tc->transb, tc->m, tc->n,
                               tc->k, alpha, d->a, o->lda, d->b, o->ldb,
                               beta, d->c, o->ldc);
    if (tc->device_scalars &&
        cublas_failed("cublasSetPointerMode_v2",
                      cublasSetPointerMode_v2(handle,
                                              CUBLAS_POINTER_MODE_HOST)))
        r->cuda_failed = 1;
    /* The download is ordered after the GEMM on the same stream. */
    if (cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(o->c, d->c, nc * 4,
                                    cudaMemcpyDeviceToHost, d->stream)) ||
        cuda_failed("cudaStreamSynchronize",
                    cudaStreamSynchronize(d->stream)))
        r->cuda_failed = 1;
    if (tc->own_stream &&
        cublas_failed("cublasSetStream_v2", cublasSetStream_v2(handle, 0)))
        r->cuda_failed = 1;
}

static const char *
op_name(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? "N" : "T";
}

/* Runs and checks one case and prints its line. Returns the worst exit
 * status it implies. */
static int
run_case(cublasHandle_t handle, const struct options *opt, size_t index)
{
    const struct sgemm_case *tc = &cases[index];
    struct operands o;
    struct device_operands d;
    struct case_result r;
    int pass, rc;

    memset(&d, 0, sizeof(d));
    memset(&r, 0, sizeof(r));
    if (operands_make(tc, opt->seed + 0x1000 * index, &o) != 0) {
        fprintf(stderr, "sgemm_check: out of host memory\n");
        return EXIT_CUDA_ERROR;
    }
    if (device_upload(tc, &o, &d) != 0)
        r.cuda_failed = 1;
    else
        device_gemm(handle, tc, &o, &d, &r);
    device_free(&d);

    printf("case %s m=%d n=%d k=%d op=%s%s status=%s(%d)", tc->name, tc->m,
           tc->n, tc->k, op_name(tc->transa), op_name(tc->transb),
           cublas_status_name(r.status), (int)r.status);
    if (r.cuda_failed || r.status != CUBLAS_STATUS_SUCCESS) {
        printf(" err/bound=- hash=- ERROR\n");
        operands_free(&o);
        return EXIT_CUDA_ERROR;
    }
    check_result(tc, &o, tol_factor(&opt->tol, tc->k), &r);
    pass = r.max_ratio <= 1.0 && !r.padding_changed;
    printf(" err/bound=%.3e hash=%016" PRIx64 " %s%s\n", r.max_ratio,
           r.hash, pass ? "ok" : "FAIL",
           r.padding_changed ? " (C padding changed)" : "");
    rc = pass ? EXIT_ALL_PASS : EXIT_CHECK_FAILED;
    operands_free(&o);
    return rc;
}

/* With no handle: one GEMM on the NULL handle, to show its status. */
static void
null_handle_call(void)
{
    float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t s;

    s = cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha,
                       NULL, 8, NULL, 8, &beta, NULL, 8);
    printf("cublasSgemm_v2 handle=NULL status=%s(%d)\n",
           cublas_status_name(s), (int)s);
}

/* ---- command line ------------------------------------------------------ */

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: sgemm_check [--tol TOL] [--seed N] [--help]\n"
        "\n"
        "Runs cublasSgemm_v2 on %zu cases and checks each element of C\n"
        "against a double-precision CPU reference:\n"
        "  |C - Cref| <= tol * (|alpha| |op(A)| |op(B)| + |beta| |C0|)\n"
        "\n"
        "  --tol TOL   a positive number, or\n"
        "              fp16 or tf32: 2^-10 + k 2^-23 (FP16 inputs, FP32 "
        "accumulation)\n"
        "              bf16: 2^-7 + k 2^-23\n"
        "              fp32: k 2^-23 (the default)\n"
        "  --seed N    seed of the pseudo-random inputs (default 1)\n"
        "\n"
        "Prints one line per case: name, cuBLAS status, max error/bound,\n"
        "FNV-1a 64 hash of the result. Exit status: 0 all pass, 1 a check\n"
        "failed, 2 bad usage, 3 a CUDA or cuBLAS call failed.\n",
        N_CASES);
}

static int
parse_seed(const char *s, struct options *opt)
{
    char *end;
    unsigned long long v;

    if (*s == '\0' || *s == '-')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0')
        return -1;
    opt->seed = v;
    return 0;
}

/* Returns -1 to exit 2, 1 to exit 0 (help), 0 to run. */
static int
parse_args(int argc, char **argv, struct options *opt)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        size_t len;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strncmp(arg, "--tol", 5) == 0 && (arg[5] == '=' || !arg[5]))
            len = 5;
        else if (strncmp(arg, "--seed", 6) == 0 &&
                 (arg[6] == '=' || !arg[6]))
            len = 6;
        else {
            fprintf(stderr, "sgemm_check: unknown argument '%s'\n", arg);
            goto bad;
        }
        if (arg[len] == '=')
            value = arg + len + 1;
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            fprintf(stderr, "sgemm_check: %s needs a value\n", arg);
            goto bad;
        }
        if (len == 5 && tol_parse(value, &opt->tol) != 0) {
            fprintf(stderr, "sgemm_check: bad --tol '%s': a positive "
                    "number, fp16, bf16, tf32 or fp32\n", value);
            goto bad;
        }
        if (len == 6 && parse_seed(value, opt) != 0) {
            fprintf(stderr, "sgemm_check: bad --seed '%s': an unsigned "
                    "integer\n", value);
            goto bad;
        }
    }
    return 0;
bad:
    usage(stderr);
    return -1;
}

static const char *
tol_label(const struct options *opt, char *buf, size_t size)
{
    if (opt->tol.kind == TOL_FP16)
        return "fp16";
    if (opt->tol.kind == TOL_FP32)
        return "fp32";
    if (opt->tol.kind != TOL_FIXED)
        return opt->tol.kind == TOL_BF16 ? "bf16" : "tf32";
    snprintf(buf, size, "%.6g", opt->tol.fixed);
    return buf;
}

int
main(int argc, char **argv)
{
    struct options opt = { { TOL_FP32, 0.0 }, 1 };
    cublasHandle_t handle = NULL;
    cublasStatus_t s;
    char tol_buf[32];
    int rc = EXIT_ALL_PASS, args;
    unsigned failed = 0, errors = 0;

    args = parse_args(argc, argv, &opt);
    if (args != 0)
        return args > 0 ? EXIT_ALL_PASS : EXIT_USAGE;

    printf("sgemm_check: %zu cases, tol=%s, seed=%" PRIu64 "\n", N_CASES,
           tol_label(&opt, tol_buf, sizeof(tol_buf)), opt.seed);
    s = cublasCreate_v2(&handle);
    if (cublas_failed("cublasCreate_v2", s)) {
        null_handle_call();
        fflush(stdout);
        return EXIT_CUDA_ERROR;
    }
    for (size_t i = 0; i < N_CASES; i++) {
        int case_rc = run_case(handle, &opt, i);

        failed += case_rc == EXIT_CHECK_FAILED;
        errors += case_rc == EXIT_CUDA_ERROR;
        fflush(stdout);
    }
    cublas_failed("cublasDestroy_v2", cublasDestroy_v2(handle));
    printf("result: %zu cases, %zu passed, %u failed, %u errors\n", N_CASES,
           N_CASES - failed - errors, failed, errors);
    /* Before exit: atexit handlers (a tool's report) run before stdio is
     * flushed, and the result line belongs before them. */
    fflush(stdout);
    if (errors)
        rc = EXIT_CUDA_ERROR;
    else if (failed)
        rc = EXIT_CHECK_FAILED;
    return rc;
}
